#!/usr/bin/env python3
"""A real gRPC server and client (Debian's python3-grpcio), with no generated code: the methods
take and return raw bytes. For the HTTP/2 inspection tests.

  grpc_peer.py serve PORT CERT KEY TOKEN
      /test.Echo/Say (unary: answers b"said: " + the request), /test.Echo/Count (server
      streaming: N messages for a request of N as text), /test.Echo/Delete (unary: answers
      b"deleted"), /test.Echo/Whoami (unary: "real token" when the call's authorization
      metadata is "Bearer TOKEN", else "another token"), over TLS.
  grpc_peer.py call PROXY_PORT HOST PORT CA METHOD TEXT [BEARER]
      Calls METHOD through the gate as an HTTPS proxy (grpc's https_proxy support: CONNECT),
      trusting CA; prints `ok <answers>` or `error <StatusCode name> <details>`.
"""
import os
import sys
import time
from concurrent import futures

import grpc


def identity(x):
    return x


def serve(port, cert, key, token):
    def say(request, context):
        return b"said: " + request

    def count(request, context):
        for i in range(int(request.decode())):
            yield ("part %d" % i).encode()

    def delete(request, context):
        return b"deleted"

    def whoami(request, context):
        metadata = dict(context.invocation_metadata())
        return b"real token" if metadata.get("authorization") == "Bearer " + token else b"another token"

    handlers = {
        "Say": grpc.unary_unary_rpc_method_handler(say, identity, identity),
        "Count": grpc.unary_stream_rpc_method_handler(count, identity, identity),
        "Delete": grpc.unary_unary_rpc_method_handler(delete, identity, identity),
        "Whoami": grpc.unary_unary_rpc_method_handler(whoami, identity, identity),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", handlers),))
    with open(cert, "rb") as c, open(key, "rb") as k:
        credentials = grpc.ssl_server_credentials([(k.read(), c.read())])
    server.add_secure_port("127.0.0.1:%d" % port, credentials)
    server.start()
    server.wait_for_termination()


def call(proxy_port, host, port, ca, method, text, bearer=None):
    os.environ["https_proxy"] = "http://127.0.0.1:%d" % proxy_port
    os.environ["grpc_proxy"] = "http://127.0.0.1:%d" % proxy_port
    with open(ca, "rb") as f:
        credentials = grpc.ssl_channel_credentials(f.read())
    channel = grpc.secure_channel("%s:%d" % (host, port), credentials)
    try:
        if method == "Count":
            stub = channel.unary_stream("/test.Echo/Count", identity, identity)
            answers = [m.decode() for m in stub(text.encode(), timeout=20)]
        else:
            stub = channel.unary_unary("/test.Echo/" + method, identity, identity)
            metadata = (("authorization", "Bearer " + bearer),) if bearer else None
            answers = [stub(text.encode(), timeout=20, metadata=metadata).decode()]
        print("ok " + "|".join(answers))
    except grpc.RpcError as error:
        print("error %s %s" % (error.code().name, error.details()))
    channel.close()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        call(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7],
             sys.argv[8] if len(sys.argv) > 8 else None)
