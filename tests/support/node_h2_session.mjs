// What the Node HTTP/2 test clients share (node_h2_client.mjs, node_ws_h2_client.mjs): an
// HTTP/2 session through an HTTP CONNECT proxy (the tunnel asked with Node's http module, TLS
// with ALPN h2 and http/1.1 over it, as browsers and SDKs offer), and one request's answer.
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import tls from 'node:tls';

// The CONNECT tunnel to HOST:PORT through the proxy on loopback's PROXY_PORT: its socket, or a
// rejection naming the proxy's status.
function tunnel(proxyPort, host, port) {
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

// An HTTP/2 session to HOST:PORT through the proxy, the server's certificate checked against
// CA_FILE. Prints the protocol TLS chose (`alpn h2`) and, later, `session error CODE` if the
// session fails.
export async function sessionThroughProxy(proxyPort, host, port, caFile) {
  const socket = await tunnel(proxyPort, host, port);
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
  return session;
}

// One request on SESSION with HEAD (and PAYLOAD as its body when given): resolves to
// {status, body} (the body as text), or {error: CODE} when its stream failed.
export function exchange(session, head, payload) {
  return new Promise((resolve) => {
    const stream = session.request(head);
    let status = 0;
    let body = '';
    stream.on('response', (headers) => { status = headers[':status']; });
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => { body += chunk; });
    stream.on('end', () => resolve({status, body}));
    stream.on('error', (error) => resolve({error: error.code}));
    stream.end(payload);
  });
}
