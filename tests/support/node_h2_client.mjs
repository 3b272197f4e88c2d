// A client on Node's own http2 module, through an HTTP CONNECT proxy: the tunnel asked with
// Node's http module, TLS with ALPN h2 (and http/1.1, as browsers and SDKs offer) over it, then
// every request of the command line as a stream of one HTTP/2 session, all at once.
//
//   node node_h2_client.mjs PROXY_PORT HOST PORT CA_FILE METHOD:PATH[:BODY] ...
//
// A BODY is sent with its content-length; @FILE sends FILE's bytes (as curl's --data-binary).
// Prints the protocol TLS chose (`alpn h2`), then for each request `PATH STATUS BODY` on one
// line (the body with its line breaks as \n), or `PATH error CODE` when its stream failed.
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import tls from 'node:tls';

const [proxyPort, host, port, caFile, ...requests] = process.argv.slice(2);

function tunnel() {
  return new Promise((resolve, reject) => {
    const ask = http.request({
      host: '127.0.0.1',
      port: Number(proxyPort),
      method: 'CONNECT',
      path: `${host}:${port}`,
      headers: {host: `${host}:${port}`},
    });
    ask.on('connect', (response, socket) => {
      if (response.statusCode !== 200) {
        reject(new Error(`CONNECT answered ${response.statusCode}`));
        return;
      }
      resolve(socket);
    });
    ask.on('error', reject);
    ask.end();
  });
}

function one(session, request) {
  const [method, path, body] = request.split(':');
  return new Promise((resolve) => {
    const payload = body?.startsWith('@') ? fs.readFileSync(body.slice(1)) : body;
    const head = {':method': method, ':path': path};
    if (payload !== undefined) {
      head['content-length'] = String(Buffer.byteLength(payload));
    }
    const stream = session.request(head);
    let status = 0;
    let text = '';
    stream.on('response', (headers) => { status = headers[':status']; });
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => { text += chunk; });
    stream.on('end', () => resolve(`${path} ${status} ${text.replaceAll('\n', '\\n')}`));
    stream.on('error', (error) => resolve(`${path} error ${error.code}`));
    stream.end(payload);
  });
}

const socket = await tunnel();
const secure = tls.connect({
  socket,
  servername: host,
  ca: fs.readFileSync(caFile),
  ALPNProtocols: ['h2', 'http/1.1'],
});
await new Promise((resolve, reject) => {
  secure.once('secureConnect', resolve);
  secure.once('error', reject);
});
console.log(`alpn ${secure.alpnProtocol}`);
const session = http2.connect(`https://${host}:${port}`, {createConnection: () => secure});
session.on('error', (error) => console.log(`session error ${error.code}`));
const lines = await Promise.all(requests.map((request) => one(session, request)));
for (const line of lines) {
  console.log(line);
}
session.close();
