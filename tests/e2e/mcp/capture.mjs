// Records real MCP traffic: the official TypeScript SDK's Client talking to its McpServer on
// loopback (sdk_server.mjs), no gate between them, every POST's request and answer as the wire
// carried them. The unit test mcp_captured_traffic_test feeds these to the MCP stage.
//
//   node capture.mjs OUT_FOLDER     writes sdk_traffic_json.json and sdk_traffic_sse.json
//
// Each file: [{ "accept", "request", "status", "content_type", "response" }, ...] in order.
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer } from './sdk_server.mjs';

async function capture(json) {
  const server = await startServer({ json });
  const exchanges = [];
  const recording = async (url, init = {}) => {
    const response = await fetch(url, init);
    if ((init.method ?? 'GET').toUpperCase() !== 'POST') {
      return response;  // the GET stream stays open; only POSTs are recorded
    }
    const text = await response.text();
    exchanges.push({
      accept: new Headers(init.headers).get('accept') ?? '',
      request: typeof init.body === 'string' ? init.body : new TextDecoder().decode(init.body),
      status: response.status,
      content_type: response.headers.get('content-type') ?? '',
      response: text,
    });
    return new Response(response.status === 202 ? null : text, {
      status: response.status,
      headers: response.headers,
    });
  };
  const client = new Client({ name: 'sandgate-capture', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.url, { fetch: recording }));
  await client.listTools();
  await client.callTool({ name: 'search', arguments: { q: 'sandgate' } });
  await client.callTool({ name: 'delete_repo', arguments: { q: 'everything' } });
  await client.listPrompts();
  await client.getPrompt({ name: 'summarise' });
  await client.readResource({ uri: 'repo://docs/readme.md' });
  await client.close();
  await server.close();
  return exchanges;
}

const out = process.argv[2];
fs.mkdirSync(out, { recursive: true });
for (const json of [true, false]) {
  const file = path.join(out, `sdk_traffic_${json ? 'json' : 'sse'}.json`);
  fs.writeFileSync(file, JSON.stringify(await capture(json), null, 1) + '\n');
  console.log(`wrote ${file}`);
}
