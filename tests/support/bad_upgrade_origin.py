#!/usr/bin/python3
"""A TLS origin that answers every WebSocket upgrade with a 101 a client must refuse.

    bad_upgrade_origin.py PORT CERT KEY

/wrong-accept    a 101 whose Sec-WebSocket-Accept answers another key
/forced-deflate  a 101 that chooses permessage-deflate whatever was offered
Then it sends one unmasked text frame ("hi") and closes.
/masked-frame    a good 101, then a masked text frame (a server must never mask), then waits
                 for the connection to close
"""
import base64
import hashlib
import socket
import ssl
import sys
import threading

PORT, CERT, KEY = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def accept_for(key):
    guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    return base64.b64encode(hashlib.sha1((key + guid).encode()).digest()).decode()


def serve(connection):
    with connection:
        head = b""
        while b"\r\n\r\n" not in head:
            more = connection.recv(4096)
            if not more:
                return
            head += more
        lines = head.decode(errors="replace").split("\r\n")
        path = lines[0].split(" ")[1]
        fields = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip()
                  for l in lines[1:] if ":" in l}
        key = fields.get("sec-websocket-key", "")
        answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        if path == "/masked-frame":
            answer += f"Sec-WebSocket-Accept: {accept_for(key)}\r\n\r\n"
            masked = bytes(c ^ m for c, m in zip(b"hi", b"\x01\x02"))
            connection.sendall(answer.encode() + b"\x81\x82\x01\x02\x03\x04" + masked)
            while connection.recv(4096):
                pass
            return
        if path == "/wrong-accept":
            answer += f"Sec-WebSocket-Accept: {accept_for('not the key')}\r\n"
        else:
            answer += (f"Sec-WebSocket-Accept: {accept_for(key)}\r\n"
                       "Sec-WebSocket-Extensions: permessage-deflate\r\n")
        connection.sendall(answer.encode() + b"\r\n" + b"\x81\x02hi")


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT, KEY)
listener = socket.create_server(("127.0.0.1", PORT))
while True:
    raw, _ = listener.accept()
    try:
        tls = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        raw.close()
        continue
    threading.Thread(target=serve, args=(tls,), daemon=True).start()
