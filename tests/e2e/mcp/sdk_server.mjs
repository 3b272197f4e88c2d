// A real MCP server made with the official TypeScript SDK (McpServer over its Streamable HTTP
// transport, stateful sessions), on loopback at port 0, as the tests' origin. It records what
// reached it: every POST body, and every tool that ran, so a test can show a refused call never
// did.
//
//   const server = await startServer({ json: true });   // JSON answers; false: SSE answers
//   server.url, server.ran (tool names, in order), server.bodies (POST bodies), server.addTool(name)
// With `tls: { cert, key }` it serves HTTPS (a gate's inspected origin), on `port` when given.
import http from 'node:http';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export const TOOLS = ['search', 'read_file', 'delete_repo', 'push_files', 'create_issue'];

function makeMcpServer(state) {
  const server = new McpServer({ name: 'sandgate-test-origin', version: '1.0.0' });
  const tool = (name) =>
    server.registerTool(
      name,
      { description: `the ${name} tool`, inputSchema: { q: z.string().optional() } },
      async ({ q }) => {
        state.ran.push(name);
        return { content: [{ type: 'text', text: `${name} ran with ${q ?? ''}` }] };
      },
    );
  for (const name of TOOLS) {
    tool(name);
  }
  server.registerPrompt('summarise', { description: 'a prompt' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'summarise' } }],
  }));
  server.registerResource('readme', 'repo://docs/readme.md', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: 'read me' }],
  }));
  state.addTool = (name) => tool(name);  // sends notifications/tools/list_changed
  return server;
}

export async function startServer({ json, tls, port = 0 }) {
  const state = { ran: [], bodies: [], transports: {} };
  const handler = async (req, res) => {
    let body = '';
    for await (const chunk of req) {
      body += chunk;
    }
    if (req.method === 'POST') {
      state.bodies.push(body);
    }
    const sessionId = req.headers['mcp-session-id'];
    let transport = sessionId ? state.transports[sessionId] : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: json,
        onsessioninitialized: (id) => {
          state.transports[id] = transport;
        },
      });
      await makeMcpServer(state).connect(transport);
    }
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  };
  const httpServer = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise((resolve) => httpServer.listen(port, '127.0.0.1', resolve));
  const scheme = tls ? 'https' : 'http';
  state.url = new URL(`${scheme}://127.0.0.1:${httpServer.address().port}/mcp`);
  state.close = async () => {
    for (const transport of Object.values(state.transports)) {
      await transport.close();
    }
    httpServer.closeAllConnections?.();
    await new Promise((resolve) => httpServer.close(resolve));
  };
  return state;
}
