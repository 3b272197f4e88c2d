#!/usr/bin/env python3
"""bench/e2e/inspection_profile.py: a gate profile's self time, grouped by where it goes.

Reads `perf report --stdio --no-children --sort dso,symbol -g none` output (as inspection.sh
writes it) and sums the self-time percentages into the groups the inspection benchmark reports:
the kernel, OpenSSL (libssl: the handshake and record layer; libcrypto: the arithmetic under
it), nghttp2 (bench/e2e/http2.sh's profiles), the gate's certificate authority (minting and its cache), Asio, the gate's own parsing and
policy, the C/C++ runtime (allocation, copies), and the rest. The C++ symbols are demangled by
perf; the rules below match their namespaces.

    python3 bench/e2e/inspection_profile.py perf-https-self.txt
"""
import re
import sys

# First match wins: (group, dso pattern, symbol pattern).
RULES = [
    ("kernel", r"\[kernel", r""),
    ("OpenSSL libssl (handshake, records)", r"libssl", r""),
    ("OpenSSL libcrypto (EC, AES-GCM, SHA, X.509, ASN.1)", r"libcrypto", r""),
    ("nghttp2 (HTTP/2 frames, HPACK)", r"libnghttp2", r""),
    ("certificate minting and cache (gate)", r"", r"certificate_authority|leaf_cache|mint"),
    ("Asio (reactor, handlers, TLS stream glue)", r"", r"boost::asio|asio::"),
    ("HTTP parsing, policy, log (gate)", r"", r"sandgate::|boost::beast|rules::"),
    ("C/C++ runtime (malloc, memcpy, strings)", r"libc\.so|libstdc\+\+|ld-linux", r""),
]


def group_of(dso, symbol):
    for name, dso_pattern, symbol_pattern in RULES:
        if dso_pattern and not re.search(dso_pattern, dso):
            continue
        if symbol_pattern and not re.search(symbol_pattern, symbol):
            continue
        return name
    return "other (sandgate binary, unresolved)" if "sandgate" in dso else f"other ({dso})"


def main():
    totals = {}
    top = {}
    line_format = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*)$")
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                match = line_format.match(line)
                if not match:
                    continue
                share, dso = float(match[1]), match[2]
                # perf pads empty sort columns with "-": not part of the name.
                symbol = re.sub(r"(\s+-)+$", "", match[3].strip())
                group = group_of(dso, symbol)
                totals[group] = totals.get(group, 0.0) + share
                top.setdefault(group, []).append((share, symbol))
    print("| where | self time | top symbols |")
    print("|---|---:|---|")
    for group, share in sorted(totals.items(), key=lambda item: -item[1]):
        symbols = ", ".join(f"`{s[:60]}` {p:.1f}%" for p, s in sorted(top[group], reverse=True)[:3])
        print(f"| {group} | {share:.1f}% | {symbols} |")


if __name__ == "__main__":
    main()
