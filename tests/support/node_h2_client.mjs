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

import {exchange, sessionThroughProxy} from './node_h2_session.mjs';

const [proxyPort, host, port, caFile, ...requests] = process.argv.slice(2);

async function one(session, request) {
  const [method, path, body] = request.split(':');
  const payload = body?.startsWith('@') ? fs.readFileSync(body.slice(1)) : body;
  const head = {':method': method, ':path': path};
  if (payload !== undefined) {
    head['content-length'] = String(Buffer.byteLength(payload));
  }
  const answer = await exchange(session, head, payload);
  if (answer.error !== undefined) {
    return `${path} error ${answer.error}`;
  }
  return `${path} ${answer.status} ${answer.body.replaceAll('\n', '\\n')}`;
}

const session = await sessionThroughProxy(proxyPort, host, port, caFile);
const lines = await Promise.all(requests.map((request) => one(session, request)));
for (const line of lines) {
  console.log(line);
}
session.close();
