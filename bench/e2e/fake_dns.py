#!/usr/bin/env python3
"""A DNS server on loopback for the benchmarks: every A question is answered 127.0.0.1, anything
else with no answer. `fake_dns.py PORT`; runs until killed."""
import socket
import struct
import sys

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", int(sys.argv[1])))
while True:
    query, client = sock.recvfrom(512)
    if len(query) < 12:
        continue
    end = 12
    while end < len(query) and query[end] != 0:
        end += query[end] + 1
    question = query[12:end + 5]
    qtype = struct.unpack("!H", question[-4:-2])[0] if len(question) >= 5 else 0
    answers = 1 if qtype == 1 else 0
    header = query[:2] + struct.pack("!HHHHH", 0x8180, 1, answers, 0, 0)
    answer = (b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1")
              if answers else b"")
    sock.sendto(header + question + answer, client)
