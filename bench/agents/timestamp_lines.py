#!/usr/bin/env python3
"""Copies standard input to standard output, and each line, with the time it was read, to
FILE as a JSON line: {"t": seconds since the epoch, "line": text}."""
import json
import sys
import time

with open(sys.argv[1], "a") as out:
    for raw in sys.stdin.buffer:
        now = time.time()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        out.write(json.dumps({"t": round(now, 6), "line": raw.decode(errors="replace").rstrip("\n")}) + "\n")
        out.flush()
