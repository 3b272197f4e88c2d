#!/usr/bin/env python3
"""Splits a perf profile of sandgate-inspect under https-setups by handshake side.

Reads `perf script -F comm,ip,sym,dso` (call graphs recorded with --call-graph dwarf) on stdin
and charges every sample to the origin-side TLS handshake (Asio's handshake io_op on the plain
TCP socket to the origin), the client-side one (the io_op on the gate's PrefixedSocket), or
neither; then, per side, the share of samples under a few OpenSSL and libc entry points
(inclusive: a sample counts once for every one of them on its stack).

    perf script -i perf.data -F comm,ip,sym,dso | python3 handshake_sides.py
"""
import collections
import re
import sys

KEYS = ["ASN1_item_d2i", "EVP_DigestVerifyFinal", "X509_verify_cert", "OSSL_DECODER",
        "EVP_PKEY_generate", "EVP_PKEY_derive", "EVP_DigestSignFinal", "SSL_new", "SSL_free",
        "__libc_send", "__libc_recv", "epoll", "connect", "close", "malloc", "free",
        "pthread_rwlock", "OPENSSL_cleanse"]


def samples(lines):
    current = None
    for line in lines:
        if not line.strip():
            if current is not None:
                yield current
            current = None
        elif not line.startswith((" ", "\t")):
            current = []
        else:
            m = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
            if m and current is not None:
                current.append((m.group(1), m.group(2).split("/")[-1]))
    if current:
        yield current


def side(stack):
    for symbol, _ in stack:
        if "handshake_op" in symbol and "io_op<boost::asio::basic_stream_socket" in symbol:
            return "origin-side handshake"
        if "handshake_op" in symbol and "PrefixedSocket" in symbol:
            return "client-side handshake"
    return "neither (accept, connect, HTTP, close, Asio, kernel)"


def main():
    stacks = list(samples(sys.stdin))
    total = len(stacks)
    count = collections.Counter()
    under = collections.defaultdict(collections.Counter)
    for stack in stacks:
        where = side(stack)
        count[where] += 1
        for key in {k for symbol, _ in stack for k in KEYS if k in symbol}:
            under[where][key] += 1
    print(f"{total} samples")
    for where, n in count.most_common():
        print(f"{where}: {100 * n / total:.1f}%")
        for key, m in under[where].most_common(12):
            print(f"    {key}: {100 * m / total:.1f}%")


if __name__ == "__main__":
    main()
