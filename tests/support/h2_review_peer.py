#!/usr/bin/env python3
"""Frame-level attacks of the HTTP/2 review (tests/e2e/http2_review_test.cpp), on Debian's
python3-h2, through the gate to an inspected host (h2_hostile_peer.py's connect()).

  h2_review_peer.py mismatch PROXY_PORT HOST PORT CA N
      Rapid reset without a RST_STREAM: N streams, each a POST whose head says content-length 1
      and whose DATA carries two bytes, so that the gate's HTTP/2 library resets it itself; all
      in one burst. Prints "goaway CODE" when the gate sends one, and "streams answered A".
"""
import os
import sys

import h2.config
import h2.connection
import h2.events

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h2_hostile_peer import connect  # noqa: E402


def mismatch(proxy_port, host, port, ca, count):
    sock = connect(proxy_port, host, port, ca)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    answered = 0
    authority = "%s:%d" % (host, port)
    try:
        for _ in range(count):
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, [(":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", "/record"), ("content-length", "1")])
            conn.send_data(stream, b"xx", end_stream=True)
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


if __name__ == "__main__":
    if sys.argv[1] == "mismatch":
        mismatch(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
