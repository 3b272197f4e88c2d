#!/usr/bin/env bash
# bench/e2e/profile.sh: where sandgate's CPU time goes during a workload, kernel included, with
# `perf record` sampling the sandgate process (the software cpu-clock event, which works in
# virtual machines without hardware counters). Run the same way as compare.sh: sandgate (one
# worker thread) and the origin pinned to PROXY_CPU, the load tool to LOAD_CPU.
#
#   bench/e2e/profile.sh                          # setups at 16 clients, report to stdout
#   WORKLOAD=download CONCURRENCY=16 OUT=perf-download.txt bench/e2e/profile.sh
#
# Environment: BUILD (build), SANDGATE, WORKLOAD (setups), CONCURRENCY (16), DURATION (8;
# QUICK=1: 4), PROXY_CPU (0), LOAD_CPU (1), OUT (stdout when empty).

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
load=$build/bench/sandgate-load
sandgate=${SANDGATE:-$build/bin/sandgate}
workload=${WORKLOAD:-setups}
concurrency=${CONCURRENCY:-16}
if [[ ${QUICK:-0} == 1 ]]; then duration=${DURATION:-4}; else duration=${DURATION:-8}; fi
proxy_cpu=${PROXY_CPU:-0}
load_cpu=${LOAD_CPU:-1}
out=${OUT:-/dev/stdout}

note() { printf 'profile.sh: %s\n' "$*" >&2; }
if ! command -v perf >/dev/null; then
  note "perf is not installed (apt-get install linux-perf): skipped"
  exit 0
fi
perf record -q -e cpu-clock -o /dev/null true 2>/dev/null ||
  { note "perf record does not work here (perf_event_paranoid, container): skipped"; exit 0; }
[[ -x $sandgate && -x $load ]] || { note "build sandgate and sandgate-load first"; exit 1; }

work=$(mktemp -d /tmp/sandgate-profile.XXXXXX)
mkdir "$work/policy"  # sandgate watches its blocklist's folder: keep other files out of it
cp "$sandgate" "$work/sandgate" && cp "$load" "$work/sandgate-load"
started=()
cleanup() {
  for pid in "${started[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

taskset -c "$proxy_cpu" "$work/sandgate-load" origin --listen 127.0.0.1:0 \
  --port-file "$work/origin.port" --lifetime 3600 >/dev/null 2>&1 &
started+=("$!")
for _ in $(seq 100); do [[ -s $work/origin.port ]] && break; sleep 0.05; done
origin=$(cat "$work/origin.port") || { note "origin did not start"; exit 1; }

: >"$work/policy/blocked.txt"
taskset -c "$proxy_cpu" "$work/sandgate" serve --listen 127.0.0.1:0 --threads 1 --allow-ip=true \
  --block-loopback=false --blocklist "$work/policy/blocked.txt" --drain-seconds 1 \
  >"$work/sandgate.out" 2>/dev/null &
pid=$!
started+=("$pid")
for _ in $(seq 100); do
  grep -q '^sandgate listening on ' "$work/sandgate.out" && break
  sleep 0.1
done
addr=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/sandgate.out" | head -1)
[[ -n $addr ]] || { note "sandgate did not start"; exit 1; }

# Sample for the middle of the run: one second after the load starts until one before it ends.
taskset -c "$load_cpu" "$work/sandgate-load" run --proxy "$addr" --origin "$origin" \
  --workload "$workload" --concurrency "$concurrency" --duration "$duration" \
  >"$work/load.json" 2>"$work/load.txt" &
load_pid=$!
sleep 1
perf record -q -e cpu-clock -F 2000 -g -p "$pid" -o "$work/perf.data" -- \
  sleep "$((duration - 2))" 2>/dev/null
wait "$load_pid"

{
  echo "# perf record -e cpu-clock -g on sandgate (1 worker thread, CPU $proxy_cpu) during"
  echo "# $workload at $concurrency clients; load tool: $(cat "$work/load.txt")"
  echo
  echo "## Share of samples by binary (kernel vs sandgate vs libraries)"
  perf report -i "$work/perf.data" --stdio --no-children --sort dso -g none 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -15
  echo
  # Inclusive time (a function and everything it called): which system calls and which parts of
  # sandgate the time goes to. In a VM, cpu-clock samples pile up where interrupts are enabled
  # again (finish_task_switch, *_irqrestore): read those as "scheduling and wake-ups".
  echo "## Inclusive (children) time, top entries"
  perf report -i "$work/perf.data" --stdio --children --sort symbol -g none \
    --percent-limit 3 2>/dev/null | grep -v '^#' | grep -v '^$' | head -70
  echo
  echo "## Self time, top symbols"
  perf report -i "$work/perf.data" --stdio --no-children --sort dso,symbol -g none \
    --percent-limit 0.5 2>/dev/null | grep -v '^#' | grep -v '^$' | head -50
} | cut -c1-200 | sed -e 's/ *$//' >"$out"  # perf pads every column to the longest name
note "profile of $workload written to $out"
