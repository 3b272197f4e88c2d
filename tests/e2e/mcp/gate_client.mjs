// The SDK's real MCP Client through a real sandgate gate, for tests/e2e/mcp_gate_e2e_test.cpp:
//   node gate_client.mjs GATE_PORT URL GATE_CA MODE [TOOL]
// The client's fetch goes through the gate as an HTTPS proxy client's would (a CONNECT tunnel,
// then TLS to the URL's host, trusting the gate's CA: the gate inspects it). MODE:
//   session  connects, lists the tools, calls `search` and `delete_repo`, then posts a batch of
//            search, delete_repo and read_file in the client's session; prints one JSON object
//   call     connects and calls TOOL; prints its result
//   large    posts a body over 1 MiB; prints the status and body
import http from 'node:http';
import tls from 'node:tls';
import fs from 'node:fs';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [gatePort, target, caFile, mode, tool] = process.argv.slice(2);
const ca = fs.readFileSync(caFile);

function tunnel(host, port) {
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: '127.0.0.1',
      port: Number(gatePort),
      method: 'CONNECT',
      path: `${host}:${port}`,
    });
    request.on('connect', (response, socket) =>
      response.statusCode === 200
        ? resolve(socket)
        : reject(new Error(`the gate answered CONNECT with ${response.statusCode}`)),
    );
    request.on('error', reject);
    request.end();
  });
}

// A fetch through the gate: one tunnel per request.
async function gateFetch(input, init = {}) {
  const url = new URL(input instanceof Request ? input.url : input);
  const socket = await tunnel(url.hostname, url.port || 443);
  const secure = tls.connect({ socket, servername: url.hostname, ca, ALPNProtocols: ['http/1.1'] });
  await once(secure, 'secureConnect');
  const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
  return new Promise((resolve, reject) => {
    const request = http.request({
      method: init.method ?? 'GET',
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers,
      createConnection: () => secure,
    });
    request.on('response', (response) => {
      const answer = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        answer.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      const noBody = [204, 205, 304].includes(response.statusCode);
      resolve(
        new Response(noBody ? null : Readable.toWeb(response), {
          status: response.statusCode,
          headers: answer,
        }),
      );
    });
    request.on('error', reject);
    init.signal?.addEventListener('abort', () => request.destroy(new Error('aborted')));
    if (init.body) {
      request.write(init.body);
    }
    request.end();
  });
}

async function connect() {
  const client = new Client({ name: 'sandgate-gate-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(target), { fetch: gateFetch }));
  return client;
}

const text = (result) => result.content?.map((c) => c.text).join('') ?? '';

// The messages of an answer, JSON or an event stream, in id order.
async function messagesOf(response) {
  const body = await response.text();
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return body
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line.length > 6)
      .map((line) => JSON.parse(line.slice(6)))
      .sort((a, b) => a.id - b.id);
  }
  return JSON.parse(body);
}

if (mode === 'session') {
  const client = await connect();
  const out = {};
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.search = text(await client.callTool({ name: 'search', arguments: { q: 'secret-argument' } }));
  const refused = await client.callTool({ name: 'delete_repo', arguments: { q: 'secret-argument' } });
  out.refused = { isError: refused.isError === true, text: text(refused) };
  const call = (id, name) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: { q: `${id}` } },
  });
  const response = await gateFetch(target, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': client.transport.sessionId,
      'mcp-protocol-version': client.transport.protocolVersion ?? '2025-06-18',
    },
    body: JSON.stringify([call(11, 'search'), call(12, 'delete_repo'), call(13, 'read_file')]),
  });
  out.batch = {
    status: response.status,
    messages: (await messagesOf(response)).map((m) => ({
      id: m.id,
      isError: m.result?.isError === true,
      text: text(m.result ?? {}),
    })),
  };
  await client.close();
  console.log(JSON.stringify(out));
} else if (mode === 'call') {
  const client = await connect();
  const result = await client.callTool({ name: tool, arguments: { q: 'x' } });
  console.log(JSON.stringify({ isError: result.isError === true, text: text(result) }));
  await client.close();
} else if (mode === 'large') {
  const padding = 'x'.repeat((1 << 20) + 10);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'search', arguments: { q: padding } },
  });
  const response = await gateFetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body,
  });
  console.log(JSON.stringify({ status: response.status, body: await response.text() }));
}
process.exit(0);
