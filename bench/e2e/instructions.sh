#!/usr/bin/env bash
# bench/e2e/instructions.sh: how many instructions sandgate executes per tunnel setup, per
# plain-HTTP request and per KiB relayed, counted by valgrind's callgrind. Counts, unlike times,
# do not drift with what else the machine runs, so they show a change in sandgate's own cost
# even on a busy shared machine. (`perf stat -e instructions` would be cheaper, but virtual
# machines often expose no hardware counters: this script checks and says which it used.)
#
# Method: each scenario starts a fresh sandgate under callgrind, drives one workload for
# DURATION seconds and stops it; an "idle" scenario does the same with no load. A scenario's
# instructions minus the idle run's (start-up, timers, shutdown: the same in both), divided by
# what the load tool completed, is the cost per operation. Only user-space instructions are
# counted: the kernel's share (TCP, splice) is in compare.sh's CPU-time figures instead.
#
#   bench/e2e/instructions.sh                  # writes instructions.json to the current folder
#   OUT=dir/instructions.json PROFILE_OUT=dir/callgrind-setups.txt bench/e2e/instructions.sh
#
# Environment: BUILD (build), SANDGATE (its binary), DURATION (8; QUICK=1: 4), OUT, PROFILE_OUT
# (callgrind_annotate's top functions for the setups scenario; empty: not written).

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
load=$build/bench/sandgate-load
sandgate=${SANDGATE:-$build/bin/sandgate}
if [[ ${QUICK:-0} == 1 ]]; then duration=${DURATION:-4}; else duration=${DURATION:-8}; fi
out=${OUT:-instructions.json}
profile_out=${PROFILE_OUT:-}

note() { printf 'instructions.sh: %s\n' "$*" >&2; }

if ! command -v valgrind >/dev/null; then
  note "valgrind is not installed (apt-get install valgrind): skipped"
  exit 0
fi
[[ -x $sandgate && -x $load ]] || { note "build sandgate and sandgate-load first"; exit 1; }

work=$(mktemp -d /tmp/sandgate-instructions.XXXXXX)
# The blocklist's folder holds nothing else: sandgate watches it, and writes to other files there
# would wake its watcher thread and count as per-setup work.
mkdir "$work/policy"
# Copies, so a rebuild during the run cannot change what is measured.
cp "$sandgate" "$work/sandgate" && cp "$load" "$work/sandgate-load"
# The started processes, stopped on exit (with $work): processes.sh. Under valgrind the shutdown
# is slow (and callgrind writes its file at exit): up to 60 s each.
stop_wait_tenths=600
source "$here/processes.sh"

# Whether the machine counts instructions in hardware: recorded, for the reader.
if perf stat -x, -e instructions true 2>&1 >/dev/null | grep -q '^[0-9]'; then
  counter="perf stat would work here; callgrind used for its per-function breakdown"
else
  counter="no hardware instruction counter (perf stat -e instructions: not supported); callgrind"
fi
note "$counter"

"$work/sandgate-load" origin --listen 127.0.0.1:0 --port-file "$work/origin.port" \
  --lifetime 3600 >/dev/null 2>&1 &
started+=("$!")
for _ in $(seq 100); do [[ -s $work/origin.port ]] && break; sleep 0.05; done
origin=$(cat "$work/origin.port") || { note "origin did not start"; exit 1; }

# One scenario: sandgate under callgrind, the load (or a sleep), stop; prints
# "INSTRUCTIONS OPS" where OPS is what the load completed (setups, requests, bytes).
scenario() {
  local name=$1 workload=$2 concurrency=$3
  : >"$work/$name.out"
  : >"$work/policy/blocked.txt"
  # As in compare.sh, the decision log (one line per tunnel) is written, to /dev/null.
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.$name" \
    --log-file="$work/valgrind.$name.log" \
    "$work/sandgate" serve --listen 127.0.0.1:0 --threads 1 --allow-ip=true \
    --block-loopback=false --blocklist "$work/policy/blocked.txt" --drain-seconds 1 \
    >"$work/$name.out" 2>/dev/null &
  local pid=$!
  started+=("$pid")
  local addr=
  for _ in $(seq 600); do
    addr=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/$name.out" | head -1)
    [[ -n $addr ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $addr ]] || { note "$name: sandgate did not start under valgrind"; return 1; }
  local ops=0
  if [[ $workload == idle ]]; then
    sleep "$duration"
  else
    # No warm-up: every operation the proxy did while the load ran is counted.
    "$work/sandgate-load" run --proxy "$addr" --origin "$origin" --workload "$workload" \
      --concurrency "$concurrency" --duration "$duration" --warmup 0 --timeout 30 \
      >"$work/$name.json" 2>/dev/null
    ops=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r.get("setups") or r.get("requests") or r.get("bytes") or 0)' "$work/$name.json")
  fi
  stop_pid "$pid"
  local total
  total=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$work/callgrind.$name" | head -1)
  [[ -n $total ]] || { note "$name: no callgrind summary"; return 1; }
  echo "$total $ops"
}

note "idle baseline ($duration s under callgrind)"
read -r idle_total _ < <(scenario idle idle 0) || exit 1
results=()
for spec in "setups setups 1 setup" "http http 1 request" "download download 1 KiB"; do
  read -r name workload concurrency unit <<<"$spec"
  note "$name: $workload, $concurrency client(s), $duration s under callgrind"
  read -r total ops < <(scenario "$name" "$workload" "$concurrency") || continue
  results+=("$name $total $ops $unit")
done

if [[ -n $profile_out && -f $work/callgrind.setups ]]; then
  # The functions that executed the most instructions of their own (exclusive) in the setups
  # run, start-up included (the idle run's total, shown in the JSON, bounds that share).
  {
    echo "# callgrind, setups scenario: $duration s at 1 client, start-up and shutdown included"
    echo "# (the idle run's $idle_total instructions bound their share)."
    echo "## Exclusive: instructions executed in the function itself"
    callgrind_annotate --inclusive=no --threshold=95 "$work/callgrind.setups" 2>/dev/null |
      sed -n '/^Ir/,$p' | sed -n '1,70p'
    echo
    echo "## Inclusive: the function and everything it called"
    callgrind_annotate --inclusive=yes --threshold=99 "$work/callgrind.setups" 2>/dev/null |
      sed -n '/^Ir/,$p' | sed -n '1,90p'
  } | cut -c1-220 | sed -e 's/ *$//' >"$profile_out"  # C++ names run long: their start is enough
fi

python3 - "$out" "$idle_total" "$duration" "$counter" "${results[@]}" <<'EOF'
import json, sys
out, idle, duration, counter = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
scenarios = []
for spec in sys.argv[5:]:
    name, total, ops, unit = spec.split()
    total, ops = int(total), int(ops)
    if unit == "KiB":
        ops //= 1024  # the load tool reports bytes
    work = total - idle
    scenarios.append({"name": name, "unit": unit, "ops": ops, "instructions": work,
                      "instructions_total": total,
                      "per_unit": work / ops if ops else None})
with open(out, "w") as f:
    json.dump({"tool": "callgrind", "counter": counter, "duration_s": duration,
               "idle_instructions": idle, "scenarios": scenarios}, f, indent=1)
    f.write("\n")
for s in scenarios:
    per = "-" if s["per_unit"] is None else f"{s['per_unit']:,.0f}"
    print(f"instructions.sh: {s['name']}: {s['ops']:,} {s['unit']}s, "
          f"{per} instructions per {s['unit']}", file=sys.stderr)
EOF
