# The TLS listener the frame-level HTTP/2 origins of the tests share (h2_hostile_peer.py,
# h2_review3_origin.py, h1_over_h2_origin.py): h2 by ALPN, the client's SNI kept on its socket
# (`sock.sni`), each accepted connection handed to `serve_connection(raw, context, arg)` on a
# thread of its own. Loopback only.
import socket
import ssl
import threading


def serve_h2_over_tls(port, cert, key, serve_connection, arg, backlog):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])

    def remember_name(sock, name, _):
        sock.sni = name
    context.sni_callback = remember_name
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(backlog)
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve_connection, args=(raw, context, arg), daemon=True).start()
