#!/usr/bin/env python3
"""A TLS origin that numbers its connections, for the tests of the gate's pooled origin
connections (proxy/session/origin_pool.hpp, h2_origin_pool.hpp), on Debian's python3-h2.

  h2_pool_origin.py PORT CERT KEY ALPN [STREAMS]

STREAMS: the SETTINGS_MAX_CONCURRENT_STREAMS its HTTP/2 connections announce (python3-h2 goes on
taking more, so a client that sends a stream before it read the SETTINGS is not cut off). ALPN is
what the origin lets its client choose: "h2,http/1.1" (either) or "http/1.1". Every
connection whose TLS handshake completed gets the next number, from 1 (a probe of the port that
never speaks TLS gets none), and its line "N ALPN" is appended to PORT.connections beside CERT.

HTTP/1.1, kept alive: any request is answered 200 "http/1.1 connection N"; /close with
Connection: close, and the connection closed.
HTTP/2, by path:
  /connection          200 "h2 connection N"
  /slow...             (any path under it) a head and a first piece of body; the rest never comes
  /refuse-first        on connection 1 a GOAWAY that names the stream before this one as the
                       last the origin processes (this one, then, it never saw) and the
                       connection closed; on any other, as /connection
  /refuse-after-body   the same, once the request's body has come whole (the gate has sent it)
  /goaway-after        200 "h2 connection N", then a GOAWAY (this stream the last processed)
"""
import os
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.events
from hyperframe.frame import SettingsFrame

lock = threading.Lock()
count = [0]


def number(log_path, alpn):
    with lock:
        count[0] += 1
        with open(log_path, "a") as log:
            log.write("%d %s\n" % (count[0], alpn))
        return count[0]


def serve_http1(sock, serial):
    pending = b""
    while True:
        while b"\r\n\r\n" not in pending:
            piece = sock.recv(65536)
            if not piece:
                return
            pending += piece
        head, pending = pending.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(pending) < length:
            piece = sock.recv(65536)
            if not piece:
                return
            pending += piece
        pending = pending[length:]
        body = b"http/1.1 connection %d\n" % serial
        close = head.split(b" ", 2)[1] == b"/close"
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (
            len(body), b"Connection: close\r\n" if close else b"", body))
        if close:
            return


def answer(conn, stream, text):
    body = text.encode()
    conn.send_headers(stream, [(":status", "200"), ("content-length", str(len(body)))])
    conn.send_data(stream, body, end_stream=True)


def serve_h2(sock, serial, streams):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    if streams:
        limit = SettingsFrame(0)
        limit.settings = {SettingsFrame.MAX_CONCURRENT_STREAMS: streams}
        sock.sendall(limit.serialize())
    paths = {}
    while True:
        data = sock.recv(65536)
        if not data:
            return
        close = False
        for event in conn.receive_data(data):
            if close:
                break  # the connection is over for the origin: nothing more is read
            if isinstance(event, h2.events.RequestReceived):
                path = dict(event.headers).get(b":path", b"")
                paths[event.stream_id] = path
                if path.startswith(b"/slow"):
                    conn.send_headers(event.stream_id, [(":status", "200")])
                    conn.send_data(event.stream_id, b"a beginning and nothing more\n")
                elif path == b"/refuse-first" and serial == 1:
                    conn.close_connection(last_stream_id=max(event.stream_id - 2, 0))
                    close = True
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                path = paths.get(event.stream_id)
                if path == b"/refuse-after-body" and serial == 1:
                    conn.close_connection(last_stream_id=max(event.stream_id - 2, 0))
                    close = True
                elif path in (b"/connection", b"/refuse-first", b"/refuse-after-body", b"/goaway-after"):
                    answer(conn, event.stream_id, "h2 connection %d\n" % serial)
                    if path == b"/goaway-after":
                        conn.close_connection(last_stream_id=event.stream_id)
                        close = True
        sock.sendall(conn.data_to_send())
        if close:
            # Read what the gate still sends until it closes: a close with bytes unread would
            # reset the connection, and the GOAWAY with it.
            sock.settimeout(10)
            while sock.recv(65536):
                pass
            return


def serve_connection(raw, context, log_path, streams):
    try:
        sock = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        raw.close()
        return
    alpn = sock.selected_alpn_protocol() or "none"
    serial = number(log_path, alpn)
    try:
        if alpn == "h2":
            serve_h2(sock, serial, streams)
        else:
            serve_http1(sock, serial)
    except Exception:
        pass
    finally:
        sock.close()


def main():
    port, cert, key, alpn = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    streams = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    log_path = os.path.join(os.path.dirname(cert), "%d.connections" % port)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(alpn.split(","))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve_connection, args=(raw, context, log_path, streams),
                         daemon=True).start()


if __name__ == "__main__":
    main()
