// A real MCP server made with the official TypeScript SDK (McpServer over its Streamable HTTP
// transport, stateful sessions), on loopback at port 0, as the tests' origin. It records what
// reached it: every POST body, every tool that ran, and every Authorization it was sent, so a test
// can show a refused call never did. A caller's Authorization comes back (as a server that
// echoes it would send a credential back): in the search tool's description and in its result.
//
//   const server = await startServer({ json: true });   // JSON answers; false: SSE answers
//   server.url, server.ran (tool names, in order), server.bodies (POST bodies),
//   server.authorizations, server.addTool(name)
// `GET /control/add-tool/NAME` adds a tool to every session (each is sent
// notifications/tools/list_changed), for a test that drives the server only over HTTP.
// With `tls: { cert, key }` it serves HTTPS (a gate's inspected origin), on `port` when given.
import http from 'node:http';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export const TOOLS = ['search', 'read_file', 'delete_repo', 'push_files', 'create_issue', 'list_issues'];

// One session's server. `caller`: the Authorization of the request that opened it, if any.
function makeMcpServer(state, caller) {
  const server = new McpServer({ name: 'sandgate-test-origin', version: '1.0.0' });
  const echo = (authorization) => (authorization ? ` for ${authorization}` : '');
  const tool = (name) =>
    server.registerTool(
      name,
      {
        description: `the ${name} tool${name === 'search' ? echo(caller) : ''}`,
        inputSchema: { q: z.string().optional() },
      },
      async ({ q }, extra) => {
        state.ran.push(name);
        const authorization = extra?.requestInfo?.headers?.authorization;
        return { content: [{ type: 'text', text: `${name} ran with ${q ?? ''}${echo(authorization)}` }] };
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
  state.adders.push((name) => tool(name));  // each sends notifications/tools/list_changed
  return server;
}

export async function startServer({ json, tls, port = 0 }) {
  const state = { ran: [], bodies: [], authorizations: [], transports: {}, adders: [] };
  state.addTool = (name) => state.adders.forEach((add) => add(name));
  const handler = async (req, res) => {
    const control = /^\/control\/add-tool\/([a-z_]+)$/.exec(req.url);
    if (control) {
      state.addTool(control[1]);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`added ${control[1]}\n`);
      return;
    }
    let body = '';
    for await (const chunk of req) {
      body += chunk;
    }
    if (req.method === 'POST') {
      state.bodies.push(body);
    }
    if (req.headers.authorization) {
      state.authorizations.push(req.headers.authorization);
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
      await makeMcpServer(state, req.headers.authorization).connect(transport);
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
