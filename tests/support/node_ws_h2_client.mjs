// A WebSocket-over-HTTP/2 client (RFC 8441) on Node's own http2 module, through an HTTP CONNECT
// proxy: the tunnel, TLS with ALPN h2 over it, then an extended CONNECT stream with
// :protocol websocket carrying RFC 6455 frames, masked as a client's (ws_frames.mjs), beside an
// ordinary GET /plain on the same session.
//
//   node node_ws_h2_client.mjs PROXY_PORT HOST PORT CA_FILE MODE [ARG]
//
// Prints `alpn h2`, `connect-protocol true|false` (the server's SETTINGS_ENABLE_CONNECT_PROTOCOL,
// which may come in a later SETTINGS frame: waited for up to 3 s), then per MODE:
//   echo [SENTINEL]  a WebSocket to /echo (authorization "Bearer SENTINEL" when given): a text,
//                    a binary, a fragmented text with a ping inside, a message the origin
//                    answers in fragments, "send-token", "send-token-split", then close 1000; each answer printed
//   refused          a WebSocket to /denied: its status and proxy-status
//   forced           extended CONNECT whatever the SETTINGS said: the stream's fate
//   flood            a WebSocket to /flood: the messages counted until the gate's close
//   idle             a WebSocket to /echo that sends nothing: how it ends
//   reset            a WebSocket to /echo: one message, then RST_STREAM CANCEL without a close
//   big SIZE         a WebSocket to /echo: one binary message of SIZE bytes there and back,
//                    far over the streams' flow-control windows: whether it came back the same
//   choose           a WebSocket to /choose-deflate: its status
// and for every mode `plain STATUS BODY` for the GET /plain beside it, and `ended ...` when the
// WebSocket's stream is over.
import http2 from 'node:http2';

import {exchange, sessionThroughProxy} from './node_h2_session.mjs';
import {BINARY, CLOSE, CONTINUATION, FrameReader, PING, PONG, TEXT, closeFrame, frame} from './ws_frames.mjs';

const [proxyPort, host, port, caFile, mode, arg] = process.argv.slice(2);

// Whether the server allowed extended CONNECT, in its first SETTINGS or a later one.
function connectProtocol(session) {
  return new Promise((resolve) => {
    const check = (settings) => {
      if (settings.enableConnectProtocol) {
        resolve(true);
      }
    };
    if (session.remoteSettings) check(session.remoteSettings);
    session.on('remoteSettings', check);
    setTimeout(() => resolve(Boolean(session.remoteSettings?.enableConnectProtocol)), 3000).unref();
  });
}

async function plain(session) {
  const answer = await exchange(session, {':method': 'GET', ':path': '/plain'});
  if (answer.error !== undefined) {
    return `plain error ${answer.error}`;
  }
  return `plain ${answer.status} ${answer.body}`;
}

// A WebSocket stream: its response, then its frames as messages (fragments counted), pongs and
// the close, each awaited in turn with next().
class WebSocket {
  constructor(session, where, headers = {}) {
    this.stream = session.request({
      ':method': 'CONNECT',
      ':protocol': 'websocket',
      ':scheme': 'https',
      ':path': where,
      ':authority': `${host}:${port}`,
      'sec-websocket-version': '13',
      ...headers,
    }, {endStream: false});
    this.events = [];
    this.waiting = null;
    this.reader = new FrameReader();
    this.parts = [];
    this.response = new Promise((resolve) => {
      this.stream.on('response', (h) => resolve(h));
      this.stream.on('close', () => resolve({':status': 0}));
    });
    this.stream.on('data', (piece) => this.take(piece));
    this.ended = new Promise((resolve) => {
      this.stream.on('close', () => resolve(`ended rst ${this.stream.rstCode}`));
    });
    this.stream.on('error', () => {});
    this.stream.on('close', () => {
      this.gone = true;
      this.emit({kind: 'gone'});
    });
  }
  take(piece) {
    this.reader.push(piece);
    for (let f = this.reader.next(); f !== null; f = this.reader.next()) {
      if (f.masked) {
        this.emit({kind: 'error', text: 'a server frame was masked'});
      } else if (f.opcode === PONG || f.opcode === PING) {
        this.emit({kind: f.opcode === PONG ? 'pong' : 'ping', text: f.payload.toString()});
      } else if (f.opcode === CLOSE) {
        const code = f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 0;
        this.emit({kind: 'close', text: `${code} ${f.payload.subarray(2).toString()}`});
      } else {
        if (f.opcode !== CONTINUATION) {
          this.opcode = f.opcode;
          this.parts = [];
        }
        this.parts.push(f.payload);
        if (f.fin) {
          const whole = Buffer.concat(this.parts);
          const text = this.opcode === TEXT ? `text ${whole}` : `binary ${whole.toString('hex', 0, 64)}`;
          this.emit({kind: 'message', text, fragments: this.parts.length, payload: whole});
        }
      }
    }
  }
  emit(event) {
    this.events.push(event);
    if (this.waiting) {
      const wake = this.waiting;
      this.waiting = null;
      wake();
    }
  }
  // The next event; 'gone' again and again once the stream is over.
  async next() {
    while (this.events.length === 0) {
      if (this.gone) {
        return {kind: 'gone'};
      }
      await new Promise((resolve) => { this.waiting = resolve; });
    }
    return this.events.shift();
  }
  send(opcode, payload, fin = true) {
    this.stream.write(frame(opcode, payload, {fin, masked: true}));
  }
  close(code, reason) {
    this.stream.write(closeFrame(code, reason, {masked: true}));
  }
}

function show(event) {
  if (event.kind === 'message') {
    return `message ${event.text}` + (event.fragments > 1 ? ` fragments ${event.fragments}` : '');
  }
  return `${event.kind} ${event.text ?? ''}`.trimEnd();
}

async function echo(session) {
  const headers = {
    'sec-websocket-protocol': 'chat, superchat',
    'sec-websocket-extensions': 'permessage-deflate; client_max_window_bits',
  };
  if (arg) headers.authorization = `Bearer ${arg}`;
  const ws = new WebSocket(session, '/echo', headers);
  const head = await ws.response;
  console.log(`status ${head[':status']} protocol ${head['sec-websocket-protocol'] ?? 'none'} ` +
              `extensions ${head['sec-websocket-extensions'] ?? 'none'}`);
  if (head[':status'] !== 200) return ws;
  ws.send(TEXT, 'hello');
  console.log(show(await ws.next()));
  ws.send(BINARY, Buffer.from([0, 1, 2, 255]));
  console.log(show(await ws.next()));
  ws.send(TEXT, 'frag', false);
  ws.send(CONTINUATION, 'men', false);
  ws.send(PING, 'p1');
  ws.send(CONTINUATION, 'ted', true);
  console.log(show(await ws.next()));
  console.log(show(await ws.next()));
  ws.send(TEXT, 'fragments:one|two|three');
  console.log(show(await ws.next()));
  ws.send(TEXT, 'send-token');
  console.log(show(await ws.next()));
  ws.send(TEXT, 'send-token-split');
  console.log(show(await ws.next()));
  ws.close(1000, 'done');
  console.log(show(await ws.next()));
  ws.stream.end();
  return ws;
}

async function flood(session) {
  const ws = new WebSocket(session, '/flood');
  const head = await ws.response;
  console.log(`status ${head[':status']}`);
  if (head[':status'] !== 200) return ws;
  let messages = 0;
  for (;;) {
    const event = await ws.next();
    if (event.kind === 'message') {
      ++messages;
      continue;
    }
    console.log(`messages ${messages}`);
    console.log(show(event));
    if (event.kind === 'close') {
      ws.close(1000, '');
      ws.stream.end();
    }
    return ws;
  }
}

async function idle(session) {
  const ws = new WebSocket(session, '/echo');
  const head = await ws.response;
  console.log(`status ${head[':status']}`);
  if (head[':status'] !== 200) return ws;
  const event = await ws.next();
  console.log(show(event));
  if (event.kind === 'close') {
    ws.close(1001, '');
    ws.stream.end();
  }
  return ws;
}

async function big(session) {
  const ws = new WebSocket(session, '/echo');
  const head = await ws.response;
  console.log(`status ${head[':status']}`);
  if (head[':status'] !== 200) return ws;
  const sent = Buffer.alloc(Number(arg));
  for (let i = 0; i < sent.length; ++i) {
    sent[i] = (i * 7 + (i >> 10)) & 0xff;
  }
  ws.send(BINARY, sent);
  const event = await ws.next();
  const same = event.kind === 'message' && event.payload.equals(sent);
  console.log(`big ${event.kind} ${event.payload?.length ?? 0} ${same ? 'same' : 'different'}`);
  ws.close(1000, '');
  console.log(show(await ws.next()));
  ws.stream.end();
  return ws;
}

async function reset(session) {
  const ws = new WebSocket(session, '/echo');
  const head = await ws.response;
  console.log(`status ${head[':status']}`);
  if (head[':status'] !== 200) return ws;
  ws.send(TEXT, 'hello');
  console.log(show(await ws.next()));
  ws.stream.close(http2.constants.NGHTTP2_CANCEL);
  return ws;
}

async function answerOnly(session, where) {
  const ws = new WebSocket(session, where);
  const head = await ws.response;
  console.log(`status ${head[':status']} proxy-status ${head['proxy-status'] ?? 'none'}`);
  return ws;
}

const session = await sessionThroughProxy(proxyPort, host, port, caFile);
const allowed = await connectProtocol(session);
console.log(`connect-protocol ${allowed}`);

const beside = plain(session);
const run = {
  echo: () => echo(session),
  flood: () => flood(session),
  idle: () => idle(session),
  big: () => big(session),
  reset: () => reset(session),
  refused: () => answerOnly(session, '/denied'),
  forced: () => answerOnly(session, '/echo'),
  choose: () => answerOnly(session, '/choose-deflate'),
}[mode];
const ws = await run();
console.log(await beside);
console.log(await Promise.race([ws.ended, new Promise((r) => setTimeout(() => r('not ended'), 5000).unref())]));
session.close();
