#!/usr/bin/env python3
"""The test origins' one SigV4 verifier (an implementation of its own, after AWS's documentation
of Signature Version 4), shared by the HTTP/1.1 echo origin (echo_https_server.py imports it)
and the HTTP/2 origin (node_h2_origin.mjs runs it):

    sigv4_verifier.py SECRET_KEY < REQUEST_JSON

REQUEST_JSON: {"method": ..., "path": ... (as sent, with its query), "headers": [[name, value],
...] (an HTTP/2 request's :authority as its host), "body": base64}. Prints "ok" when the request's
Authorization is a good signature made with SECRET_KEY, else "bad".
"""
import base64
import email.message
import hashlib
import hmac
import json
import sys
import urllib.parse


def sigv4_ok(secret_key, method, raw_path, headers, body):
    """Whether `headers` (an email.message.Message: any case, repeated fields) sign the request
    with `secret_key`."""
    auth = headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False
    params = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    akid, date, region, service, terminal = params["Credential"].split("/")
    signed = params["SignedHeaders"].split(";")
    path, _, query = raw_path.partition("?")
    if service == "s3":
        uri = path or "/"
    else:
        uri = urllib.parse.quote(path or "/", safe="/~")
    pairs = []
    for item in query.split("&") if query else []:
        k, _, v = item.partition("=")
        pairs.append((urllib.parse.quote(urllib.parse.unquote(k), safe="~"),
                      urllib.parse.quote(urllib.parse.unquote(v), safe="~")))
    canonical_query = "&".join(f"{k}={v}" for k, v in sorted(pairs))
    lines = []
    for name in signed:
        values = headers.get_all(name) or []
        lines.append(name + ":" + ",".join(" ".join(v.split()) for v in values) + "\n")
    payload = headers.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest()
    canonical = "\n".join([method, uri, canonical_query, "".join(lines), ";".join(signed), payload])
    amz_date = headers["X-Amz-Date"]
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, params["Signature"])


if __name__ == "__main__":
    request = json.load(sys.stdin)
    fields = email.message.Message()
    for name, value in request["headers"]:
        fields[name] = value
    try:
        ok = sigv4_ok(sys.argv[1], request["method"], request["path"], fields,
                      base64.b64decode(request["body"]))
    except (KeyError, ValueError):
        ok = False  # a malformed Authorization or a missing X-Amz-Date: no good signature
    print("ok" if ok else "bad")
