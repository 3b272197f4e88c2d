#!/usr/bin/env python3
"""A hostile HTTP/2 origin and client written frame by frame (Debian's python3-h2), for the
HTTP/2 attack tests: what curl, nghttp and grpcio never send.

  h2_hostile_peer.py serve PORT CERT KEY TOKEN
      An HTTP/2-only TLS origin. By path:
        /interim      a 103 whose link field carries TOKEN, then 200 "done"
        /two-codings  content-encoding "identity" and then "gzip", the body gzip("... TOKEN ...")
        /big          8 MiB, as fast as the flow control allows
        /slow         a head and the body's beginning, and never its end
        /die          the connection closed at once, whatever its other streams are doing
        /sink         never reads the body (no WINDOW_UPDATE for it), never answers
        /record...    (/record and any path under it) after the request ends: 200, the body
                      every request and trailer field it got, one "name: value" a line (and
                      "the last field holds the real token" when it does: the echo of the
                      token itself would be redacted)
  h2_hostile_peer.py client PROXY_PORT HOST PORT CA PATH [NAME=VALUE ...] [--trailer NAME=VALUE]
      One POST with body "data" through the gate (CONNECT, then TLS with ALPN h2 trusting CA), the
      fields NAME=VALUE in its head and those after --trailer in its trailers. Prints each head
      ("head STATUS" and its fields), the body (gunzipped when it was gzip) and "end", or "reset
      CODE" when the stream was reset.
  h2_hostile_peer.py storm PROXY_PORT HOST PORT CA N PATH...
      N GET streams to each PATH on one connection; once every stream has its head, been reset, or
      the connection ended, it closes the socket mid-flight (bodies unread, streams open). Prints
      "heads H resets R".
  h2_hostile_peer.py hold PROXY_PORT HOST PORT CA N PATH...
      As storm, but the connection stays open 10 s more, its streams mid-flight.
  h2_hostile_peer.py rapid PROXY_PORT HOST PORT CA N
      Rapid reset: N streams, each reset as soon as its HEADERS are sent, in one burst; prints
      "goaway CODE" when the gate sends one, and "streams answered A".
  h2_hostile_peer.py preface PROXY_PORT HOST PORT CA ALPN
      Offers ALPN (a comma-separated list, or "none"), then speaks HTTP/2 whatever was chosen (the
      connection preface, SETTINGS, a GET of /record); prints "alpn X" and what came back.
  A connection for free.test takes at most two streams at a time.
  h2_hostile_peer.py staged PROXY_PORT HOST PORT CA STEP...
      One connection driven step by step, reading what comes back all along: `get:PATH` opens a
      GET stream and goes on at once, `reset:PATH` resets the stream opened for PATH, `early:PATH`
      sends a GET's HEADERS and its RST_STREAM in one write, `wait:FILE` waits (20 s at most)
      until FILE exists, `head:PATH` until PATH's head has come, `done:PATH` until PATH's stream
      has ended, `end` until every stream
      opened has. Prints "PATH STATUS" when a stream's head comes, "PATH done BYTES" when it
      ends, "PATH reset CODE" when the gate resets it, and "closed" if the connection ends.
  h2_hostile_peer.py abandon PROXY_PORT HOST PORT CA N [PATH]
      On one connection, N times: GET /big, read its head, never open the stream's window, reset
      it once the gate has filled it (or, with PATH /sink, POST 80 KiB to it and reset it); then
      POST /record on the same connection, printing
      "record STATUS BYTES" or "record stalled" when its body does not come whole in 10 s.
"""
import gzip
import os
import socket
import ssl
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

from h2_tls_listener import serve_h2_over_tls


def serve_connection(raw, context, token):
    try:
        sock = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        return
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, validate_inbound_headers=False, normalize_inbound_headers=False))
    conn.initiate_connection()
    if getattr(sock, "sni", None) == "free.test":
        # free.test's connections take two streams at a time: a stream that is never given back
        # shows.
        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 2})
    sock.sendall(conn.data_to_send())
    got = {}
    big = {}  # stream -> bytes of /big still to send

    def pump():
        for stream, left in list(big.items()):
            try:
                room = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size, left)
            except Exception:
                del big[stream]
                continue
            while room > 0:
                conn.send_data(stream, b"x" * room)
                left -= room
                room = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size, left)
            big[stream] = left
            if left == 0:
                conn.end_stream(stream)
                del big[stream]

    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    got[event.stream_id] = list(event.headers)
                    path = dict(event.headers).get(b":path", b"")
                    if path == b"/interim":
                        conn.send_headers(event.stream_id, [(":status", "103"), ("link", "</style.css?key=%s>; rel=preload" % token)])
                        conn.send_headers(event.stream_id, [(":status", "200"), ("content-length", "4")])
                        conn.send_data(event.stream_id, b"done", end_stream=True)
                    elif path == b"/big":
                        conn.send_headers(event.stream_id, [(":status", "200"), ("content-length", str(8 << 20))])
                        big[event.stream_id] = 8 << 20
                    elif path == b"/slow":
                        conn.send_headers(event.stream_id, [(":status", "200")])
                        conn.send_data(event.stream_id, b"a beginning and nothing more")
                    elif path == b"/die":
                        sock.sendall(conn.data_to_send())
                        sock.close()  # every stream of the connection mid-flight
                        return
                    elif path == b"/two-codings":
                        body = gzip.compress(("the origin says %s back" % token).encode())
                        conn.send_headers(event.stream_id, [(":status", "200"), ("content-encoding", "identity"), ("content-encoding", "gzip"), ("content-length", str(len(body)))])
                        conn.send_data(event.stream_id, body, end_stream=True)
                elif isinstance(event, h2.events.TrailersReceived):
                    got[event.stream_id] += list(event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    if dict(got.get(event.stream_id, [])).get(b":path") != b"/sink":
                        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    big.pop(event.stream_id, None)
                elif isinstance(event, h2.events.StreamEnded):
                    fields = got.get(event.stream_id, [])
                    if dict(fields).get(b":path", b"").startswith(b"/record"):
                        body = b"".join(n + b": " + v + b"\n" for n, v in fields)
                        if any(token.encode() in v for n, v in fields[-1:]):
                            body += b"the last field holds the real token\n"
                        conn.send_headers(event.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                        conn.send_data(event.stream_id, body, end_stream=True)
            pump()
            sock.sendall(conn.data_to_send())
    except Exception:
        return
    finally:
        sock.close()


def serve(port, cert, key, token):
    serve_h2_over_tls(port, cert, key, serve_connection, token, 16)


def pairs(args):
    return [tuple(arg.split("=", 1)) for arg in args]


def client(proxy_port, host, port, ca, path, args):
    split = args.index("--trailer") if "--trailer" in args else len(args)
    fields, trailers = pairs(args[:split]), pairs(args[split + 1:])
    raw = socket.create_connection(("127.0.0.1", proxy_port), timeout=20)
    raw.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, host, port)).encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        piece = raw.recv(4096)
        if not piece:
            print("proxy closed: %r" % answer)
            return
        answer += piece
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(raw, server_hostname=host)
    print("alpn %s" % sock.selected_alpn_protocol())
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    head = [(":method", "POST"), (":scheme", "https"), (":authority", "%s:%d" % (host, port)), (":path", path)] + fields
    conn.send_headers(1, head)
    conn.send_data(1, b"data")
    if trailers:
        conn.send_headers(1, trailers, end_stream=True)
    else:
        conn.end_stream(1)
    sock.sendall(conn.data_to_send())
    body, gzipped = b"", False
    while True:
        data = sock.recv(65536)
        if not data:
            print("connection closed")
            break
        done = False
        for event in conn.receive_data(data):
            if isinstance(event, (h2.events.ResponseReceived, h2.events.InformationalResponseReceived, h2.events.TrailersReceived)):
                print("head " + " ".join("%s: %s" % (n.decode(), v.decode()) for n, v in event.headers))
                gzipped = gzipped or (b"content-encoding", b"gzip") in event.headers
            elif isinstance(event, h2.events.DataReceived):
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                done = True
            elif isinstance(event, h2.events.StreamReset):
                print("reset %d" % event.error_code)
                done = True
        sock.sendall(conn.data_to_send())
        if done:
            break
    if gzipped:
        try:
            body = gzip.decompress(body)
        except Exception:
            pass
    print("body " + body.decode(errors="replace"))
    print("end")


def connect(proxy_port, host, port, ca):
    raw = socket.create_connection(("127.0.0.1", proxy_port), timeout=20)
    raw.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, host, port)).encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        piece = raw.recv(4096)
        if not piece:
            raise SystemExit("proxy closed: %r" % answer)
        answer += piece
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    return context.wrap_socket(raw, server_hostname=host)


def storm(proxy_port, host, port, ca, count, paths, hold=0):
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    streams = []
    for path in paths:
        for _ in range(count):
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", "%s:%d" % (host, port)), (":path", path)], end_stream=True)
            streams.append(stream)
    sock.sendall(conn.data_to_send())
    heads, resets, waiting = 0, 0, set(streams)
    try:
        while waiting:
            data = sock.recv(65536)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    heads += 1
                    waiting.discard(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    resets += 1
                    waiting.discard(event.stream_id)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    waiting.clear()
            sock.sendall(conn.data_to_send())
    except Exception as error:
        print("error %s" % error)
    print("heads %d resets %d" % (heads, resets), flush=True)
    time.sleep(hold)  # the streams stay open, mid-flight, for the gate to end
    sock.close()


def burst(proxy_port, host, port, ca, count, open_stream):
    """COUNT streams on one connection, each sent by open_stream(conn, stream, authority), all
    in one write; then reads until the connection ends (or 5 s of silence). Prints "goaway CODE"
    when the gate sends one, and "streams answered A" (the streams that got a head). Shared by
    the rapid-reset attacks (here and h2_review_peer.py)."""
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    answered = 0
    authority = "%s:%d" % (host, port)
    try:
        for _ in range(count):
            open_stream(conn, conn.get_next_available_stream_id(), authority)
        sock.sendall(conn.data_to_send())
        sock.settimeout(5)
        while True:
            data = sock.recv(65536)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    answered += 1
                elif isinstance(event, h2.events.ConnectionTerminated):
                    print("goaway %d" % event.error_code)
            sock.sendall(conn.data_to_send())
    except Exception as error:
        print("error %s" % type(error).__name__)
    print("streams answered %d" % answered)


def rapid(proxy_port, host, port, ca, count):
    def get_and_reset(conn, stream, authority):
        conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", "/slow")], end_stream=True)
        conn.reset_stream(stream)

    burst(proxy_port, host, port, ca, count, get_and_reset)


def preface(proxy_port, host, port, ca, alpn):
    raw = socket.create_connection(("127.0.0.1", proxy_port), timeout=10)
    raw.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, host, port)).encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += raw.recv(4096)
    context = ssl.create_default_context(cafile=ca)
    if alpn != "none":
        context.set_alpn_protocols(alpn.split(","))
    sock = context.wrap_socket(raw, server_hostname=host)
    print("alpn %s" % sock.selected_alpn_protocol())
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "GET"), (":scheme", "https"), (":authority", "%s:%d" % (host, port)), (":path", "/record")], end_stream=True)
    sock.sendall(conn.data_to_send())
    got = b""
    try:
        while len(got) < 65536:
            piece = sock.recv(65536)
            if not piece:
                break
            got += piece
    except (socket.timeout, ssl.SSLError, OSError):
        pass
    print("got %r" % got[:300])


def staged(proxy_port, host, port, ca, steps):
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    sock.settimeout(0.05)
    authority = "%s:%d" % (host, port)
    path_of, stream_of, ended, received, heads = {}, {}, set(), {}, set()
    closed = [False]

    def say(text):
        print(text, flush=True)

    def pump():
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return
        except (ssl.SSLError, OSError):
            data = b""
        if not data:
            if not closed[0]:
                say("closed")
            closed[0] = True
            return
        for event in conn.receive_data(data):
            path = path_of.get(getattr(event, "stream_id", None))
            if isinstance(event, h2.events.ResponseReceived):
                heads.add(event.stream_id)
                say("%s %s" % (path, dict(event.headers)[b":status"].decode()))
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                received[event.stream_id] = received.get(event.stream_id, 0) + len(event.data)
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
                say("%s done %d" % (path, received.get(event.stream_id, 0)))
            elif isinstance(event, h2.events.StreamReset):
                ended.add(event.stream_id)
                say("%s reset %d" % (path, event.error_code))
            elif isinstance(event, h2.events.ConnectionTerminated):
                say("goaway %d" % event.error_code)
        sock.sendall(conn.data_to_send())

    def until(done, seconds=20):
        deadline = time.time() + seconds
        while not done() and not closed[0] and time.time() < deadline:
            pump()

    def open_get(path, reset):
        stream = conn.get_next_available_stream_id()
        path_of[stream], stream_of[path] = path, stream
        conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", path)], end_stream=True)
        if reset:
            conn.reset_stream(stream)
            ended.add(stream)
        sock.sendall(conn.data_to_send())

    for step in steps:
        kind, _, arg = step.partition(":")
        if kind in ("get", "early"):
            open_get(arg, kind == "early")
        elif kind == "reset":
            conn.reset_stream(stream_of[arg])
            ended.add(stream_of[arg])
            sock.sendall(conn.data_to_send())
        elif kind == "wait":
            until(lambda: os.path.exists(arg))
        elif kind == "head":
            until(lambda: stream_of[arg] in heads or stream_of[arg] in ended)
        elif kind == "done":
            until(lambda: stream_of[arg] in ended)
        elif kind == "end":
            until(lambda: all(stream in ended for stream in path_of))
    sock.close()


def abandon(proxy_port, host, port, ca, count, path):
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.increment_flow_control_window(1 << 30)  # the connection's window never runs out
    sock.sendall(conn.data_to_send())
    authority = "%s:%d" % (host, port)

    def run(stream, until):
        while True:
            data = sock.recv(65536)
            if not data:
                return None
            for event in conn.receive_data(data):
                if until(event):
                    sock.sendall(conn.data_to_send())
                    return event
            sock.sendall(conn.data_to_send())

    sock.settimeout(10)
    for i in range(count):
        stream = conn.get_next_available_stream_id()
        if path == "/sink":
            conn.send_headers(stream, [(":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", "/sink")])
            while conn.local_flow_control_window(stream) < 5 * 16384:
                conn.receive_data(sock.recv(65536))  # the gate's SETTINGS and WINDOW_UPDATE
                sock.sendall(conn.data_to_send())
            for _ in range(5):
                conn.send_data(stream, b"u" * 16384)
            sock.sendall(conn.data_to_send())
            time.sleep(0.3)  # the gate sends what the origin's window allows, and waits
            conn.reset_stream(stream)
            sock.sendall(conn.data_to_send())
            continue
        conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", "/big")], end_stream=True)
        sock.sendall(conn.data_to_send())
        received = [0]

        def filled(event, stream=stream, received=received):
            if isinstance(event, h2.events.DataReceived) and event.stream_id == stream:
                received[0] += event.flow_controlled_length
            return received[0] >= 65535 or isinstance(event, h2.events.StreamReset)
        try:
            run(stream, filled)
        except socket.timeout:
            print("download %d stalled" % i)
            return
        time.sleep(0.3)  # the origin fills what the gate takes of it
        conn.reset_stream(stream)
        sock.sendall(conn.data_to_send())
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [(":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", "/record")], end_stream=True)
    sock.sendall(conn.data_to_send())
    status, body = None, 0
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            done = False
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    status = dict(event.headers)[b":status"].decode()
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if event.stream_id == stream:
                        body += len(event.data)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    done = True
            sock.sendall(conn.data_to_send())
            if done:
                print("record %s %d" % (status, body))
                return
    except socket.timeout:
        pass
    print("record stalled (status %s, %d bytes)" % (status, body))


if __name__ == "__main__":
    if sys.argv[1] == "rapid":
        rapid(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
        sys.exit(0)
    if sys.argv[1] == "preface":
        preface(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
        sys.exit(0)
    if sys.argv[1] == "abandon":
        abandon(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]), sys.argv[7] if len(sys.argv) > 7 else "/big")
        sys.exit(0)
    if sys.argv[1] == "staged":
        staged(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:])
        sys.exit(0)
    if sys.argv[1] in ("storm", "hold"):
        hold = 10 if sys.argv[1] == "hold" else 0
        storm(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]), sys.argv[7:], hold)
        sys.exit(0)
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        client(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7:])
