#!/usr/bin/env python3
"""The confined client of bench/e2e/capture.sh: setups/s through the explicit proxy (CONNECT to
SANDBOX_PROXY_PORT) and through capture (a direct connection), in alternating rounds.

usage: capture_client.py NAME PORT ROUNDS SECONDS CONCURRENCY PAYLOAD
Prints a markdown table: each round's setups/s for both paths, the medians and their ratio.
"""
import os
import socket
import statistics
import sys
import threading
import time

name, port = sys.argv[1], int(sys.argv[2])
rounds, seconds, concurrency, payload = (int(sys.argv[3]), float(sys.argv[4]),
                                         int(sys.argv[5]), int(sys.argv[6]))
proxy_port = int(os.environ["SANDBOX_PROXY_PORT"])
message = b"e" + b"x" * (payload - 1)
# Capture: the name resolved once, through the gate's DNS (a synthetic address).
captured = socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]


def read_exactly(sock, size):
    got = b""
    while len(got) < size:
        chunk = sock.recv(size - len(got))
        if not chunk:
            raise OSError("closed early")
        got += chunk
    return got


def setup(mode):
    if mode == "proxy":
        sock = socket.create_connection(("127.0.0.1", proxy_port))
        sock.sendall(f"CONNECT {name}:{port} HTTP/1.1\r\nHost: {name}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(256)
            if not chunk:
                raise OSError("proxy closed")
            head += chunk
        if not head.startswith(b"HTTP/1.1 200"):
            raise OSError(head.split(b"\r\n")[0].decode())
    else:
        sock = socket.create_connection(captured)
    with sock:
        sock.sendall(message)
        read_exactly(sock, len(message))


def measure(mode):
    done = [0] * concurrency
    errors = [0] * concurrency
    stop = time.monotonic() + seconds

    def worker(i):
        while time.monotonic() < stop:
            try:
                setup(mode)
                done[i] += 1
            except OSError:
                errors[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.monotonic() - start), sum(errors)


for mode in ("proxy", "capture"):  # warm-up: the gate's DNS cache, the book, the pipes
    setup(mode)
results = {"proxy": [], "capture": []}
print("| round | explicit proxy (setups/s) | capture (setups/s) | errors |")
print("| --- | --- | --- | --- |")
for r in range(1, rounds + 1):
    proxy, proxy_errors = measure("proxy")
    capture, capture_errors = measure("capture")
    results["proxy"].append(proxy)
    results["capture"].append(capture)
    print(f"| {r} | {proxy:.0f} | {capture:.0f} | {proxy_errors + capture_errors} |")
p, c = statistics.median(results["proxy"]), statistics.median(results["capture"])
print(f"| median | {p:.0f} | {c:.0f} | |")
print()
print(f"Capture / explicit proxy: **{c / p:.2f}×** (capture saves the client's CONNECT round trip "
      "and the gate's request-head parse; both paths decide, resolve, dial and relay alike).")
