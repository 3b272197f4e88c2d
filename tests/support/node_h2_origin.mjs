// An HTTP/2-only TLS origin on Node's own http2 module, for the tests that need an HTTP/2 origin
// to control a response's framing and pace (nghttpd cannot) or to check a SigV4 signature.
//
//   node node_h2_origin.mjs PORT CERT KEY AWS_SECRET_KEY
//
// By path (every request's body is read whole before it is answered):
//   /upload           200, "received N bytes"
//   /bytes?n=N        200 with content-length N, N bytes of 'b'
//   /stream?n=N       200 without content-length, N bytes of 's' written 16 KiB at a time as the
//                     stream's flow control allows
//   /sse?events=N&gap=MS[&closing=1]
//                     200 text/event-stream: N events MS milliseconds apart, each in a DATA frame
//                     of its own, with the time it was sent (sent_us, epoch microseconds), the
//                     request's authorization echoed in the last; closing=1 sends one more
//                     ("done") MS milliseconds after it (as echo_https_server.py's /sse)
//   /split?gap=MS     200, "the origin says AUTHORIZATION back" in two DATA frames MS
//                     milliseconds apart, cut in the middle of the authorization's value
//   /trailers         200 "hello", then trailers: x-echo with the request's authorization
//   /aws/...          the request's SigV4 signature checked with AWS_SECRET_KEY by
//                     sigv4_verifier.py (the :authority as its host field): a good one gets STS's
//                     GetCallerIdentity answer, a bad one 403 SignatureDoesNotMatch; each check
//                     appended to PORT.aws-log beside CERT as "ok|bad METHOD PATH"
// Every request is appended to PORT.requests beside CERT as "METHOD PATH BODY_BYTES" when its
// body ends, with the bytes of it that arrived (what reached the origin, for the tests to compare
// with what the client sent).
// Every HTTP/2 connection (session) appends a line "session" to PORT.sessions beside CERT, for
// the tests that count the gate's connections to it. It takes HTTP/2 only (no allowHTTP1): a
// client that offers only http/1.1 by ALPN fails its TLS handshake.
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const [port, cert, key, awsKey] = process.argv.slice(2);
const folder = path.dirname(cert);
const requestLog = path.join(folder, `${port}.requests`);
const awsLog = path.join(folder, `${port}.aws-log`);
const verifier = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sigv4_verifier.py');

function respondText(stream, status, text, more = {}) {
  stream.respond({':status': status, 'content-type': 'text/plain', ...more});
  stream.end(text);
}

function sendBytes(stream, n) {
  stream.respond({':status': 200, 'content-length': String(n)});
  stream.end(Buffer.alloc(n, 'b'));
}

// Writes n bytes 16 KiB at a time, each write after the stream has taken the last.
function streamBytes(stream, n) {
  stream.respond({':status': 200, 'content-type': 'application/octet-stream'});
  const piece = Buffer.alloc(16 * 1024, 's');
  let left = n;
  const next = () => {
    while (left > 0 && !stream.destroyed) {
      const size = Math.min(left, piece.length);
      left -= size;
      if (!stream.write(piece.subarray(0, size))) {
        stream.once('drain', next);
        return;
      }
    }
    if (!stream.destroyed) {
      stream.end();
    }
  };
  next();
}

function serverSentEvents(stream, headers, query) {
  const events = Number(query.get('events') ?? 4);
  const gap = Number(query.get('gap') ?? 300);
  stream.respond({':status': 200, 'content-type': 'text/event-stream'});
  const event = (i) => {
    const sent = Math.floor((performance.timeOrigin + performance.now()) * 1000);
    if (i === events) {
      return `event: done\ndata: {"index":${i},"sent_us":${sent}}\n\n`;
    }
    const text = i === events - 1 ? headers.authorization ?? '' : `word ${i}`;
    return `event: delta\ndata: {"index":${i},"sent_us":${sent},"text":"${text}"}\n\n`;
  };
  const last = query.has('closing') ? events : events - 1;
  const send = (i) => {
    if (stream.destroyed) {
      return;
    }
    if (i < last) {
      stream.write(event(i));
      setTimeout(() => send(i + 1), gap);
    } else {
      stream.end(event(i));
    }
  };
  send(0);
}

function splitEcho(stream, headers, query) {
  const echo = headers.authorization ?? '';
  const text = `the origin says ${echo} back\n`;
  const value = echo.indexOf(' ') + 1;  // after the scheme ("Bearer ")
  const cut = 'the origin says '.length + value + Math.floor((echo.length - value) / 2);
  stream.respond({':status': 200, 'content-type': 'text/plain'});
  stream.write(text.slice(0, cut));
  setTimeout(() => {
    if (!stream.destroyed) {
      stream.end(text.slice(cut));
    }
  }, Number(query.get('gap') ?? 0));
}

function echoInTrailers(stream, headers) {
  stream.respond({':status': 200, 'content-type': 'text/plain'}, {waitForTrailers: true});
  stream.on('wantTrailers', () => stream.sendTrailers({'x-echo': headers.authorization ?? ''}));
  stream.end('hello\n');
}

// The signature checked by the one verifier the HTTP/1.1 origin uses too.
function checkSignature(stream, headers, rawHeaders, body) {
  const fields = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] === ':authority' ? 'host' : rawHeaders[i];
    if (!name.startsWith(':')) {
      fields.push([name, rawHeaders[i + 1]]);
    }
  }
  const request = {
    method: headers[':method'],
    path: headers[':path'],
    headers: fields,
    body: body.toString('base64'),
  };
  const verdict =
      execFileSync('/usr/bin/python3', [verifier, awsKey], {input: JSON.stringify(request)})
          .toString()
          .trim();
  const where = headers[':path'].split('?')[0];
  fs.appendFileSync(awsLog, `${verdict} ${headers[':method']} ${where}\n`);
  if (verdict !== 'ok') {
    respondText(stream, 403, '<Error><Code>SignatureDoesNotMatch</Code></Error>',
                {'content-type': 'application/xml'});
    return;
  }
  respondText(stream, 200,
              '<GetCallerIdentityResponse><GetCallerIdentityResult><Account>123456789012' +
                  '</Account></GetCallerIdentityResult></GetCallerIdentityResponse>',
              {'content-type': 'text/xml'});
}

function answer(stream, headers, rawHeaders, body) {
  const url = new URL(headers[':path'], 'https://origin');
  const query = url.searchParams;
  if (url.pathname.startsWith('/aws/')) {
    checkSignature(stream, headers, rawHeaders, body);
  } else if (url.pathname === '/upload') {
    respondText(stream, 200, `received ${body.length} bytes\n`);
  } else if (url.pathname === '/bytes') {
    sendBytes(stream, Number(query.get('n') ?? 0));
  } else if (url.pathname === '/stream') {
    streamBytes(stream, Number(query.get('n') ?? 0));
  } else if (url.pathname === '/sse') {
    serverSentEvents(stream, headers, query);
  } else if (url.pathname === '/split') {
    splitEcho(stream, headers, query);
  } else if (url.pathname === '/trailers') {
    echoInTrailers(stream, headers);
  } else {
    respondText(stream, 404, 'no such path\n');
  }
}

const server = http2.createSecureServer({
  cert: fs.readFileSync(cert),
  key: fs.readFileSync(key),
});
server.on('session', () => fs.appendFileSync(path.join(folder, `${port}.sessions`), 'session\n'));
server.on('stream', (stream, headers, flags, rawHeaders) => {
  const chunks = [];
  stream.on('error', () => {});  // a stream the gate reset: nothing to answer
  stream.on('data', (chunk) => chunks.push(chunk));
  stream.on('end', () => {
    const body = Buffer.concat(chunks);
    fs.appendFileSync(requestLog, `${headers[':method']} ${headers[':path']} ${body.length}\n`);
    if (!stream.destroyed) {
      answer(stream, headers, rawHeaders, body);
    }
  });
});
server.listen(Number(port), '127.0.0.1');
