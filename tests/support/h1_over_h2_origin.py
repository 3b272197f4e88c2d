#!/usr/bin/env python3
"""A hostile HTTP/2-only origin, frame by frame on Debian's python3-h2 and hyperframe, and a raw
HTTP/1.1 client, for the review of HTTP/1.1 clients carried over HTTP/2 origin connections
(tests/e2e/http1_to_h2_review_test.cpp): what such an origin may send that an HTTP/1.1 client
must never see as anything but one well-formed response or the gate's 502.

  h1_over_h2_origin.py serve PORT CERT KEY LOG
      An HTTP/2-only TLS origin (a connection for few.test allows two streams at a time). It
      appends to LOG one line per connection ("connection N"), per request ("request METHOD
      PATH") and per stream the gate resets ("reset PATH CODE"). By path:
        /ok/N            200, N bytes of 'o' with their content-length
        /field/CASE      200 with content-length 2 and body "ok", its head broken by CASE (FIELDS
                         below): a value with CR, LF or NUL, blanks around it, a name with a colon,
                         a space or capitals, a pseudo-header after a regular field or of a
                         request, a connection-specific field, two content-lengths, a status
                         that is not one; sent raw (python3-h2's checks bypassed)
        /length/more     content-length 5, then 10 bytes of DATA
        /length/less     content-length 10, then 5 bytes of DATA and the end
        /length/zero     content-length 0, then DATA
        /bodiless/S      status S (204 or 304), then DATA that looks like an HTTP/1.1 response
        /head-data       (for HEAD) 200 with content-length 5, then DATA "hello"
        /interim/N       N 103 heads, then 200 "after N"
        /trailers/CASE   200 without content-length, "body" and trailers: ok (x-checksum),
                         length (content-length), pseudo (:status)
        /never-ends      200 without content-length, "begun", and nothing more, ever
        /silent          nothing at all, ever
        /goaway-mid      200 without content-length, "part", then GOAWAY leaving the stream out
        /close-mid       200 without content-length, "part", then the connection closed
        /reset-mid       200 without content-length, "part", then RST_STREAM INTERNAL_ERROR
        /big/N           200, N bytes of 'b' with their content-length, as fast as the gate's
                         windows allow
        /drip/N          200 without content-length, 1 KiB every 100 ms, N times
        /tiny/N          200 without content-length, then N DATA frames of one byte each in one
                         write, the last ending the stream (N within the gate's stream window)
        /echo            200 without content-length: the request's authorization field back in
                         a field (x-echo) and in the body, cut in the middle of its value across
                         two DATA frames 100 ms apart
        /record...       after the request's end: 200, the body every field it got ("name: value"
                         lines), then "body: " and its body, then its trailers ("trailer ..."),
                         also appended to LOG as one "record ..." line
        /hold            (few.test) the head at once, the end only once LOG holds "release"

  h1_over_h2_origin.py raw PROXY_PORT HOST PORT CA [--together] [--wait S] REQUEST...
      CONNECT through the gate, TLS trusting CA, then each REQUEST (Python escapes: \\r\\n) as
      raw bytes: with --together all in one write, else each once the gate has said nothing for
      0.5 s. Reads until the gate closes or is silent for S seconds (3 by default) and prints
      what came, CR shown as "\\r", then "closed" or "open".

  h1_over_h2_origin.py stall PROXY_PORT HOST PORT CA PATH SECONDS
      CONNECT, TLS, one GET of PATH whose response it does not read for SECONDS, then closes
      the connection.
"""
import socket
import ssl
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.settings
from hyperframe.frame import DataFrame, GoAwayFrame, HeadersFrame, RstStreamFrame

from h2_tls_listener import serve_h2_over_tls

lock = threading.Lock()
state = {"connections": 0}

# A response head broken one way, sent raw: (fields, body).
FIELDS = {
    "crlf": [(":status", "200"), ("x-a", "1\r\nx-injected: yes")],
    "lf": [(":status", "200"), ("x-a", "1\nx-injected: yes")],
    "cr": [(":status", "200"), ("x-a", "1\rx-injected: yes")],
    "nul": [(":status", "200"), ("x-a", "1\x00x-injected: yes")],
    "lead-space": [(":status", "200"), ("x-a", " 1")],
    "trail-space": [(":status", "200"), ("x-a", "1 ")],
    "colon-name": [(":status", "200"), ("x-a:x-injected", "yes")],
    "space-name": [(":status", "200"), ("x-a x-injected", "yes")],
    "upper-name": [(":status", "200"), ("X-Upper", "yes")],
    "empty-name": [(":status", "200"), ("", "yes")],
    "crlf-name": [(":status", "200"), ("x-a\r\nx-injected", "yes")],
    "pseudo-late": [(":status", "200"), ("x-a", "1"), (":status", "200")],
    "pseudo-request": [(":status", "200"), (":path", "/")],
    "transfer-encoding": [(":status", "200"), ("transfer-encoding", "chunked")],
    "connection": [(":status", "200"), ("connection", "close")],
    "keep-alive": [(":status", "200"), ("keep-alive", "timeout=5")],
    "upgrade": [(":status", "200"), ("upgrade", "websocket")],
    "proxy-connection": [(":status", "200"), ("proxy-connection", "close")],
    "length-twice": [(":status", "200"), ("content-length", "2"), ("content-length", "40")],
    "length-same-twice": [(":status", "200"), ("content-length", "2"), ("content-length", "2")],
    "length-list": [(":status", "200"), ("content-length", "2, 2")],
    "length-sign": [(":status", "200"), ("content-length", "+2")],
    "status-101": [(":status", "101"), ("upgrade", "websocket")],
    "status-99": [(":status", "099")],
    "status-600": [(":status", "600")],
    "status-text": [(":status", "2oo")],
    "status-missing": [("x-a", "1")],
    "status-twice": [(":status", "200"), (":status", "204")],
}


def note(log, line):
    with lock:
        with open(log, "a") as out:
            out.write(line + "\n")


def headers_frame(conn, stream, fields, end_stream=False):
    frame = HeadersFrame(stream)
    frame.data = conn.encoder.encode([(n.encode("latin-1"), v.encode("latin-1")) for n, v in fields])
    frame.flags.add("END_HEADERS")
    if end_stream:
        frame.flags.add("END_STREAM")
    return frame.serialize()


def data_frame(stream, data, end_stream=False):
    frame = DataFrame(stream, data=data)
    if end_stream:
        frame.flags.add("END_STREAM")
    return frame.serialize()


class Origin:
    """One connection's streams; every call on its own thread."""

    def __init__(self, sock, conn, log, few):
        self.sock, self.conn, self.log, self.few = sock, conn, log, few
        self.paths = {}
        self.recorded = {}  # stream -> [method, fields, body, trailers]
        self.bigs = {}  # stream -> bytes left
        self.timed = []  # (when, function)
        self.holds = []

    def send(self, raw=b""):
        # Whole, however long the gate takes to read it (the loop's reads time out at 10 ms).
        self.sock.settimeout(None)
        try:
            self.sock.sendall(self.conn.data_to_send() + raw)
        finally:
            self.sock.settimeout(0.01)

    def answer(self, stream, body, status="200", length=True):
        fields = [(":status", status)] + ([("content-length", str(len(body)))] if length else [])
        self.conn.send_headers(stream, fields)
        size = self.conn.max_outbound_frame_size
        for at in range(0, len(body), size):
            self.conn.send_data(stream, body[at:at + size])
        self.conn.end_stream(stream)

    def later(self, seconds, function):
        self.timed.append((time.time() + seconds, function))

    def run_timed(self):
        now = time.time()
        for item in [t for t in self.timed if t[0] <= now]:
            self.timed.remove(item)
            item[1]()
        for stream in list(self.holds):
            with open(self.log) as text:
                if "release\n" in text.read():
                    self.holds.remove(stream)
                    self.conn.send_data(stream, b"released", end_stream=True)

    def pump_bigs(self):
        for stream, left in list(self.bigs.items()):
            try:
                room = min(self.conn.local_flow_control_window(stream), self.conn.max_outbound_frame_size, left)
            except Exception:
                del self.bigs[stream]
                continue
            while room > 0:
                self.conn.send_data(stream, b"b" * room, end_stream=room == left)
                left -= room
                room = min(self.conn.local_flow_control_window(stream), self.conn.max_outbound_frame_size, left) if left else 0
            if left == 0:
                del self.bigs[stream]
            else:
                self.bigs[stream] = left

    def on_request(self, stream, method, path, fields):
        self.paths[stream] = path
        note(self.log, "request %s %s" % (method, path))
        if path.startswith("/record"):
            self.recorded[stream] = [method, fields, b"", []]
        elif path.startswith("/ok/"):
            self.answer(stream, b"o" * int(path[4:]))
        elif path.startswith("/field/"):
            case = path[len("/field/"):]
            fields = list(FIELDS[case])
            if not any(n == "content-length" for n, _ in fields):
                fields.append(("content-length", "2"))
            self.send(headers_frame(self.conn, stream, fields) + data_frame(stream, b"ok", True))
        elif path == "/length/more":
            self.send(headers_frame(self.conn, stream, [(":status", "200"), ("content-length", "5")]) + data_frame(stream, b"0123456789", True))
        elif path == "/length/less":
            self.send(headers_frame(self.conn, stream, [(":status", "200"), ("content-length", "10")]) + data_frame(stream, b"01234", True))
        elif path == "/length/zero":
            self.send(headers_frame(self.conn, stream, [(":status", "200"), ("content-length", "0")]) + data_frame(stream, b"HTTP/1.1 200 OK\r\n\r\n", True))
        elif path.startswith("/bodiless/"):
            smuggled = b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nsmuggled!"
            self.send(headers_frame(self.conn, stream, [(":status", path[len("/bodiless/"):])]) + data_frame(stream, smuggled, True))
        elif path == "/head-data":
            self.send(headers_frame(self.conn, stream, [(":status", "200"), ("content-length", "5")]) + data_frame(stream, b"hello", True))
        elif path.startswith("/interim/"):
            count = int(path[len("/interim/"):])
            raw = b"".join(headers_frame(self.conn, stream, [(":status", "103"), ("link", "</s.css>; rel=preload")]) for _ in range(count))
            after = b"after %d" % count
            raw += headers_frame(self.conn, stream, [(":status", "200"), ("content-length", str(len(after)))]) + data_frame(stream, after, True)
            self.send(raw)
        elif path == "/interim-length":
            raw = headers_frame(self.conn, stream, [(":status", "103"), ("content-length", "5"), ("link", "</s.css>; rel=preload")])
            raw += headers_frame(self.conn, stream, [(":status", "200"), ("content-length", "5")]) + data_frame(stream, b"final", True)
            self.send(raw)
        elif path.startswith("/bodiless-length/"):
            self.send(headers_frame(self.conn, stream, [(":status", path[len("/bodiless-length/"):]), ("content-length", "10")], True))
        elif path == "/length/head-end":
            self.send(headers_frame(self.conn, stream, [(":status", "200"), ("content-length", "5")], True))
        elif path == "/obs-text":
            self.send(headers_frame(self.conn, stream, [(":status", "200"), ("x-v", "caf\xe9"), ("content-length", "2")]) + data_frame(stream, b"ok", True))
        elif path.startswith("/trailers/"):
            case = path[len("/trailers/"):]
            trailers = {"ok": [("x-checksum", "abc")], "length": [("content-length", "4")], "pseudo": [(":status", "200")]}[case]
            self.send(headers_frame(self.conn, stream, [(":status", "200")]) + data_frame(stream, b"body") + headers_frame(self.conn, stream, trailers, True))
        elif path == "/never-ends":
            self.send(headers_frame(self.conn, stream, [(":status", "200")]) + data_frame(stream, b"begun"))
        elif path == "/silent":
            pass
        elif path in ("/goaway-mid", "/close-mid", "/reset-mid"):
            raw = headers_frame(self.conn, stream, [(":status", "200")]) + data_frame(stream, b"part")
            self.send(raw)
            self.later(0.2, lambda: self.end_mid(stream, path))
        elif path.startswith("/big/"):
            self.conn.send_headers(stream, [(":status", "200"), ("content-length", path[len("/big/"):])])
            self.bigs[stream] = int(path[len("/big/"):])
        elif path.startswith("/tiny/"):
            count = int(path[len("/tiny/"):])
            frames = data_frame(stream, b"t") * (count - 1) + data_frame(stream, b"t", True)
            self.send(headers_frame(self.conn, stream, [(":status", "200")]) + frames)
        elif path.startswith("/drip/"):
            self.conn.send_headers(stream, [(":status", "200")])
            self.drip(stream, int(path[len("/drip/"):]))
        elif path == "/echo":
            value = dict(fields).get("authorization", "none")
            self.conn.send_headers(stream, [(":status", "200"), ("x-echo", value)])
            body = ("you sent " + value + " here\n").encode()
            middle = len("you sent ") + len(value) // 2
            self.conn.send_data(stream, body[:middle])
            self.later(0.1, lambda: self.conn.send_data(stream, body[middle:], end_stream=True))
        elif path == "/hold":
            self.conn.send_headers(stream, [(":status", "200")])
            self.holds.append(stream)
        else:
            self.answer(stream, b"no such path", status="404")
        self.send()

    def end_mid(self, stream, path):
        if path == "/goaway-mid":
            frame = GoAwayFrame(0)
            frame.last_stream_id = max(stream - 2, 0)
            frame.error_code = 0
            self.send(frame.serialize())
        elif path == "/reset-mid":
            self.send(RstStreamFrame(stream, error_code=2).serialize())
        else:
            self.sock.close()

    def drip(self, stream, left):
        if left == 0:
            self.conn.end_stream(stream)
            return
        try:
            self.conn.send_data(stream, b"d" * 1024)
        except Exception:
            return  # the stream was reset
        self.later(0.1, lambda: self.drip(stream, left - 1))

    def on_end(self, stream):
        if stream not in self.recorded:
            return
        method, fields, body, trailers = self.recorded.pop(stream)
        seen = b"".join(n.encode() + b": " + v.encode() + b"\n" for n, v in fields) + b"body: " + body + b"\n"
        seen += b"".join(b"trailer " + n.encode() + b": " + v.encode() + b"\n" for n, v in trailers)
        note(self.log, "record " + seen.decode(errors="replace").replace("\n", " | "))
        self.answer(stream, seen)


def serve_connection(raw, context, log):
    try:
        sock = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        return
    with lock:
        state["connections"] += 1
        number = state["connections"]
    note(log, "connection %d" % number)
    config = h2.config.H2Configuration(client_side=False, validate_inbound_headers=False,
                                       header_encoding="latin-1")
    conn = h2.connection.H2Connection(config)
    few = getattr(sock, "sni", None) == "few.test"
    if few:
        conn.local_settings = h2.settings.Settings(client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 2})
    conn.initiate_connection()
    origin = Origin(sock, conn, log, few)
    origin.send()
    sock.settimeout(0.01)
    try:
        while True:
            origin.run_timed()
            origin.pump_bigs()
            origin.send()
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                return
            try:
                events = conn.receive_data(data)
            except Exception as error:
                note(log, "origin-error %s %s" % (type(error).__name__, error))
                return
            for event in events:
                if isinstance(event, h2.events.RequestReceived):
                    fields = [(n, v) for n, v in event.headers if not n.startswith(":")]
                    head = dict(event.headers)
                    origin.on_request(event.stream_id, head.get(":method", ""), head.get(":path", ""), fields)
                    if event.stream_ended is not None:
                        origin.on_end(event.stream_id)
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if event.stream_id in origin.recorded:
                        origin.recorded[event.stream_id][2] += event.data
                elif isinstance(event, h2.events.TrailersReceived):
                    if event.stream_id in origin.recorded:
                        origin.recorded[event.stream_id][3] = list(event.headers)
                elif isinstance(event, h2.events.StreamEnded):
                    origin.on_end(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    note(log, "reset %s %d" % (origin.paths.get(event.stream_id, "?"), event.error_code))
                    origin.bigs.pop(event.stream_id, None)
                    origin.recorded.pop(event.stream_id, None)
                    if event.stream_id in origin.holds:
                        origin.holds.remove(event.stream_id)
    except (ssl.SSLError, OSError):
        return
    finally:
        sock.close()


def serve(port, cert, key, log):
    serve_h2_over_tls(port, cert, key, serve_connection, log, 64)


def tunnel(proxy_port, host, port, ca):
    sock = socket.create_connection(("127.0.0.1", proxy_port))
    sock.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, host, port)).encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        piece = sock.recv(4096)
        if not piece:
            raise SystemExit("the gate closed the CONNECT: %r" % reply)
        reply += piece
    if b" 200 " not in reply.split(b"\r\n")[0]:
        raise SystemExit("the gate refused the CONNECT: %r" % reply)
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["http/1.1"])
    return context.wrap_socket(sock, server_hostname=host)


def read_until_quiet(sock, quiet):
    got, closed = b"", False
    sock.settimeout(quiet)
    while True:
        try:
            piece = sock.recv(65536)
        except socket.timeout:
            break
        except (ssl.SSLError, OSError):
            closed = True
            break
        if not piece:
            closed = True
            break
        got += piece
    return got, closed


def raw(proxy_port, host, port, ca, args):
    together, wait = False, 3.0
    while args and args[0].startswith("--"):
        if args[0] == "--together":
            together = True
            args = args[1:]
        elif args[0] == "--wait":
            wait = float(args[1])
            args = args[2:]
        else:
            raise SystemExit("unknown option %s" % args[0])
    requests = [a.encode("latin-1").decode("unicode_escape").encode("latin-1") for a in args]
    sock = tunnel(proxy_port, host, port, ca)
    got, closed = b"", False
    if together:
        sock.sendall(b"".join(requests))
    else:
        for request in requests[:-1]:
            sock.sendall(request)
            piece, closed = read_until_quiet(sock, 0.5)
            got += piece
            if closed:
                break
        if not closed:
            sock.sendall(requests[-1])
    if not closed:
        piece, closed = read_until_quiet(sock, wait)
        got += piece
    sys.stdout.write(got.decode("latin-1").replace("\r", "\\r"))
    print("\n" + ("closed" if closed else "open"))


def stall(proxy_port, host, port, ca, path, seconds):
    sock = tunnel(proxy_port, host, port, ca)
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path, host, port)).encode())
    time.sleep(seconds)
    sock.close()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    elif sys.argv[1] == "raw":
        raw(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:])
    elif sys.argv[1] == "stall":
        stall(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], float(sys.argv[7]))
