#!/usr/bin/env python3
"""Fake model APIs for the agent benchmarks: Anthropic's Messages API and OpenAI's Responses API,
over TLS on loopback, for any host name (a leaf for the name the client asks for, minted from the
run's test CA), answering what Claude Code and the Codex CLI ask at start and a streamed reply.

    fake_api.py --port 443 --ca-cert CA.pem --ca-key CA.key --log REQUESTS.jsonl
                [--events 8] [--gap-ms 500] [--real-key VALUE]... [--framing chunked|length]

Every request is logged as one JSON line: the time, host, method, path, which credential fields
it carried and whether each held a real key (one of --real-key, also read from $FAKE_API_REAL_KEYS,
comma-separated) or something else (a sentinel that was not filled in), and whether it asked for
a WebSocket upgrade. Every streamed event is logged with the time it was sent ("sent" lines).

Streamed replies (`stream: true` on POST /v1/messages, POST /v1/responses) send EVENTS text
deltas GAP ms apart; the answer's text is "SANDGATE-OK w1 w2 ... wEVENTS". Other paths get 404
with an error body in the API's shape, except the few start-up calls answered below.
"""
import argparse
import datetime
import http.server
import json
import os
import socketserver
import ssl
import sys
import tempfile
import threading
import time
import uuid

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ANSWER_MARK = "SANDGATE-OK"
CREDENTIAL_FIELDS = ("authorization", "x-api-key", "api-key", "chatgpt-account-id")

args = None
log_lock = threading.Lock()


def log(record):
    record["t"] = round(time.time(), 6)
    with log_lock, open(args.log, "a") as out:
        out.write(json.dumps(record) + "\n")


class LeafFactory:
    """Mints and caches one TLS context per server name, each with a leaf for that name."""

    def __init__(self, ca_cert_path, ca_key_path):
        with open(ca_cert_path, "rb") as f:
            self.ca_cert = x509.load_pem_x509_certificate(f.read())
        with open(ca_key_path, "rb") as f:
            self.ca_key = serialization.load_pem_private_key(f.read(), password=None)
        self.contexts = {}
        self.lock = threading.Lock()
        self.folder = tempfile.mkdtemp(prefix="fake-api-leaves-")

    def context_for(self, name):
        with self.lock:
            if name not in self.contexts:
                self.contexts[name] = self._mint(name)
            return self.contexts[name]

    def _mint(self, name):
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(self.ca_cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .sign(self.ca_key, hashes.SHA256()))
        cert_path = os.path.join(self.folder, name + ".pem")
        key_path = os.path.join(self.folder, name + ".key")
        with open(cert_path, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(key_path, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        context.set_alpn_protocols(["http/1.1"])
        return context


def credential_report(headers):
    """Which credential fields the request carried, each 'real', 'other' (not a real key: a
    sentinel left as it is) or absent."""
    report = {}
    for field in CREDENTIAL_FIELDS:
        value = headers.get(field)
        if value is None:
            continue
        if field == "chatgpt-account-id":
            report[field] = "present"
            continue
        token = value.split(" ", 1)[1] if field == "authorization" and " " in value else value
        report[field] = "real" if token in args.real_keys else "other"
    return report


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-api"

    def log_message(self, *unused):
        pass

    def read_body(self):
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length", 0) or 0)
        return self.rfile.read(length) if length else b""

    def handle_any(self):
        body = self.read_body()
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        if not isinstance(request, dict):
            request = {}
        host = (self.headers.get("host") or "").split(":")[0]
        self.request_id = uuid.uuid4().hex[:12]
        log({"kind": "request", "id": self.request_id, "host": host, "method": self.command,
             "path": self.path, "credentials": credential_report(self.headers),
             "websocket_headers": sorted(h for h in self.headers
                                         if h.lower().startswith("sec-websocket")),
             "upgrade": self.headers.get("upgrade"), "user_agent": self.headers.get("user-agent"),
             "stream": request.get("stream"), "model": request.get("model"),
             "body_bytes": len(body)})
        path = self.path.split("?")[0]
        route = ROUTES.get((self.command, path))
        credentials = credential_report(self.headers)
        if host in API_HOSTS and path.startswith("/v1/") and "real" not in credentials.values():
            # As the real APIs do: the model API answers nothing without a valid key.
            log({"kind": "refused", "id": self.request_id, "why": "no real key"})
            self.send_json(401, API_HOSTS[host])
        elif route:
            route(self, request)
        elif self.headers.get("upgrade", "").lower() == "websocket":
            # No WebSocket here: answer as an origin without it does, so a client falls back.
            self.send_json(426, {"error": {"message": "no websocket on the fake api"}})
        elif "anthropic" in host or "claude" in host:
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                           "message": f"fake api: no {path}"}})
        else:
            self.send_json(404, {"error": {"message": f"fake api: no {path}",
                                           "type": "invalid_request_error"}})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_" + self.request_id)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def stream_events(self, events):
        """Sends (name, payload) events as server-sent events, one chunk each, GAP apart for
        the text deltas."""
        pieces = [f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
                  for name, payload, _ in events]
        chunked = args.framing == "chunked"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        if chunked:
            self.send_header("transfer-encoding", "chunked")
        else:  # the whole length up front, the events still sent GAP apart
            self.send_header("content-length", str(sum(len(p) for p in pieces)))
        self.send_header("request-id", "req_" + self.request_id)
        self.end_headers()
        for index, ((name, payload, pause), data) in enumerate(zip(events, pieces)):
            if pause:
                time.sleep(args.gap_ms / 1000)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            self.wfile.flush()
            log({"kind": "sent", "id": self.request_id, "index": index, "event": name})
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def words():
    return [ANSWER_MARK] + [f" w{i}" for i in range(1, args.events + 1)]


# Anthropic: the Messages API.
def anthropic_message(handler, request):
    text = "".join(words())
    message = {"id": "msg_" + handler.request_id, "type": "message", "role": "assistant",
               "model": request.get("model", "claude-fake"), "content": [],
               "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 12, "output_tokens": 1, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0}}
    if not request.get("stream"):
        message.update(content=[{"type": "text", "text": text}], stop_reason="end_turn")
        handler.send_json(200, message)
        return
    events = [("message_start", {"type": "message_start", "message": message}, False),
              ("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}, False),
              ("ping", {"type": "ping"}, False)]
    for piece in words():
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": piece}}
        events.append(("content_block_delta", delta, True))
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}, False),
               ("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": len(words())}}, False),
               ("message_stop", {"type": "message_stop"}, False)]
    handler.stream_events(events)


def anthropic_count_tokens(handler, request):
    handler.send_json(200, {"input_tokens": 12})


def anthropic_models(handler, request):
    model = {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude (fake)",
             "created_at": "2025-01-01T00:00:00Z"}
    handler.send_json(200, {"data": [model], "has_more": False, "first_id": model["id"],
                            "last_id": model["id"]})


# OpenAI: the Responses API.
def openai_responses(handler, request):
    text = "".join(words())
    response_id = "resp_" + handler.request_id
    item_id = "msg_" + handler.request_id
    base = {"id": response_id, "object": "response", "created_at": int(time.time()),
            "model": request.get("model", "gpt-fake"), "output": [], "status": "in_progress"}
    item_done = {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": text, "annotations": []}]}
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": len(words()), "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 12 + len(words())}
    completed = dict(base, status="completed", output=[item_done], usage=usage)
    if not request.get("stream"):
        handler.send_json(200, completed)
        return
    sequence = iter(range(10_000))

    def event(kind, pause=False, **fields):
        return (kind, dict({"type": kind, "sequence_number": next(sequence)}, **fields), pause)

    events = [event("response.created", response=base),
              event("response.in_progress", response=base),
              event("response.output_item.added", output_index=0,
                    item={"id": item_id, "type": "message", "status": "in_progress", "role": "assistant",
                          "content": []}),
              event("response.content_part.added", item_id=item_id, output_index=0, content_index=0,
                    part={"type": "output_text", "text": "", "annotations": []})]
    for piece in words():
        events.append(event("response.output_text.delta", pause=True, item_id=item_id,
                            output_index=0, content_index=0, delta=piece))
    events += [event("response.output_text.done", item_id=item_id, output_index=0, content_index=0,
                     text=text),
               event("response.content_part.done", item_id=item_id, output_index=0, content_index=0,
                     part={"type": "output_text", "text": text, "annotations": []}),
               event("response.output_item.done", output_index=0, item=item_done),
               event("response.completed", response=completed)]
    handler.stream_events(events)


def openai_models(handler, request):
    handler.send_json(200, {"object": "list", "data": [{"id": "gpt-5", "object": "model", "created": 1700000000,
                                                        "owned_by": "openai"}]})


# The model APIs' hosts, and their answer to a request without a valid key.
API_HOSTS = {
    "api.anthropic.com": {"type": "error", "error": {"type": "authentication_error",
                                                     "message": "invalid x-api-key"}},
    "api.openai.com": {"error": {"message": "Incorrect API key provided (fake api).",
                                 "type": "invalid_request_error", "code": "invalid_api_key"}},
}

def hello(handler, request):
    # Claude Code's interactive mode checks that it can reach its services before it starts.
    handler.send_json(200, {"message": "hello"})


ROUTES = {
    ("GET", "/api/hello"): hello,
    ("GET", "/v1/oauth/hello"): hello,
    ("POST", "/v1/messages"): anthropic_message,
    ("POST", "/v1/messages/count_tokens"): anthropic_count_tokens,
    ("GET", "/v1/models"): None,  # per host, below
    ("POST", "/v1/responses"): openai_responses,
}


def models(handler, request):
    host = (handler.headers.get("host") or "")
    (anthropic_models if "anthropic" in host else openai_models)(handler, request)


ROUTES[("GET", "/v1/models")] = models


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=443)
    parser.add_argument("--ca-cert", required=True)
    parser.add_argument("--ca-key", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--events", type=int, default=8)
    parser.add_argument("--gap-ms", type=int, default=500)
    parser.add_argument("--real-key", action="append", default=[])
    parser.add_argument("--framing", choices=("chunked", "length"), default="chunked")
    args = parser.parse_args()
    args.real_keys = set(args.real_key) | {k for k in os.environ.get("FAKE_API_REAL_KEYS", "").split(",") if k}
    leaves = LeafFactory(args.ca_cert, args.ca_key)
    default = leaves.context_for("localhost")

    def choose_leaf(sock, name, unused):
        sock.context = leaves.context_for(name or "localhost")

    default.sni_callback = choose_leaf
    server = Server(("127.0.0.1", args.port), Handler)
    server.socket = default.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)

    # The handshake in the handler's thread, so a slow or failed client holds up no other.
    original = Server.finish_request

    def finish_request(self, sock, address):
        try:
            sock.do_handshake()
        except (ssl.SSLError, OSError) as error:
            log({"kind": "tls-failed", "error": str(error)})
            return
        original(self, sock, address)

    Server.finish_request = finish_request
    print(f"fake_api: listening on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
