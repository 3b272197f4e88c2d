#!/usr/bin/python3
"""A WebSocket origin over TLS for the inspected-WebSocket tests (Python's websockets, Debian's
python3-websockets 10.4, with its own defaults: it accepts permessage-deflate when offered).

    websocket_origin.py PORT CERT KEY SECRET

/echo     every message back as it came (text or binary); a text message "fragments:A|B|C" comes
          back as one message in the fragments A, B and C
/secret   SECRET in three messages: split across the fragments of one, then whole in another,
          then its halves ending one message and beginning the next
/secret-ping  SECRET split across two fragments of one message with a ping between them, for
          each split from 6 characters on (one message a split)
/record   every message it gets is appended to PORT.messages beside the certificate (repr)
/flood    twenty binary messages of 1,000 bytes, then waits for the client's close
/big      one binary message of 3 MiB with SECRET at every 16 KiB boundary (across it) and at
          its end, then waits for the client's close
/bye      one message, then closes with 4000 "bye" and waits for the client's answer
/bye-secret  the same, its close reason "key SECRET"
The request's Sec-WebSocket-Extensions and the extensions chosen are appended to PORT.upgrades
beside the certificate ("PATH offered=... chosen=...").
"""
import asyncio
import os
import ssl
import sys

import websockets

PORT = int(sys.argv[1])
CERT, KEY, SECRET = sys.argv[2], sys.argv[3], sys.argv[4]
FOLDER = os.path.dirname(CERT)


def append(name, line):
    with open(os.path.join(FOLDER, f"{PORT}.{name}"), "a") as out:
        out.write(line + "\n")


async def handler(ws, path):
    offered = ws.request_headers.get("Sec-WebSocket-Extensions")
    chosen = ws.response_headers.get("Sec-WebSocket-Extensions")
    append("upgrades", f"{path} offered={offered} chosen={chosen}")
    if path == "/echo":
        async for message in ws:
            if isinstance(message, str) and message.startswith("fragments:"):
                await ws.send(message[len("fragments:"):].split("|"))
            else:
                await ws.send(message)
    elif path == "/secret":
        third = len(SECRET) // 3
        await ws.send(["token=" + SECRET[:third], SECRET[third:2 * third], SECRET[2 * third:]])
        await ws.send("whole " + SECRET)
        await ws.send("halves " + SECRET[:len(SECRET) // 2])
        await ws.send(SECRET[len(SECRET) // 2:] + " end")
        await ws.wait_closed()
    elif path == "/secret-ping":
        for cut in range(6, len(SECRET) - 1):
            async def parts():
                yield f"cut {cut} " + SECRET[:cut]
                await ws.ping(f"p{cut}".encode())
                yield SECRET[cut:]
            await ws.send(parts())
        await ws.wait_closed()
    elif path == "/record":
        async for message in ws:
            append("messages", repr(message))
            await ws.send("recorded")
    elif path == "/big":
        data = bytearray(b"." * (3 * 1024 * 1024))
        for at in range(16 * 1024 - 10, len(data) - len(SECRET), 16 * 1024):
            data[at:at + len(SECRET)] = SECRET.encode()
        data[len(data) - len(SECRET):] = SECRET.encode()
        await ws.send(bytes(data))
        await ws.wait_closed()
    elif path in ("/bye", "/bye-secret"):
        await ws.send("bye")
        await ws.close(4000, "bye" if path == "/bye" else "key " + SECRET)
    elif path == "/flood":
        for _ in range(20):
            await ws.send(b"x" * 1000)
        await ws.wait_closed()


async def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY)
    async with websockets.serve(handler, "127.0.0.1", PORT, ssl=context, max_size=None):
        await asyncio.Future()


asyncio.run(main())
