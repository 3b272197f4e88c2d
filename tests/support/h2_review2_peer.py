#!/usr/bin/env python3
"""Hostile HTTP/2 clients of the second review (tests/e2e/http2_review2_test.cpp), on Debian's
python3-h2, through the gate to an inspected host (h2_hostile_peer.py's connect()).

  h2_review2_peer.py stall PROXY_PORT HOST PORT CA N PATH FILE
      N GET streams to PATH on one connection, whose windows (the streams' and the connection's,
      65535 bytes each) are never opened: the client reads nothing more than that. It stays until
      FILE exists (60 s at most), reading what comes; prints "heads H resets R", R the streams the
      gate reset.
"""
import os
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h2_hostile_peer import connect  # noqa: E402


def stall(proxy_port, host, port, ca, count, path, until):
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    authority = "%s:%d" % (host, port)
    for _ in range(count):
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", path)], end_stream=True)
    sock.sendall(conn.data_to_send())
    heads, resets = 0, 0
    sock.settimeout(0.2)
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(until):
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        if not data:
            print("closed")
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                heads += 1
            elif isinstance(event, h2.events.StreamReset):
                resets += 1
        sock.sendall(conn.data_to_send())  # (acknowledgements only: no window is opened)
    print("heads %d resets %d" % (heads, resets))
    sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "stall":
        stall(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]), sys.argv[7], sys.argv[8])
