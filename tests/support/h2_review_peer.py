#!/usr/bin/env python3
"""Frame-level attacks of the HTTP/2 review (tests/e2e/http2_review_test.cpp), on Debian's
python3-h2, through the gate to an inspected host (h2_hostile_peer.py's burst()).

  h2_review_peer.py mismatch PROXY_PORT HOST PORT CA N
      Rapid reset without a RST_STREAM: N streams, each a POST whose head says content-length 1
      and whose DATA carries two bytes, so that the gate's HTTP/2 library resets it itself; all
      in one burst. Prints "goaway CODE" when the gate sends one, and "streams answered A".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h2_hostile_peer import burst  # noqa: E402


def mismatch(proxy_port, host, port, ca, count):
    def post_two_bytes_for_one(conn, stream, authority):
        conn.send_headers(stream, [(":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", "/record"), ("content-length", "1")])
        conn.send_data(stream, b"xx", end_stream=True)

    burst(proxy_port, host, port, ca, count, post_two_bytes_for_one)


if __name__ == "__main__":
    if sys.argv[1] == "mismatch":
        mismatch(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
