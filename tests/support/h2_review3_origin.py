#!/usr/bin/env python3
"""A hostile HTTP/2 origin of the third review (tests/e2e/http2_review3_test.cpp), frame by frame
on Debian's python3-h2 (and hyperframe for the frames h2 will not send): what a shared origin
connection may be told by a broken or malicious origin.

  h2_review3_origin.py serve PORT CERT KEY LOG
      An HTTP/2-only TLS origin. It appends what the gate did to LOG, one line each:
      "connection N", "ping-acks N", "goaway-from-gate CODE". By path:
        /echo/X          after 50 ms, 200 with body "X" (many at once tell whether an answer
                         ever reaches the wrong stream)
        /goaway-once     the first request of the origin's life: GOAWAY with a last stream id
                         below it, the connection kept open and the stream never answered; any
                         later one: 200 "sent again"
        /goaway-always   every time, as /goaway-once's first
        /goaway-twice    GOAWAY (last id 2^31-1), then GOAWAY (last id 0), kept open, unanswered
        /no-streams      SETTINGS_MAX_CONCURRENT_STREAMS 0, then 200 "ok"
        /ping-flood      1000 PINGs in one write, then 200 "ok"
        /push            a PUSH_PROMISE (the gate sent ENABLE_PUSH 0), then 200 "pushed"
        /stray           HEADERS on stream 2 (the origin's own, never promised) and on an odd
                         stream the gate never opened, then 200 "stray"
        /after-reset     RST_STREAM on its stream, then HEADERS and DATA on it anyway
        /control-flood   100,000 WINDOW_UPDATE frames (increment 1) and 100,000 PRIORITY frames
                         in one write, then 200 "ok"
        /shrink          SETTINGS_INITIAL_WINDOW_SIZE 0 at once (the request body stops), back to
                         65535 0.3 s later, then as /anything
        /anything        once the request ends: 200, the body every field it got and its body
                         ("name: value" lines, then "body: ..."), also appended to LOG as one
                         "request ..." line
      And WebSockets over HTTP/2 (it sends SETTINGS_ENABLE_CONNECT_PROTOCOL 1, but to a
      connection for plain.test):
        /ws-reset        200, then one binary message of 8 MiB begun and sent as fast as the
                         flow control allows; 1 s after the window stops it, RST_STREAM CANCEL
                         in the middle of it
        /ws-data-first   DATA on the stream before any HEADERS
        /ws-huge         200, then a binary frame's header saying 32 MiB (over the gate's
                         16 MiB frame limit) and a few bytes of it
      Every WebSocket it is asked for is appended to LOG as "websocket PATH".

  h2_review3_origin.py ws-stall PROXY_PORT HOST PORT CA PATH
      Through the gate (CONNECT, TLS, ALPN h2): a GET of /echo/first, then, once the gate's
      SETTINGS allow it, a WebSocket to PATH (extended CONNECT) whose stream window it never
      opens: it reads nothing of it. Prints "status S", then "reset CODE AFTER" when the gate
      resets the stream (AFTER: seconds since the head, whole), or "nothing in 20 s".

  h2_review3_origin.py smuggle PROXY_PORT HOST PORT CA CASE
      One POST to /anything (to an origin of h2_review3_origin.py serve) through the gate on a connection of its own, with what CASE puts in
      its head and body, unchecked by the client (python3-h2's outbound checks off); prints
      "status S" and the body, or "reset CODE", or "closed". CASE: cookies (three cookie
      fields), te-gzip, crlf-value, nul-value, upper-name, connection (connection: close),
      keep-alive, upgrade, transfer-encoding, length-short (content-length 10, 4 bytes sent),
      length-long (content-length 4, more sent, an HTTP/1.1 request in the rest).
"""
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
from hyperframe.frame import DataFrame, GoAwayFrame, HeadersFrame, PingFrame, PriorityFrame, PushPromiseFrame, RstStreamFrame, WindowUpdateFrame

from h2_tls_listener import serve_h2_over_tls

state = {"goaway_once_done": False, "connections": 0}
lock = threading.Lock()


def note(log, line):
    with lock:
        with open(log, "a") as out:
            out.write(line + "\n")


def answer(conn, stream, body, status="200"):
    conn.send_headers(stream, [(":status", status), ("content-length", str(len(body)))])
    size = conn.max_outbound_frame_size  # (the gate's windows take every answer here whole)
    for at in range(0, len(body), size):
        conn.send_data(stream, body[at:at + size])
    conn.end_stream(stream)


def goaway(last):
    frame = GoAwayFrame(0)
    frame.last_stream_id = last
    frame.error_code = 0
    return frame.serialize()


def headers_frame(conn, stream, fields, end_stream=True):
    frame = HeadersFrame(stream)
    frame.data = conn.encoder.encode(fields)
    frame.flags.add("END_HEADERS")
    if end_stream:
        frame.flags.add("END_STREAM")
    return frame.serialize()


def serve_connection(raw, context, log):
    try:
        sock = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        return
    with lock:
        state["connections"] += 1
        number = state["connections"]
    note(log, "connection %d" % number)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    if getattr(sock, "sni", None) != "plain.test":
        conn.local_settings = h2.settings.Settings(client=False, initial_values={h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL: 1})
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    acks = 0
    websockets = {}  # stream -> [bytes left, when the window last stopped it]
    recorded = {}  # /anything's streams -> [fields, body so far]
    delayed = []  # (when, stream, body)
    sock.settimeout(0.01)
    try:
        while True:
            now = time.time()
            for item in [d for d in delayed if d[0] <= now]:
                delayed.remove(item)
                if item[1] == 0:  # (/shrink's window back)
                    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 65535})
                    continue
                try:
                    answer(conn, item[1], item[2])
                except Exception:
                    pass
            pump_websockets(conn, websockets)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                return
            try:
                events = conn.receive_data(data)
            except Exception as error:
                note(log, "origin-error %s" % type(error).__name__)
                return
            for event in events:
                if isinstance(event, h2.events.PingAckReceived):
                    acks += 1
                    note(log, "ping-acks %d" % acks)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    note(log, "goaway-from-gate %d" % event.error_code)
                elif isinstance(event, h2.events.RequestReceived):
                    head = dict(event.headers)
                    if head.get(b":protocol") == b"websocket":
                        note(log, "websocket " + head.get(b":path", b"").decode())
                    if head.get(b":protocol") == b"websocket" and head.get(b":path") == b"/ws-data-first":
                        frame = DataFrame(event.stream_id, data=bytes([0x82, 2]) + b"hi")
                        sock.sendall(conn.data_to_send() + frame.serialize())
                    elif head.get(b":protocol") == b"websocket" and head.get(b":path") == b"/ws-huge":
                        conn.send_headers(event.stream_id, [(":status", "200")])
                        conn.send_data(event.stream_id, bytes([0x82, 127]) + (32 << 20).to_bytes(8, "big") + b"x" * 1000)
                    elif head.get(b":protocol") == b"websocket":
                        conn.send_headers(event.stream_id, [(":status", "200")])
                        conn.send_data(event.stream_id, bytes([0x82, 127]) + (8 << 20).to_bytes(8, "big"))
                        websockets[event.stream_id] = [8 << 20, None]
                    elif head.get(b":path") == b"/shrink":
                        recorded[event.stream_id] = [[], b""]
                        conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
                        delayed.append((time.time() + 0.3, 0, b""))
                    elif head.get(b":path") == b"/anything":
                        recorded[event.stream_id] = [list(event.headers), b""]
                    else:
                        on_request(sock, conn, event.stream_id, head.get(b":path", b"").decode(), delayed, log)
                elif isinstance(event, h2.events.StreamReset):
                    websockets.pop(event.stream_id, None)
                    recorded.pop(event.stream_id, None)
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if event.stream_id in recorded:
                        recorded[event.stream_id][1] += event.data
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id in recorded:
                    fields, body = recorded.pop(event.stream_id)
                    seen = b"".join(n + b": " + v + b"\n" for n, v in fields) + b"body: " + body + b"\n"
                    note(log, "request " + seen.decode(errors="replace").replace("\n", " | "))
                    answer(conn, event.stream_id, seen)
    except (ssl.SSLError, OSError):
        return
    finally:
        sock.close()


def pump_websockets(conn, websockets):
    for stream, state in list(websockets.items()):
        room = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size, state[0])
        if room > 0:
            conn.send_data(stream, b"x" * room)
            state[0] -= room
            state[1] = None
        elif state[1] is None:
            state[1] = time.time()
        elif time.time() - state[1] > 1:
            conn.reset_stream(stream, error_code=8)  # CANCEL, mid-message
            del websockets[stream]


def ws_stall(proxy_port, host, port, ca, path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from h2_hostile_peer import connect
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    authority = "%s:%d" % (host, port)
    conn.send_headers(1, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", "/echo/first")], end_stream=True)
    sock.sendall(conn.data_to_send())
    sock.settimeout(0.2)
    ws, since, deadline = None, None, time.time() + 20
    while time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            data = None
        if data == b"":
            print("closed")
            break
        for event in conn.receive_data(data) if data else []:
            if isinstance(event, h2.events.DataReceived) and event.stream_id != ws:
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.ResponseReceived) and event.stream_id == ws:
                print("status %s" % dict(event.headers)[b":status"].decode(), flush=True)
                since = time.time()
            elif isinstance(event, h2.events.StreamReset) and event.stream_id == ws:
                print("reset %d %d" % (event.error_code, int(time.time() - since)))
                return
        if ws is None and conn.remote_settings.enable_connect_protocol:
            ws = conn.get_next_available_stream_id()
            conn.send_headers(ws, [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", authority), (":path", path), ("sec-websocket-version", "13")])
        sock.sendall(conn.data_to_send())  # (acknowledgements only: the WebSocket's window stays shut)
    print("nothing in 20 s")


SMUGGLE = {
    "cookies": ([("cookie", "a=1"), ("cookie", "b=2"), ("cookie", "c=3")], b"data"),
    "te-gzip": ([("te", "gzip")], b"data"),
    "crlf-value": ([("x-smuggle", "a\r\nx-evil: 1")], b"data"),
    "nul-value": ([("x-smuggle", "a\x00x-evil: 1")], b"data"),
    "upper-name": ([("X-Evil", "1")], b"data"),
    "connection": ([("connection", "close")], b"data"),
    "keep-alive": ([("keep-alive", "timeout=5")], b"data"),
    "upgrade": ([("upgrade", "websocket")], b"data"),
    "transfer-encoding": ([("transfer-encoding", "chunked")], b"4\r\ndata\r\n0\r\n\r\n"),
    "length-short": ([("content-length", "10")], b"data"),
    "length-long": ([("content-length", "4")], b"dataGET /evil HTTP/1.1\r\nhost: h1.test\r\n\r\n"),
}


def smuggle(proxy_port, host, port, ca, case):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from h2_hostile_peer import connect
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False))
    conn.initiate_connection()
    fields, body = SMUGGLE[case]
    head = [(":method", "POST"), (":scheme", "https"), (":authority", "%s:%d" % (host, port)), (":path", "/anything")] + fields
    conn.send_headers(1, head)
    sock.sendall(conn.data_to_send())
    # The body unchecked against the content-length, in a raw DATA frame.
    frame = DataFrame(1, data=body)
    frame.flags.add("END_STREAM")
    sock.sendall(frame.serialize())
    sock.settimeout(10)
    got = b""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                print("closed")
                break
            done = False
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    print("status %s" % dict(event.headers)[b":status"].decode())
                elif isinstance(event, h2.events.DataReceived):
                    got += event.data
                elif isinstance(event, h2.events.StreamEnded):
                    done = True
                elif isinstance(event, h2.events.StreamReset):
                    print("reset %d" % event.error_code)
                    done = True
                elif isinstance(event, h2.events.ConnectionTerminated):
                    print("goaway %d" % event.error_code)
                    done = True
            if done:
                break
    except (socket.timeout, ssl.SSLError, OSError) as error:
        print("error %s" % type(error).__name__)
    print(got.decode(errors="replace"))


def ws_probe(proxy_port, host, port, ca, case):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from h2_hostile_peer import connect
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False))
    conn.initiate_connection()
    authority = "%s:%d" % (host, port)
    full = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", authority), (":path", case if case.startswith("/") else "/ws"), ("sec-websocket-version", "13")]
    heads = {
        "get-protocol": [(":method", "GET")] + full[1:],
        "no-path": full[:4] + full[5:],
        "no-scheme": full[:2] + full[3:],
    }
    ws = None
    if case == "early":
        ws = 1
        conn.send_headers(ws, full)
    else:
        conn.send_headers(1, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", "/echo/first")], end_stream=True)
    sock.sendall(conn.data_to_send())
    sock.settimeout(0.2)
    got, printed, deadline = b"", False, time.time() + 10
    while time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            data = None
        if data == b"":
            print("closed")
            break
        try:
            events = conn.receive_data(data) if data else []
        except Exception as error:
            print("client-error %s" % type(error).__name__)
            break
        done = False
        for event in events:
            if isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                if event.stream_id == ws:
                    got += event.data
            elif isinstance(event, h2.events.ResponseReceived) and event.stream_id == ws:
                print("status %s" % dict(event.headers)[b":status"].decode(), flush=True)
                printed = True
            elif isinstance(event, h2.events.StreamReset) and event.stream_id == ws:
                print("reset %d" % event.error_code)
                printed = done = True
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == ws:
                done = True
            elif isinstance(event, h2.events.ConnectionTerminated):
                print("goaway %d" % event.error_code)
                printed = done = True
        if ws is None and conn.remote_settings.enable_connect_protocol:
            ws = conn.get_next_available_stream_id()
            conn.send_headers(ws, heads.get(case, full))
        sock.sendall(conn.data_to_send())
        if done:
            break
    at = got.find(b"\x88")
    if at >= 0 and len(got) >= at + 4:
        print("close %d" % int.from_bytes(got[at + 2:at + 4], "big"))
    if got:
        print("data %d" % len(got))
    if not printed and not got:
        print("nothing")


def on_request(sock, conn, stream, path, delayed, log):
    raw = b""
    if path.startswith("/echo/"):
        delayed.append((time.time() + 0.05, stream, path[len("/echo/"):].encode()))
    elif path == "/goaway-once":
        with lock:
            first = not state["goaway_once_done"]
            state["goaway_once_done"] = True
        if first:
            raw = goaway(stream - 2 if stream > 2 else 0)
        else:
            answer(conn, stream, b"sent again")
    elif path == "/goaway-always":
        raw = goaway(stream - 2 if stream > 2 else 0)
    elif path == "/goaway-twice":
        raw = goaway(2 ** 31 - 1) + goaway(0)
    elif path == "/no-streams":
        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 0})
        answer(conn, stream, b"ok")
    elif path == "/ping-flood":
        raw = b"".join(PingFrame(0, opaque_data=i.to_bytes(8, "big")).serialize() for i in range(1000))
        answer(conn, stream, b"ok")
    elif path == "/control-flood":
        raw = WindowUpdateFrame(0, window_increment=1).serialize() * 100000
        raw += PriorityFrame(stream, depends_on=0, stream_weight=16).serialize() * 100000
        answer(conn, stream, b"ok")
    elif path == "/push":
        frame = PushPromiseFrame(stream)
        frame.promised_stream_id = 2
        frame.data = conn.encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", "h2.test"), (":path", "/pushed")])
        frame.flags.add("END_HEADERS")
        raw = frame.serialize()
    elif path == "/stray":
        raw = headers_frame(conn, 2, [(":status", "200")]) + headers_frame(conn, stream + 100, [(":status", "200")])
    elif path == "/after-reset":
        raw = RstStreamFrame(stream, error_code=0).serialize()
        raw += headers_frame(conn, stream, [(":status", "200"), ("content-length", "5")])
    sock.sendall(conn.data_to_send() + raw)
    if path == "/push":
        answer(conn, stream, b"pushed")
    elif path == "/stray":
        answer(conn, stream, b"stray")


def serve(port, cert, key, log):
    serve_h2_over_tls(port, cert, key, serve_connection, log, 64)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    elif sys.argv[1] == "smuggle":
        smuggle(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    elif sys.argv[1] == "ws-probe":
        ws_probe(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    elif sys.argv[1] == "ws-stall":
        ws_stall(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
