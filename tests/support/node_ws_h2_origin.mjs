// An HTTP/2 origin over TLS that takes WebSockets over HTTP/2 (RFC 8441) when told to: Node's
// http2 module with `settings: {enableConnectProtocol: true}`, answering extended CONNECT
// streams with :protocol websocket and speaking RFC 6455 frames on them (ws_frames.mjs).
//
//   node node_ws_h2_origin.mjs PORT CERT KEY SECRET on|off
//
// on: SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (off: never sent; nghttp2 under Node then refuses a
// :protocol). Each WebSocket's head is appended to PORT.heads beside the certificate
// ("PATH authorization=... extensions=... protocol=..."), and how it ended to PORT.ends ("PATH
// close CODE" for a close frame, then "PATH end" for END_STREAM or "PATH reset CODE" for
// RST_STREAM). A client frame without a mask is answered with close 1002 (RFC 6455 5.1).
//
// /echo   every message back whole with its opcode; a ping answered with its pong; a close with
//         the same close, then the stream's end. "fragments:A|B|C" comes back as fragments A,
//         B, C; "send-token" comes back as "token SECRET"; "send-token-split" too, in two
//         fragments cut inside SECRET, their bytes in three DATA frames.
// /flood  twenty binary messages of 1,000 bytes, then waits for the close.
// /choose-deflate  answers 200 choosing permessage-deflate (which the gate never offers).
// Any other request: 200 "plain ok" (the connection's ordinary streams).
import fs from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';

import {BINARY, CLOSE, CONTINUATION, FrameReader, PING, PONG, TEXT, closeFrame, frame} from './ws_frames.mjs';

const [port, cert, key, secret, mode] = process.argv.slice(2);
const folder = path.dirname(cert);

function record(line) {
  fs.appendFileSync(path.join(folder, `${port}.heads`), line + '\n');
}

function websocket(stream, headers) {
  const where = headers[':path'];
  record(`${where} authorization=${headers['authorization'] ?? 'none'} ` +
         `extensions=${headers['sec-websocket-extensions'] ?? 'none'} ` +
         `protocol=${headers['sec-websocket-protocol'] ?? 'none'}`);
  const answer = {':status': 200};
  const offered = headers['sec-websocket-protocol'];
  if (offered) {
    answer['sec-websocket-protocol'] = offered.split(',')[0].trim();
  }
  if (where === '/choose-deflate') {
    answer['sec-websocket-extensions'] = 'permessage-deflate';
  }
  stream.respond(answer);
  if (where === '/flood') {
    for (let i = 0; i < 20; ++i) {
      stream.write(frame(BINARY, Buffer.alloc(1000, 0x78)));
    }
  }
  const reader = new FrameReader();
  let message = [];
  let opcode = TEXT;
  stream.on('data', (piece) => {
    reader.push(piece);
    for (let f = reader.next(); f !== null; f = reader.next()) {
      if (!f.masked) {
        stream.end(closeFrame(1002, 'unmasked'));
        return;
      }
      if (f.opcode === PING) {
        stream.write(frame(PONG, f.payload));
      } else if (f.opcode === CLOSE) {
        const code = f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 0;
        fs.appendFileSync(path.join(folder, `${port}.ends`), `${where} close ${code}\n`);
        stream.end(frame(CLOSE, f.payload));  // the same close back, then END_STREAM
      } else if (f.opcode === TEXT || f.opcode === BINARY || f.opcode === CONTINUATION) {
        if (f.opcode !== CONTINUATION) {
          opcode = f.opcode;
          message = [];
        }
        message.push(f.payload);
        if (f.fin) {
          reply(stream, opcode, Buffer.concat(message));
        }
      }
    }
  });
  stream.on('end', () => fs.appendFileSync(path.join(folder, `${port}.ends`), `${where} end\n`));
  stream.on('aborted', () => {
    fs.appendFileSync(path.join(folder, `${port}.ends`), `${where} reset ${stream.rstCode}\n`);
  });
  stream.on('error', () => {});
}

function reply(stream, opcode, payload) {
  const text = payload.toString();
  if (opcode === TEXT && text.startsWith('fragments:')) {
    const parts = text.slice('fragments:'.length).split('|');
    parts.forEach((part, i) => {
      stream.write(frame(i === 0 ? TEXT : CONTINUATION, part, {fin: i === parts.length - 1}));
    });
  } else if (opcode === TEXT && text === 'send-token') {
    stream.write(frame(TEXT, `token ${secret}`));
  } else if (opcode === TEXT && text === 'send-token-split') {
    // The value split across two fragments, and their bytes across three DATA frames: one cut
    // inside the first fragment's value, one inside the second fragment's header.
    const first = frame(TEXT, `token ${secret.slice(0, 4)}`, {fin: false});
    const second = frame(CONTINUATION, secret.slice(4));
    const bytes = Buffer.concat([first, second]);
    const cuts = [first.length - 2, first.length + 1];
    stream.write(bytes.subarray(0, cuts[0]));
    setTimeout(() => stream.write(bytes.subarray(cuts[0], cuts[1])), 30);
    setTimeout(() => stream.write(bytes.subarray(cuts[1])), 60);
  } else {
    stream.write(frame(opcode, payload));
  }
}

const server = http2.createSecureServer({
  cert: fs.readFileSync(cert),
  key: fs.readFileSync(key),
  settings: {enableConnectProtocol: mode === 'on'},
});
server.on('stream', (stream, headers) => {
  if (headers[':method'] === 'CONNECT' && headers[':protocol'] === 'websocket') {
    websocket(stream, headers);
    return;
  }
  stream.on('error', () => {});
  stream.respond({':status': 200, 'content-type': 'text/plain'});
  stream.end('plain ok');
});
server.on('sessionError', () => {});
server.listen(Number(port), '127.0.0.1');
