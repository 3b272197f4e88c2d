#!/usr/bin/env bash
# bench/e2e/syscalls.sh: system calls per connection setup of a sandgate binary, from `strace -c`.
# A setups run (CONNECT + 32-byte echo + close, sandgate-load) against one sandgate worker with
# its decision log going to a file; strace attaches to every thread of the gate after start-up
# and detaches before it stops, so the table is the setups' and nothing else. Prints the strace
# table and a last line "PER_SETUP <calls/setup> <setups>".
#
#   unshare -rn bash -c 'ip link set lo up; bench/e2e/syscalls.sh BINARY MODE'
#
# MODE: ip (CONNECT to the origin's address), hosts (CONNECT to "localhost", in the hosts file)
# or dns (CONNECT to a name only the origin's DNS knows, given to the gate by --dns-server).
# Run it inside a network namespace with only loopback: nothing may leave the machine, and the
# dns mode's name must never reach a real name server. Environment: SECONDS_RUN (3), CLIENTS (16).
set -euo pipefail

binary=${1:?usage: syscalls.sh BINARY ip|hosts|dns}
mode=${2:?usage: syscalls.sh BINARY ip|hosts|dns}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
load=${LOAD:-$root/build/bench/sandgate-load}
seconds_run=${SECONDS_RUN:-3}
clients=${CLIENTS:-16}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$load" origin --listen 127.0.0.1:0 --port-file "$work/origin.port" --lifetime 600 --dns \
  >"$work/origin.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -s $work/origin.port ]] && break; sleep 0.05; done
origin=$(cat "$work/origin.port")

# The policy in a folder of its own: the gate watches the folder of its lists, and the trace
# written next to them would wake it once per line.
mkdir "$work/policy"
: >"$work/policy/blocked.txt"
"$binary" serve --listen 127.0.0.1:0 --threads 1 --allow-ip=true --block-loopback=false \
  --blocklist "$work/policy/blocked.txt" --dns-server "$origin" --log-file "$work/decisions.log" \
  --max-connections 10000 --drain-seconds 1 >"$work/gate.out" 2>"$work/gate.err" &
gate=$!
pids+=("$gate")
for _ in $(seq 100); do grep -q '^sandgate listening on ' "$work/gate.out" && break; sleep 0.1; done
proxy=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/gate.out" | head -1)
[[ -n $proxy ]] || { echo "the gate did not start" >&2; cat "$work/gate.err" >&2; exit 1; }

host=()
case $mode in
  ip) ;;
  hosts) host=(--connect-host localhost) ;;
  dns) host=(--connect-host origin.bench.test) ;;
  *) echo "mode: ip, hosts or dns" >&2; exit 2 ;;
esac

# One setup first, so the name is in the cache (the budget is for a cached name), then trace.
"$load" run --proxy "$proxy" --origin "$origin" --workload setups --concurrency 1 \
  --duration 0.2 --warmup 0 "${host[@]}" >/dev/null
strace -c -f -p "$gate" -o "$work/strace.txt" &
tracer=$!
sleep 1  # attached to every thread before the load starts
"$load" run --proxy "$proxy" --origin "$origin" --workload setups --concurrency "$clients" \
  --duration "$seconds_run" --warmup 0 "${host[@]}" >"$work/load.json"
kill -INT "$tracer"
wait "$tracer" 2>/dev/null || true

cat "$work/strace.txt"
setups=$(grep -o '"setups":[0-9]*' "$work/load.json" | head -1 | cut -d: -f2)
errors=$(grep -o '"errors_total":[0-9]*' "$work/load.json" | head -1 | cut -d: -f2)
total=$(awk '$NF == "total" { print $4 }' "$work/strace.txt")
echo "SETUPS $setups ERRORS $errors CALLS $total"
awk -v t="$total" -v s="$setups" 'BEGIN { printf "PER_SETUP %.1f %d\n", t / s, s }'
