#!/usr/bin/env bash
# CI's short form of bench/e2e/http2.sh, so the HTTP/2 workloads cannot rot: sandgate-load's
# origin (TLS, h2 by ALPN) and an inspecting gate on loopback, then very short runs of h2 straight
# to the origin and through the gate, and of h2-hold, https-hold and https through the gate. Each
# run must complete its work with no errors (h2: with ALPN h2 on both hops, since the gate offers
# h2 to a client only when the origin chose it, and the tool counts anything else as an error);
# the hold workloads must keep every connection and stream and price them; the gate must have
# logged the requests it inspected. No timing is asserted. Run in a loopback-only network
# namespace (ctest runs under scripts/offline.sh).
#
#   bench/load/h2_smoke.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: h2_smoke.sh BUILD_DIR}
load=$build/bench/sandgate-load
sandgate=$build/bin/sandgate
name=origin.smoke.example
work=$(mktemp -d /tmp/sandgate-h2-smoke.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "h2_smoke: $*" >&2; exit 1; }
[[ -x $load && -x $sandgate ]] || fail "build sandgate and sandgate-load first"

# The origin's CA and leaf (EC P-256), and the gate's own CA; the clients trust both.
ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ec_key "$work/ca-key.pem"
openssl req -x509 -new -key "$work/ca-key.pem" -subj "/CN=h2 smoke CA" -days 1 \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
  -out "$work/ca.pem" 2>/dev/null || fail "openssl cannot make the test CA"
ec_key "$work/origin-key.pem"
openssl req -new -key "$work/origin-key.pem" -subj "/CN=$name" -out "$work/origin.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' "$name" >"$work/ext"
openssl x509 -req -in "$work/origin.csr" -CA "$work/ca.pem" -CAkey "$work/ca-key.pem" \
  -CAcreateserial -days 1 -extfile "$work/ext" -out "$work/origin.pem" 2>/dev/null ||
  fail "openssl cannot sign the origin's certificate"
"$sandgate" ca --ca-dir "$work/gate-ca" >/dev/null 2>&1 || fail "sandgate ca failed"
cat "$work/ca.pem" "$work/gate-ca/ca.pem" >"$work/bundle.pem"

"$load" origin --listen 127.0.0.1:0 --port-file "$work/origin.port" --lifetime 120 --dns \
  --tls-cert "$work/origin.pem" --tls-key "$work/origin-key.pem" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -s $work/origin.port ]] && break; sleep 0.05; done
origin=$(cat "$work/origin.port" 2>/dev/null) || fail "the origin did not start"

mkdir "$work/policy"
: >"$work/policy/blocked.txt"
"$sandgate" serve --listen 127.0.0.1:0 --threads 1 --allow-ip=true --block-loopback=false \
  --blocklist "$work/policy/blocked.txt" --dns-server "$origin" --tls-ports "${origin##*:}" \
  --inspect "$name" --ca-dir "$work/gate-ca" --inspect-extra-ca "$work/ca.pem" \
  --log-file "$work/gate.log" >"$work/gate.out" 2>"$work/gate.err" &
gate_pid=$!
pids+=("$gate_pid")
for _ in $(seq 100); do grep -q '^sandgate listening on ' "$work/gate.out" && break; sleep 0.1; done
gate=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/gate.out" | head -1)
[[ -n $gate ]] || fail "the gate did not start: $(tail -2 "$work/gate.err")"

run() {
  local label=$1
  shift
  "$load" run --origin "$origin" --connect-host "$name" --ca-file "$work/bundle.pem" \
    --label "$label" "$@" >>"$work/runs.jsonl" 2>>"$work/err.txt" ||
    fail "$label exited $?: $(tail -1 "$work/err.txt")"
}
run h2-none --proxy none --workload h2 --concurrency 2 --streams 4 --duration 1
run h2-inspect --proxy "$gate" --proxy-pid "$gate_pid" --workload h2 --concurrency 2 --streams 4 \
  --duration 1
run h2-hold --proxy "$gate" --proxy-pid "$gate_pid" --workload h2-hold --concurrency 4 --streams 3 \
  --duration 0.2 --settle 0.2
run https-hold --proxy "$gate" --proxy-pid "$gate_pid" --workload https-hold --concurrency 4 \
  --streams 1 --duration 0.2 --settle 0.2
# HTTP/1.1 last: the gate keeps its HTTP/1.1 origin connections idle for the next client, and a
# client given one of those is answered in HTTP/1.1 even when it offered h2.
run h1-inspect --proxy "$gate" --proxy-pid "$gate_pid" --workload https --concurrency 8 --duration 1

python3 - "$work/runs.jsonl" <<'PY' || exit 1
import json, sys
runs = {r["label"]: r for r in map(json.loads, open(sys.argv[1]))}
problems = []
held = {"h2-hold": (4, 4, 12), "https-hold": (4, 4, 4)}
for label in ("h2-none", "h2-inspect", "h1-inspect", "h2-hold", "https-hold"):
    r = runs.get(label)
    if r is None:
        problems.append(f"{label}: no result")
        continue
    if r["errors_total"] != 0:
        problems.append(f"{label}: errors {r['errors']}")
    if label in held:
        got = (r["connections_open"], r["connections_alive"], r["streams_open"])
        if got != held[label]:
            problems.append(f"{label}: (open, kept, streams held) {got}, wanted {held[label]}")
        for field in ("anon_kb_per_connection", "rss_kb_per_connection", "anon_kb_per_stream"):
            if r.get(field) is None:
                problems.append(f"{label}: no {field} despite --proxy-pid")
        continue
    if not r["requests"] > 0 or not r["latency_us"]["p99"] > 0:
        problems.append(f"{label}: {r['requests']} requests")
    if label.startswith("h2") and (r["streams"], r["connections"]) != (4, 2):
        problems.append(f"{label}: {r['connections']} connections x {r['streams']} streams")
    if label.endswith("inspect") and not r.get("proxy_cpu_s"):
        problems.append(f"{label}: no gate CPU despite --proxy-pid")
if problems:
    print("h2_smoke: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
PY
# The gate judged and logged each request it relayed (both protocols log a line per request).
grep -q "ALLOW GET $name:${origin##*:} .*path=/32" "$work/gate.log" ||
  fail "the gate logged no inspected GET: the runs did not go through its inspection"

# An h2 run with no stream, or --streams on a workload without streams, is refused with exit 2.
"$load" run --proxy none --origin "$origin" --workload h2 --streams 0 --ca-file "$work/bundle.pem" \
  >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "--workload h2 --streams 0 was not refused with exit 2"
"$load" run --proxy none --origin "$origin" --workload https --streams 4 \
  --ca-file "$work/bundle.pem" >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "--streams with the https workload was not refused with exit 2"
echo "h2_smoke: passed"
