#!/usr/bin/env python3
"""How long a streamed reply's events wait in the gate when a masked secret is bound to the host.

    masked_stream.py GATE_PORT CA_PEM URL AUTHORIZATION EVENTS

Asks URL (the echo origin's /sse, tests/support/echo_https_server.py) through the gate at
GATE_PORT with the given Authorization, reads the server-sent events as they come, and prints one
JSON line: how many events, and the median, 90th percentile and largest time from the origin's
sending an event (its sent_us) to the client's reading it, in milliseconds.
"""
import json
import re
import socket
import ssl
import statistics
import sys
import time
import urllib.parse

port, ca, url, authorization, events = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
parts = urllib.parse.urlsplit(url)
raw = socket.create_connection(("127.0.0.1", int(port)))
raw.sendall(f"CONNECT {parts.hostname}:{parts.port} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n\r\n".encode())
reply = b""
while b"\r\n\r\n" not in reply:
    reply += raw.recv(1)
assert reply.startswith(b"HTTP/1.1 200"), reply
context = ssl.create_default_context(cafile=ca)
tls = context.wrap_socket(raw, server_hostname=parts.hostname)
tls.sendall(f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
            f"Authorization: {authorization}\r\nConnection: close\r\n\r\n".encode())
delays = []
buffer = b""
while len(delays) < events:
    piece = tls.recv(65536)
    now = time.time() * 1e6
    if not piece:
        break
    buffer += piece
    *whole, buffer = buffer.split(b"\n\n")  # complete events, and the start of the next
    for event in whole:
        for sent in re.findall(rb'"sent_us":(\d+)', event):
            delays.append((now - int(sent)) / 1000)
delays.sort()
print(json.dumps({"events": len(delays), "median_ms": round(statistics.median(delays), 2),
                  "p90_ms": round(delays[int(len(delays) * 0.9) - 1], 2), "max_ms": round(delays[-1], 2)}))
