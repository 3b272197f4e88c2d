#!/usr/bin/env python3
"""Checks one run of bench/agents/run.sh and prints what it found (and RUN/summary.json):

    summarize.py RUN_FOLDER claude|claude-tty|codex

- the agent's answer arrived (the fake API's whole text, "SANDGATE-OK w1 ... wN");
- the key inside the sandbox was a sentinel (same length, not the real key);
- the fake API saw the real key on the API host (and never anything else in a credential field);
- when each streamed text delta reached the agent (its own output, timestamped line by line, for
  claude -p's stream-json) and reached a plain client inside the same run (the probe), against
  when the fake API sent it;
- the hosts the agent reached and the gate refused, and the requests it made, from the gate's log.
Exits 1 when a check fails."""
import collections
import json
import os
import re
import statistics
import sys

run, mode = sys.argv[1], sys.argv[2]
project = os.path.join(run, "home", "project")


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def json_lines(path):
    records = []
    for line in read(path).splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            pass
    return records


api_host = "api.openai.com" if mode == "codex" else "api.anthropic.com"
delta_event = "response.output_text.delta" if mode == "codex" else "content_block_delta"
real_key = read(os.path.join(run, "real-key"))
log = json_lines(os.path.join(run, "requests.jsonl"))
requests = [r for r in log if r.get("kind") == "request"]
sent = collections.defaultdict(list)
for record in log:
    if record.get("kind") == "sent" and record["event"] == delta_event:
        sent[record["id"]].append(record["t"])
times = read(os.path.join(run, "times")).split()
summary = {"mode": mode, "run": run, "exit_status": int(times[2]) if len(times) > 2 else None,
           "seconds": round(float(times[1]) - float(times[0]), 2) if len(times) > 2 else None}
failures = []

# The answer.
answer = "SANDGATE-OK" + "".join(f" w{i}" for i in range(1, max((len(v) for v in sent.values()), default=1)))
output = read(os.path.join(run, "agent.out")) + read(os.path.join(run, "screen-1.txt"))
summary["answer_arrived"] = answer in output or answer in output.replace("\n", " ")
if not summary["answer_arrived"] and mode != "claude-tty":
    failures.append("the agent's output does not hold the answer " + answer)

# The key inside.
key_variable = os.environ.get("KEY_VARIABLE", "the key variable")
inside = read(os.path.join(project, "key-inside")).strip() or read(os.path.join(run, "key-inside")).strip()
summary["key_inside"] = ("absent" if not inside else "REAL KEY" if inside == real_key else
                         f"sentinel ({len(inside)} characters, real {len(real_key)}, "
                         f"prefix {os.path.commonprefix([inside, real_key])!r} kept)")
if inside == real_key and os.environ.get("MASK", "1") != "0":
    failures.append(f"the sandbox saw the real {key_variable}")

# What the API saw.
seen = collections.Counter()
for request in requests:
    if request["host"] == api_host:
        kinds = set(request["credentials"].values()) - {"present"}
        seen["real" if kinds == {"real"} else "none" if not kinds else "other"] += 1
summary["api_requests_by_key"] = dict(seen)
if not seen["real"]:
    failures.append(f"no request reached {api_host} with the real key")
if seen["other"]:
    failures.append(f"{seen['other']} requests reached {api_host} with a key that is not the real one")
summary["requests"] = [f"{r['method']} {r['host']}{r['path'].split('?')[0]}"
                       + (f" upgrade={r['upgrade']}" if r.get("upgrade") else "") for r in requests]


def delays(sent_times, received_times):
    """Per event: received - sent, in ms, and how many later events had been sent by then."""
    pairs = list(zip(sent_times, received_times))
    lags = [round((received - sent_at) * 1000, 1) for sent_at, received in pairs]
    behind = [sum(1 for later in sent_times[i + 1:] if later <= received) for i, (_, received) in enumerate(pairs)]
    if not lags:
        return None
    return {"events": len(lags), "median_ms": statistics.median(lags), "max_ms": max(lags),
            "per_event_ms": lags, "events_behind": behind}


# The stream as the agent saw it (claude -p prints each delta; codex exec prints no deltas).
agent_lines = json_lines(os.path.join(project, "agent-lines.jsonl"))
agent_deltas = []
for record in agent_lines:
    try:
        line = json.loads(record["line"])
    except ValueError:
        continue
    event = line.get("event") or {}
    if line.get("type") == "stream_event" and event.get("type") == "content_block_delta":
        agent_deltas.append(record["t"])
    if mode == "codex" and line.get("type", "").endswith("delta"):
        agent_deltas.append(record["t"])
agent_streams = [r for r in requests if r.get("stream") and r.get("model") != "probe" and sent.get(r["id"])]
if agent_streams and agent_deltas:
    summary["agent_stream"] = delays(sent[agent_streams[0]["id"]], agent_deltas)
elif agent_streams:
    answer_lines = [r["t"] for r in agent_lines if "SANDGATE-OK" in r["line"]]
    last_sent = sent[agent_streams[-1]["id"]][-1]
    summary["agent_stream"] = {"note": "the agent prints no deltas; its answer line came "
                               f"{round((answer_lines[0] - last_sent) * 1000, 1)} ms after the last delta was sent"
                               if answer_lines else "the agent printed no answer line"}

# The stream as the interactive agent showed it: when each word first showed on the screen.
tty = json.loads(read(os.path.join(run, "tty.json"), "null") or "null")
if tty:
    summary["interactive"] = [{k: r[k] for k in ("run", "asked", "answer_shown", "exit")} for r in tty]
    first = tty[0]
    streams = [r for r in requests if r.get("stream") and first["typed_at"] and r["t"] > first["typed_at"]
               and len(sent.get(r["id"], [])) > 1]
    if streams and first["words_seen"]:
        words = ["SANDGATE-OK"] + [f"w{i}" for i in range(1, len(sent[streams[0]["id"]]))]
        shown = [first["words_seen"][w] for w in words if w in first["words_seen"]]
        if len(shown) == len(words):
            summary["agent_stream"] = delays(sent[streams[0]["id"]], shown)
    if not any(r["answer_shown"] for r in tty):
        failures.append("the interactive agent never showed the answer")

# The stream as a plain client inside the same run saw it.
probe = read(os.path.join(project, "probe.json"))
probe_requests = [r for r in requests if r.get("model") == "probe"]
if probe and probe_requests:
    arrivals = [a["t"] for a in json.loads(probe)["arrivals"] if a["event"] == delta_event]
    summary["probe_stream"] = delays(sent[probe_requests[0]["id"]], arrivals)

# Codex's WebSocket transport: its handshakes reach the API as plain GETs (the gate removes
# Upgrade); how many, and how long until the first streamed POST (its fallback to HTTPS).
handshakes = [r for r in requests if r["method"] == "GET" and r["path"].startswith("/v1/responses")]
posts = [r for r in requests if r["method"] == "POST" and r["path"].startswith("/v1/responses")]
if handshakes:
    summary["websocket"] = {"handshakes": len(handshakes),
                            "with_websocket_headers": sum(1 for r in handshakes if r.get("websocket_headers")),
                            "seconds_lost": round(posts[0]["t"] - handshakes[0]["t"], 2) if posts else None}

# The gate's log.
gate_log = read(os.path.join(run, "gate.log"))
hosts = collections.Counter(re.findall(r" ALLOW CONNECT (\S+) ", gate_log))
denials = collections.Counter(re.findall(r" (?:BLOCK|WOULD-BLOCK) [A-Z]+ (\S+) \(([a-z-]+)\)", gate_log))
summary["hosts_allowed"] = dict(hosts)
summary["denied"] = {f"{host} {reason}": n for (host, reason), n in denials.items()}
summary["gate_warnings"] = [line[25:220] for line in gate_log.splitlines()
                            if re.search(r"secret-refused|upgrade|websocket|warning|error", line, re.I)][:12]

with open(os.path.join(run, "summary.json"), "w") as out:
    json.dump(summary, out, indent=1)
for name in ("mode", "exit_status", "seconds", "answer_arrived", "key_inside", "api_requests_by_key"):
    print(f"{name}: {summary[name]}")
if "websocket" in summary:
    print("websocket:", summary["websocket"])
for entry in summary.get("interactive", []):
    print("interactive:", entry)
for name in ("agent_stream", "probe_stream"):
    if name in summary:
        value = summary[name]
        if value and "per_event_ms" in value:
            print(f"{name}: {value['events']} deltas, delay median {value['median_ms']} ms, max {value['max_ms']} ms;"
                  f" per event {value['per_event_ms']} ms; events behind {value['events_behind']}")
        else:
            print(f"{name}: {value}")
print("hosts reached:", summary["hosts_allowed"])
print("denied:", summary["denied"] or "none")
print("requests:", ", ".join(f"{k} x{v}" for k, v in collections.Counter(summary["requests"]).items()))
for line in summary["gate_warnings"]:
    print("gate:", line)
for failure in failures:
    print("FAIL:", failure)
print("checks:", "FAILED" if failures else "passed", f"(run folder {run})")
sys.exit(1 if failures else 0)
