#!/usr/bin/env python3
"""A smart-HTTP git server over TLS on loopback, for the inspection tests: `git http-backend`
(the real one, as CGI) behind Python's HTTP server, wrapped in TLS with a test certificate.

usage: git_https_server.py PORT CERT KEY PROJECT_ROOT [USER:PASSWORD]

Every repository under PROJECT_ROOT is served; pushes are accepted (REMOTE_USER is set). With
USER:PASSWORD, a push (git-receive-pack, its advertisement too) must carry them as Basic
credentials, or is answered 401 with a Basic challenge, as a forge asks for a token.
GET /connections answers how many TLS connections the server has accepted (tests count the
gate's dials with it), GET /connection which of them the request came over (1 for the first);
GET /close-after answers, then closes the connection without having said it would (as an origin
whose keep-alive timeout ends does)."""
import http.server
import os
import ssl
import subprocess
import sys
import threading


class GitHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections += 1
            self.connection_number = self.server.connections

    def _backend(self):
        path, _, query = self.path.partition("?")
        if path in ("/connections", "/close-after", "/connection"):
            number = self.connection_number if path == "/connection" else self.server.connections
            payload = str(number).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.close_connection = path == "/close-after"
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.server.credentials and "git-receive-pack" in self.path:
            import base64
            expected = "Basic " + base64.b64encode(self.server.credentials.encode()).decode()
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.server.project_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "tester",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        done = subprocess.run(["git", "http-backend"], input=body, env=env,
                              capture_output=True, check=False)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _backend
    do_POST = _backend

    def log_message(self, *args):
        pass


def main():
    port, cert, key, root = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), GitHandler)
    server.project_root = root
    server.credentials = sys.argv[5] if len(sys.argv) > 5 else ""
    server.connections = 0
    server.lock = threading.Lock()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
