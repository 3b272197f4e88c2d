// The SDK's real MCP Client through a real sandgate gate, for tests/e2e/mcp_gate_e2e_test.cpp:
//   node gate_client.mjs GATE_PORT URL GATE_CA MODE [TOOL]
// The client's fetch goes through the gate as an HTTPS proxy client's would (a CONNECT tunnel,
// then TLS to the URL's host, trusting the gate's CA: the gate inspects it). With GATE_PORT and
// GATE_CA `-` it is the runtime's own fetch, as a command confined by `sandgate run` has it (its
// connections captured, the gate's CA trusted through NODE_EXTRA_CA_CERTS). With MCP_TOKEN set,
// every request carries `Authorization: Bearer MCP_TOKEN`. MODE:
//   session   connects, lists the tools, calls `search` and `delete_repo`, then posts a batch of
//             search, delete_repo and read_file in the client's session; prints one JSON object
//   call      connects and calls TOOL; prints its result
//   accepted  connects, then posts a batch of a delete_repo call and a notification, and a
//             notification alone (answered 202 by the server); prints what came back
//   changed   connects, lists the tools, has the server add read_notes and delete_branch (a GET of
//             its /control/add-tool/NAME through the gate), and prints the list the client
//             fetches again on notifications/tools/list_changed (on the server's GET stream)
//   large     posts a body over 1 MiB; prints the status and body
import http from 'node:http';
import tls from 'node:tls';
import fs from 'node:fs';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [gatePort, target, caFile, mode, tool] = process.argv.slice(2);
const direct = gatePort === '-';
const ca = direct ? undefined : fs.readFileSync(caFile);
const token = process.env.MCP_TOKEN;
const authorization = token ? { authorization: `Bearer ${token}` } : {};

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

// A fetch through the gate: one tunnel per request (or the runtime's own, inside `run`).
async function gateFetch(input, init = {}) {
  if (direct) {
    return fetch(input, init);
  }
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

async function connect(options = {}) {
  const client = new Client({ name: 'sandgate-gate-e2e', version: '1.0.0' }, options);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(target), {
      fetch: gateFetch,
      requestInit: { headers: authorization },
    }),
  );
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

// The headers of a POST the test makes in the client's session.
const sessionHeaders = (client) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-session-id': client.transport.sessionId,
  'mcp-protocol-version': client.transport.protocolVersion ?? '2025-06-18',
  ...authorization,
});

if (mode === 'session') {
  const client = await connect();
  const out = {};
  const listed = (await client.listTools()).tools;
  out.tools = listed.map((t) => t.name);
  out.described = listed.find((t) => t.name === 'search')?.description;
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
    headers: sessionHeaders(client),
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
} else if (mode === 'accepted') {
  const client = await connect();
  const note = { jsonrpc: '2.0', method: 'notifications/roots/list_changed' };
  const refused = { jsonrpc: '2.0', id: 21, method: 'tools/call', params: { name: 'delete_repo' } };
  const post = (body) =>
    gateFetch(target, { method: 'POST', headers: sessionHeaders(client), body: JSON.stringify(body) });
  const mixed = await post([refused, note]);
  const alone = await post(note);
  const out = {
    mixed: {
      status: mixed.status,
      type: mixed.headers.get('content-type'),
      messages: (await messagesOf(mixed)).map((m) => ({
        id: m.id,
        isError: m.result?.isError === true,
        text: text(m.result ?? {}),
      })),
    },
    alone: { status: alone.status, body: await alone.text() },
  };
  await client.close();
  console.log(JSON.stringify(out));
} else if (mode === 'changed') {
  let changed;
  const fetchedAgain = new Promise((resolve) => {
    changed = resolve;
  });
  const client = await connect({
    listChanged: { tools: { debounceMs: 0, onChanged: (error, tools) => changed({ error, tools }) } },
  });
  const before = (await client.listTools()).tools.map((t) => t.name);
  // The client's GET stream, where the notification comes, opens after initialization.
  await new Promise((resolve) => setTimeout(resolve, 500));
  for (const name of ['read_notes', 'delete_branch']) {
    const added = await gateFetch(new URL(`/control/add-tool/${name}`, target), { method: 'GET' });
    await added.text();
  }
  const { error, tools } = await Promise.race([
    fetchedAgain,
    new Promise((resolve) => setTimeout(() => resolve({ error: 'no list_changed', tools: [] }), 15000)),
  ]);
  console.log(JSON.stringify({ before, error: error ? String(error) : null, after: tools.map((t) => t.name) }));
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
