#!/usr/bin/env python3
"""Asks the fake API for one streamed reply through the proxy the environment names (as an agent
inside `sandgate run` would), with the key from $KEY_VARIABLE, and prints one JSON object: the
status, and the time each event line arrived.

    probe_stream.py URL KEY_VARIABLE

URL's path picks the API: /v1/messages (x-api-key) or /v1/responses (Authorization: Bearer)."""
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse

url, key_variable = sys.argv[1], sys.argv[2]
key = os.environ.get(key_variable, "")
parts = urllib.parse.urlsplit(url)
proxy = urllib.parse.urlsplit(os.environ.get("HTTPS_PROXY") or os.environ["https_proxy"])
context = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
connection = http.client.HTTPSConnection(proxy.hostname, proxy.port, context=context, timeout=60)
connection.set_tunnel(parts.hostname, parts.port or 443)
headers = {"content-type": "application/json"}
if parts.path == "/v1/messages":
    headers.update({"x-api-key": key, "anthropic-version": "2023-06-01"})
else:
    headers["authorization"] = "Bearer " + key
body = json.dumps({"model": "probe", "stream": True, "max_tokens": 64,
                   "messages": [{"role": "user", "content": "probe"}], "input": "probe"})
started = time.time()
connection.request("POST", parts.path, body=body, headers=headers)
response = connection.getresponse()
arrivals = []
while True:
    line = response.readline()
    if not line:
        break
    if line.startswith(b"event:"):
        arrivals.append({"t": round(time.time(), 6), "event": line[6:].strip().decode()})
print(json.dumps({"status": response.status, "started": round(started, 6), "arrivals": arrivals}))
