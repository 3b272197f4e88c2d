#!/usr/bin/python3
"""A WebSocket client through the gate (Python's websockets 10.4, which has no proxy support of
its own: the CONNECT is made here, then websockets speaks TLS and WebSocket over that socket).

    websocket_client.py GATE_PORT HOST PORT CA MODE [ARG]

Modes (each prints what it saw, one fact a line, and `close CODE REASON` at the end):
  echo         text, binary, and fragmented text and binary messages to /echo, each checked
  secret       every message /secret sends (text)
  send ARG     ARG as one text message to /record, then the answer
  deflate      to /echo, offering permessage-deflate (websockets' default); prints `extensions`
  flood        reads /flood until the connection closes; prints the number of messages
  oversized    one binary message of ARG bytes to /echo
  fragmented   one binary message of ARG bytes to /echo, in five fragments
  big          reads /big's message; prints its size and how often ARG (a sentinel) is in it
  bye          reads /bye's message (or ARG's, a path), then its close
  hold         to /echo: one message and its echo, then waits for the gate to end the WebSocket
  idle         to /echo, then waits for the gate to end the WebSocket (at most ARG seconds)
  unmasked     a hand-made upgrade to /echo, then a text frame without a mask (which a client
               must never send); prints the close frame the gate answers with
  upgrade      a hand-made upgrade to ARG (a path); prints the answer's status line
  listen       the same, then prints the close frame that comes
  early        a hand-made upgrade to /echo with a message behind it in the same write; prints
               the frame that comes back (hexadecimal)
"""
import asyncio
import socket
import ssl
import sys

import websockets

GATE, HOST, PORT, CA, MODE = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
ARG = sys.argv[6] if len(sys.argv) > 6 else ""


def tunnel():
    s = socket.create_connection(("127.0.0.1", GATE))
    s.sendall(f"CONNECT {HOST}:{PORT} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        more = s.recv(4096)
        if not more:
            break
        reply += more
    assert b" 200 " in reply.split(b"\r\n")[0], reply
    return s


def unmasked(path="/echo"):
    context = ssl.create_default_context(cafile=CA)
    s = context.wrap_socket(tunnel(), server_hostname=HOST)
    upgrade = (f"GET {path} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode()
    # early: a masked "hello" in the same write as the upgrade request.
    mask = b"\x0a\x0b\x0c\x0d"
    early = b"\x81\x85" + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(b"hello"))
    s.sendall(upgrade + (early if MODE == "early" else b""))
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, _, data = data.partition(b"\r\n\r\n")
    print("status", head.split(b"\r\n")[0].decode())
    if MODE == "upgrade":
        return
    if MODE == "unmasked":
        s.sendall(b"\x81\x05hello")
    s.settimeout(10)
    if MODE == "early":
        while len(data) < 7:  # the echo
            more = s.recv(4096)
            if not more:
                break
            data += more
        print("frames", data.hex())
        return
    while len(data) < 2 or len(data) < 2 + data[1]:
        more = s.recv(4096)
        if not more:
            break
        data += more
    if len(data) >= 4 and data[0] == 0x88:
        print("close", int.from_bytes(data[2:4], "big"), data[4:2 + data[1]].decode())
    else:
        print("no close frame", data)


async def run():
    context = ssl.create_default_context(cafile=CA)
    path = {"echo": "/echo", "idle": "/echo", "hold": "/echo", "big": "/big", "bye": ARG or "/bye", "secret": "/secret", "secret-ping": "/secret-ping", "send": "/record", "deflate": "/echo",
            "flood": "/flood", "oversized": "/echo",
            "fragmented": "/echo"}[MODE]
    compression = "deflate" if MODE == "deflate" else None
    async with websockets.connect(f"wss://{HOST}:{PORT}{path}", sock=tunnel(), ssl=context,
                                  server_hostname=HOST, compression=compression,
                                  max_size=None, open_timeout=10, close_timeout=5) as ws:
        try:
            if MODE == "echo":
                for message in ["hello", b"\x00\x01binary\xff", "fragments:one|two|three"]:
                    await ws.send(message)
                    print("echo", repr(await ws.recv()))
                await ws.send(["frag", "mented ", "text"])
                print("echo", repr(await ws.recv()))
                await ws.send([b"\x01\x02", b"", b"\x03"])
                print("echo", repr(await ws.recv()))
            elif MODE == "secret":
                for _ in range(4):
                    print("message", await ws.recv())
            elif MODE == "secret-ping":
                for _ in range(int(ARG)):
                    print("message", await ws.recv())
            elif MODE == "send":
                await ws.send(ARG)
                print("answer", await ws.recv())
            elif MODE == "deflate":
                print("extensions", [type(e).__name__ for e in ws.extensions])
                await ws.send("plain " * 100)
                print("echo", len(await ws.recv()))
            elif MODE == "flood":
                count = 0
                try:
                    while True:
                        await ws.recv()
                        count += 1
                except websockets.ConnectionClosed:
                    pass
                print("messages", count)
            elif MODE == "big":
                message = await ws.recv()
                print("size", len(message), "sentinels", message.count(ARG.encode()),
                      "real", message.count(b"RealToken"))
            elif MODE == "bye":
                print("message", await ws.recv())
                await ws.wait_closed()
            elif MODE == "hold":
                await ws.send("hello")
                print("echo", repr(await ws.recv()))
                await ws.recv()
            elif MODE == "idle":
                await asyncio.wait_for(ws.recv(), float(ARG))
            elif MODE == "fragmented":
                size = int(ARG)
                cut = [size * i // 5 for i in range(6)]
                await ws.send([b"f" * (cut[i + 1] - cut[i]) for i in range(5)])
                await ws.recv()
            elif MODE == "oversized":
                await ws.send(b"z" * int(ARG))
                await ws.recv()
        except websockets.ConnectionClosed:
            pass
    print("close", ws.close_code, ws.close_reason)


if MODE in ("unmasked", "upgrade", "listen", "early"):
    unmasked(ARG or "/echo")
else:
    asyncio.run(asyncio.wait_for(run(), 60))
