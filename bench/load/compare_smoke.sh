#!/usr/bin/env bash
# CI's short form of `sandgate-load compare`: sandgate (HTTP CONNECT and SOCKS5), tinyproxy and
# squid on loopback, one round of short runs of setups and download, as JSON; every target must
# have a summary row with a positive median, no errors and ratios to direct, and a bad target
# must be refused with exit 2. Run in a loopback-only network namespace (ctest runs under
# scripts/offline.sh). A peer that is not installed fails the test: scripts/install-deps.sh
# installs both.
#
#   bench/load/compare_smoke.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: compare_smoke.sh BUILD_DIR}
load=$build/bench/sandgate-load
sandgate=$build/bin/sandgate
work=$(mktemp -d /tmp/sandgate-compare-smoke.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "compare_smoke: $*" >&2; exit 1; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {
  for _ in $(seq 100); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null &&
      return 0
    sleep 0.1
  done
  return 1
}
PATH=$PATH:/usr/sbin
command -v tinyproxy >/dev/null || fail "tinyproxy is not installed (scripts/install-deps.sh)"
command -v squid >/dev/null || fail "squid is not installed (scripts/install-deps.sh)"

: >"$work/blocked.txt"
sandgate_port=$(free_port)
"$sandgate" serve --listen "127.0.0.1:$sandgate_port" --threads 1 --allow-ip=true \
  --block-loopback=false --blocklist "$work/blocked.txt" --log-file "$work/sandgate.log" \
  >/dev/null 2>&1 &
sandgate_pid=$!
pids+=("$sandgate_pid")

tinyproxy_port=$(free_port)
printf 'Port %s\nListen 127.0.0.1\nTimeout 60\nMaxClients 200\nLogLevel Critical\n' \
  "$tinyproxy_port" >"$work/tinyproxy.conf"
tinyproxy -d -c "$work/tinyproxy.conf" >/dev/null 2>&1 &
pids+=($!)

squid_port=$(free_port)
: >"$work/squid-cache.log"
chmod 666 "$work/squid-cache.log"
cat >"$work/squid.conf" <<CONF
http_port 127.0.0.1:$squid_port
visible_hostname sandgate-smoke
http_access allow all
cache deny all
access_log none
cache_store_log none
cache_log $work/squid-cache.log
pid_filename none
icp_port 0
htcp_port 0
shutdown_lifetime 0 seconds
coredump_dir $work
CONF
squid -N -f "$work/squid.conf" >/dev/null 2>&1 &
pids+=($!)

for port in "$sandgate_port" "$tinyproxy_port" "$squid_port"; do
  wait_port "$port" || fail "a proxy did not start listening on $port"
done

"$load" compare "sandgate=127.0.0.1:$sandgate_port" \
  "sandgate-socks=socks5://127.0.0.1:$sandgate_port" "tinyproxy=127.0.0.1:$tinyproxy_port" \
  "squid=127.0.0.1:$squid_port" --pid "sandgate=$sandgate_pid" --workload setups,download \
  --concurrency 4 --rounds 1 --duration 1 --json --plot "$work/chart.svg" >"$work/out.jsonl" \
  2>"$work/err.txt" ||
  fail "compare exited $?: $(cat "$work/err.txt")"

python3 - "$work/out.jsonl" <<'PY' || exit 1
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
summary = [r for r in rows if r.get("summary")]
runs = [r for r in rows if not r.get("summary")]
want = {(t, w) for t in ("direct", "sandgate", "sandgate-socks", "tinyproxy", "squid")
        for w in ("setups", "download")}
got = {(r["target"], r["workload"]) for r in summary}
problems = [f"no summary row for {t} {w}" for t, w in sorted(want - got)]
for r in summary:
    name = f"{r['target']} {r['workload']}"
    if not r["median"] > 0:
        problems.append(f"{name}: median {r['median']}")
    if r["errors"] != 0:
        problems.append(f"{name}: {r['errors']} errors")
    if r["target"] != "direct" and not (r["ratio_to_direct"] or 0) > 0:
        problems.append(f"{name}: no ratio to direct")
    if r["target"] == "sandgate" and r["workload"] == "setups" and "proxy_cpu_us_per_op" not in r:
        problems.append("sandgate setups: no CPU per operation despite --pid")
if len(runs) != len(want):
    problems.append(f"{len(runs)} run lines, expected {len(want)}")
if problems:
    print("compare_smoke: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
PY
# The chart: well-formed SVG with a bar for each proxy at each workload (4 proxies, 2 workloads).
python3 - "$work/chart.svg" <<'PY' || exit 1
import sys, xml.dom.minidom
bars = [r for r in xml.dom.minidom.parse(sys.argv[1]).getElementsByTagName("rect")
        if r.getElementsByTagName("title")]
if len(bars) != 8:
    print(f"compare_smoke: the chart has {len(bars)} bars, expected 8", file=sys.stderr)
    sys.exit(1)
PY
grep -q "CONNECT" "$work/sandgate.log" || fail "sandgate logged no CONNECT: the runs did not go through it"

# A target that is not NAME=HOST:PORT, or not on loopback, is refused with exit 2.
"$load" compare nonsense >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "a target without NAME= was not refused with exit 2"
"$load" compare remote=192.0.2.1:3128 >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "a non-loopback target was not refused with exit 2"
echo "compare_smoke: passed"
