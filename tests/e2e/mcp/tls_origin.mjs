// A TLS origin on loopback for tests/e2e/mcp_gate_e2e_test.cpp, behind a real sandgate gate:
//   node tls_origin.mjs PORT CERT KEY json|sse RECORD_FOLDER
//       the SDK's McpServer (sdk_server.mjs) over HTTPS, JSON or SSE answers; every tool that
//       ran is appended to RECORD_FOLDER/ran.txt, every POST body to bodies.txt and every
//       Authorization to authorizations.txt, so a test can show a refused call never reached it
//       and what credential did;
//   node tls_origin.mjs PORT CERT KEY plain RECORD_FOLDER
//       the same McpServer (JSON answers) over plain HTTP, for a client of the gate's http_proxy;
//   node tls_origin.mjs PORT CERT KEY both RECORD_FOLDER
//       an origin that speaks h2 and HTTP/1.1 (by ALPN) and answers every request with a tool
//       result naming the HTTP version it came in, for the tests that a host with MCP lines is
//       offered h2 and judged there; a tools/list is answered with over 16 MiB; /slow answers
//       after 3 s (a test's reload happens meanwhile).
import fs from 'node:fs';
import http2 from 'node:http2';
import { startServer } from './sdk_server.mjs';

const [port, certFile, keyFile, mode, folder] = process.argv.slice(2);
const tls = { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) };

if (mode === 'both') {
  const server = http2.createSecureServer({ ...tls, allowHTTP1: true }, (req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', async () => {
      if (req.url === '/slow') {
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
      fs.appendFileSync(`${folder}/bodies.txt`, `${body}\n`);
      // A tools/list answer over the 16 MiB the gate holds to filter one.
      const answer = body.includes('"tools/list"')
        ? { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'search', description: 'x'.repeat(17 << 20) }] } }
        : {
            jsonrpc: '2.0',
            id: 1,
            result: { content: [{ type: 'text', text: `origin ran it over HTTP/${req.httpVersion}` }] },
          };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  server.listen(Number(port), '127.0.0.1');
} else {
  const state = await startServer({
    json: mode !== 'sse',
    tls: mode === 'plain' ? undefined : tls,
    port: Number(port),
  });
  const record = (list, file) => {
    list.push = (item) => {
      fs.appendFileSync(`${folder}/${file}`, `${item}\n`);
      return Array.prototype.push.call(list, item);
    };
  };
  record(state.ran, 'ran.txt');
  record(state.bodies, 'bodies.txt');
  record(state.authorizations, 'authorizations.txt');
}
