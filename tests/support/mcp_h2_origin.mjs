// An MCP server's HTTP face that speaks HTTP/2 only (TLS, ALPN h2, no HTTP/1.1 to fall back to),
// for tests/e2e/mcp_gate_e2e_test.cpp's tests of MCP over HTTP/2 through a real gate:
//
//   node mcp_h2_origin.mjs PORT CERT KEY RECORD_FOLDER
//
// POST /mcp answers in JSON, POST /sse in server-sent events (one event per message): tools/list
// lists search, read_file and delete_repo; tools/call answers a tool result naming the tool and
// the HTTP version it came in; both name the Authorization the request came with (as a server
// that echoes a credential would); a batch gets its answers in order; notifications get a 202. Every
// POST body is appended to RECORD_FOLDER/bodies.txt (and every Authorization to
// authorizations.txt), so a test can show a refused call never reached it, and what credential
// did. Written on Node's own http2 module: nothing of the gate's in it.
import fs from 'node:fs';
import http2 from 'node:http2';

const [port, certFile, keyFile, folder] = process.argv.slice(2);

function answer(message, version, authorization) {
  if (message.id === undefined) {
    return undefined;  // a notification
  }
  const echo = authorization ? ` for ${authorization}` : '';
  if (message.method === 'tools/list') {
    const tools = ['search', 'read_file', 'delete_repo'].map((name) => ({
      name,
      description: `the ${name} tool${echo}`,
      inputSchema: { type: 'object' },
    }));
    return { jsonrpc: '2.0', id: message.id, result: { tools } };
  }
  if (message.method === 'tools/call') {
    const text = `${message.params?.name} ran over HTTP/${version}${echo}`;
    return { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text }] } };
  }
  return { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'method not found' } };
}

const server = http2.createSecureServer(
  { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) },
  (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      fs.appendFileSync(`${folder}/bodies.txt`, `${body}\n`);
      if (req.headers.authorization) {
        fs.appendFileSync(`${folder}/authorizations.txt`, `${req.headers.authorization}\n`);
      }
      let parsed;
      try {
        parsed = JSON.parse(body);
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('not JSON\n');
        return;
      }
      const batch = Array.isArray(parsed);
      const answers = (batch ? parsed : [parsed])
        .map((message) => answer(message, req.httpVersion, req.headers.authorization))
        .filter((one) => one !== undefined);
      if (answers.length === 0) {
        res.writeHead(202).end();
      } else if (req.url === '/sse') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const one of answers) {
          res.write(`event: message\ndata: ${JSON.stringify(one)}\n\n`);
        }
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(batch ? answers : answers[0]));
      }
    });
  },
);
server.listen(Number(port), '127.0.0.1');
