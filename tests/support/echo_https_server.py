#!/usr/bin/env python3
"""An HTTPS origin for the masked-secrets tests: it shows each request back as it arrived.

    echo_https_server.py PORT CERT KEY SECRET_KEY

GET/POST /anything    200, the body lists the request line and every header field as received
                      ("name: value" lines), then the body; ?chunks=N sends it N bytes per chunk,
                      ?base64=1 sends it base64-encoded, ?gzip=1 gzip-compressed (whatever the
                      request's Accept-Encoding says), ?te=gzip as a gzip transfer coding
                      (Transfer-Encoding: gzip, chunked); ?hex=1 sends each byte in hexadecimal
                      with a space after it; ?ranges=1 honours the request's Range field (one
                      range: 206 with Content-Range; several: 206 multipart/byteranges);
                      ?partial=A-B answers 206 with bytes A-B whatever the request asked
/framing              the request's Authorization echoed in every part of the framing: a 103's
                      reason and Link field, the 200's reason, a chunk extension, a trailer
/sse?events=N&gap=MS  200 text/event-stream, chunked: N events MS milliseconds apart, each in a
                      chunk of its own and flushed, with the time it was sent (sent_us, the
                      epoch in microseconds), the request's Authorization echoed in the last;
                      &closing=1 sends one more event ("done") MS milliseconds after it
/echo-header/NAME     200 with the request's NAME field sent back as the response's X-Echo field
/redirect?to=URL      302 to URL
/aws/...              an AWS endpoint: the request's SigV4 signature is checked with SECRET_KEY
                      (sigv4_verifier.py, shared with the HTTP/2 origin); a good one gets STS's
                      GetCallerIdentity answer (or S3's empty 200 for PUT), a bad one 403
                      SignatureDoesNotMatch as S3 writes it (the canonical request as text and
                      as bytes in spaced hexadecimal). Every check is appended to
                      PORT.aws-log beside the certificate as "ok|bad METHOD PATH".
Every request's head, as received, is appended to PORT.requests beside the certificate (what the
origin saw, for the tests to compare with what the client saw).
"""
import base64
import gzip
import http.server
import os
import socketserver
import ssl
import sys
import time
import urllib.parse

from sigv4_verifier import sigv4_ok

PORT = int(sys.argv[1])
CERT, KEY, SECRET_KEY = sys.argv[2], sys.argv[3], sys.argv[4]
AWS_LOG = os.path.join(os.path.dirname(CERT), f"{PORT}.aws-log")
REQUEST_LOG = os.path.join(os.path.dirname(CERT), f"{PORT}.requests")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(self, status, payload, fields=(), chunk=0, coding=""):
        self.send_response(status)
        for name, value in fields:
            self.send_header(name, value)
        if chunk:
            self.send_header("Transfer-Encoding", (coding + ", " if coding else "") + "chunked")
            self.end_headers()
            for i in range(0, len(payload), chunk):
                piece = payload[i:i + chunk]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    def handle_any(self):
        body = self.body()
        with open(REQUEST_LOG, "a") as log:
            log.write(f"{self.command} {self.path}\n")
            for name, value in self.headers.items():
                log.write(f"{name}: {value}\n")
            log.write("\n")
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path.startswith("/aws/"):
            ok = sigv4_ok(SECRET_KEY, self.command, self.path, self.headers, body)
            with open(AWS_LOG, "a") as log:
                log.write(f"{'ok' if ok else 'bad'} {self.command} {url.path}\n")
            if not ok:
                # As S3 answers: the request as it was signed, as text and as bytes.
                canonical = "".join(f"{name.lower()}:{value}\n" for name, value in self.headers.items()
                                    if name.lower().startswith("x-amz-")).encode()
                spaced = " ".join(f"{b:02x}" for b in canonical).encode()
                self.send(403, b"<Error><Code>SignatureDoesNotMatch</Code><Message>bad signature"
                          b"</Message><CanonicalRequest>" + canonical + b"</CanonicalRequest>"
                          b"<CanonicalRequestBytes>" + spaced + b"</CanonicalRequestBytes></Error>",
                          [("Content-Type", "application/xml")])
            elif self.command == "PUT":
                self.send(200, b"", [("ETag", '"0"')])
            else:
                self.send(200, b"<GetCallerIdentityResponse><GetCallerIdentityResult>"
                          b"<Arn>arn:aws:iam::123456789012:user/test</Arn><UserId>AIDA</UserId>"
                          b"<Account>123456789012</Account></GetCallerIdentityResult>"
                          b"</GetCallerIdentityResponse>", [("Content-Type", "text/xml")])
            return
        if url.path == "/redirect":
            self.send(302, b"", [("Location", query["to"][0])])
            return
        if url.path.startswith("/echo-header/"):
            name = url.path[len("/echo-header/"):]
            self.send(200, b"echoed\n", [("X-Echo", self.headers.get(name, ""))])
            return
        if url.path == "/framing":
            # The request's Authorization in every part of a response's framing: an interim
            # response's reason and field, the final reason, a chunk extension and a trailer.
            echo = self.headers.get("Authorization", "").encode()
            self.wfile.write(b"HTTP/1.1 103 Early " + echo + b"\r\nLink: <" + echo + b">\r\n\r\n"
                             b"HTTP/1.1 200 OK " + echo + b"\r\nTransfer-Encoding: chunked\r\n"
                             b"Trailer: X-Echo\r\nConnection: close\r\n\r\n"
                             b"6;ext=\"" + echo + b"\"\r\nhello\n\r\n0\r\nX-Echo: " + echo +
                             b"\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
            return
        if url.path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            events = int(query.get("events", ["4"])[0])
            for i in range(events):
                if i > 0:
                    time.sleep(int(query.get("gap", ["300"])[0]) / 1000)
                text = self.headers.get("Authorization", "") if i == events - 1 else f"word {i}"
                sent = int(time.time() * 1e6)
                event = (f'event: delta\ndata: {{"index":{i},"sent_us":{sent},'
                         f'"text":"{text}"}}\n\n').encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            if "closing" in query:
                time.sleep(int(query.get("gap", ["300"])[0]) / 1000)
                sent = int(time.time() * 1e6)
                event = (f'event: done\ndata: {{"index":{events},"sent_us":{sent}}}\n\n').encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        shown = f"{self.command} {self.path}\n".encode()
        for name, value in self.headers.items():
            shown += f"{name}: {value}\n".encode()
        shown += b"\n" + body
        fields = [("Content-Type", "text/plain")]
        if "base64" in query:
            shown = base64.b64encode(shown)
        if "gzip" in query:
            shown = gzip.compress(shown)
            fields.append(("Content-Encoding", "gzip"))
        if "hex" in query:
            shown = b"".join(b"%02x " % b for b in shown)
        ranges = self.headers.get("Range", "")
        if "partial" in query or ("ranges" in query and ranges.startswith("bytes=")):
            spans = []
            asked = ranges[6:] if ranges.startswith("bytes=") else query.get("partial", ["0-6"])[0]
            for item in asked.split(","):
                first, _, last = item.strip().partition("-")
                spans.append((int(first), min(int(last), len(shown) - 1)))
            if len(spans) == 1:
                first, last = spans[0]
                fields.append(("Content-Range", f"bytes {first}-{last}/{len(shown)}"))
                self.send(206, shown[first:last + 1], fields)
                return
            parts = b""
            for first, last in spans:
                parts += (b"--PARTS\r\nContent-Type: text/plain\r\nContent-Range: bytes %d-%d/%d\r\n\r\n"
                          % (first, last, len(shown))) + shown[first:last + 1] + b"\r\n"
            self.send(206, parts + b"--PARTS--\r\n",
                      [("Content-Type", "multipart/byteranges; boundary=PARTS")])
            return
        if "te" in query:
            self.send(200, gzip.compress(shown), fields, 4096, "gzip")
            return
        self.send(200, shown, fields, int(query.get("chunks", ["0"])[0]))

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT, KEY)
server = Server(("127.0.0.1", PORT), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
