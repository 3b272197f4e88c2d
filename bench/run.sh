#!/usr/bin/env bash
# bench/run.sh: the whole benchmark in one go, what `make bench` runs. In order:
#   1. the component micro-benchmarks (bench/run-micro.sh);
#   2. the end-to-end comparison, suite "main": sandgate vs no proxy vs the least possible proxy
#      (limit) vs tinyproxy vs squid, proxy and origin on one core, load on the other: setups at
#      1/16/256 clients, download and upload through 1/16/256 tunnels, plain HTTP on kept-alive
#      connections, memory per idle tunnel; then suite "logging": setups with the decision log
#      on standard error into a file, into a pipe, to --log-file, and at level error;
#   3. suite "blocklist": setups by name through a 1,000,000-entry blocklist vs the default one;
#   4. suite "scaling": sandgate with 2 worker threads vs 1, everything on both cores; suite
#      "owncore": the origin on the load tool's core, so the proxy has a core to itself;
#   5. instructions per setup / request / KiB relayed (callgrind) and a perf profile of setups;
#   6. the summary (markdown, CSV, JSON) and one PNG plot per workload.
# Results land in bench/results/DATE/ (small files, meant to be committed); the markdown summary
# is also printed. Every figure that depends on the machine's speed is a ratio to "no proxy"
# measured in the same rounds: the machine may be shared and busy.
#
#   make bench                 # everything, 3 rounds (about 25 minutes)
#   QUICK=1 make bench         # 1 round, fewer levels, shorter runs (about 4 minutes)
#   bench/run.sh               # the same without rebuilding; ROUNDS, DURATION, ... as compare.sh
#
# Environment: BUILD (build), QUICK (0), RESULTS (the results folder), SKIP (space-separated
# steps to leave out: micro main logging blocklist scaling owncore instructions profile plots).

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# Proxies, load and origins run in a network namespace with only loopback: nothing leaves the
# machine, DNS included (scripts/offline.sh; it says so where namespaces are unavailable, and
# machine.json records which).
if [[ -z "${SANDGATE_OFFLINE:-}" ]]; then
  exec "$root/scripts/offline.sh" "$0" "$@"
fi
export BUILD=${BUILD:-$root/build}
export QUICK=${QUICK:-0}
skip=" ${SKIP:-} "
note() { printf '\nbench/run.sh: %s\n' "$*" >&2; }
wanted() { [[ $skip != *" $1 "* ]]; }

for binary in "$BUILD/bin/sandgate" "$BUILD/bench/sandgate-load"; do
  [[ -x $binary ]] || { note "$binary is missing: run make build (or make bench) first"; exit 1; }
done

# A fresh folder per run: today's date, or today's date and time when today already has one.
results=${RESULTS:-$here/results/$(date -u +%F)}
if [[ -z ${RESULTS:-} && -e $results ]]; then
  results=$here/results/$(date -u +%F-%H%M)
fi
mkdir -p "$results"
raw=$results/e2e.jsonl
: >"$raw"
started_at=$(date +%s)
note "results go to $results (QUICK=$QUICK)"

# The machine, recorded next to the numbers: model, cores, kernel, clock, load while running.
python3 - "$results/machine.json" "$root" "$QUICK" <<'EOF'
import json, os, platform, subprocess, sys, datetime
out, root, quick = sys.argv[1], sys.argv[2], sys.argv[3]
def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=root).stdout.strip()
    except OSError:
        return ""
lscpu = {}
for line in run("lscpu").splitlines():
    if ":" in line:
        key, value = line.split(":", 1)
        lscpu[key.strip()] = value.strip()
mhz = None
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("cpu MHz"):
            mhz = float(line.split(":")[1])
            break
commit = run("git", "rev-parse", "--short", "HEAD")
dirty = run("git", "status", "--porcelain", "--", "proxy", "rules", "config")
memory = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "?")
json.dump({
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "model": lscpu.get("Model name", platform.processor()),
    "cpus": os.cpu_count(),
    "threads_per_core": lscpu.get("Thread(s) per core"),
    "hypervisor": lscpu.get("Hypervisor vendor", "none"),
    "caches": {k: lscpu[k] for k in ("L1d cache", "L2 cache", "L3 cache") if k in lscpu},
    "cpu_mhz": mhz,
    "memory_kb": int(memory) if memory.isdigit() else None,
    "kernel": platform.release(),
    "os": run("sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"),
    "commit": commit + ("+local changes" if dirty else ""),
    "quick": quick == "1",
    "network": ("own network namespace, loopback only" if os.environ.get("SANDGATE_OFFLINE") == "1"
                else "the machine's network: no namespace was available"),
    "load_average_start": open("/proc/loadavg").read().split()[:3],
}, open(out, "w"), indent=1)
EOF
lscpu >"$results/lscpu.txt" 2>/dev/null

# 1. Micro-benchmarks, with their JSON kept.
if wanted micro; then
  note "1/6 micro-benchmarks"
  JSON_DIR=$results "$here/run-micro.sh" >&2 || note "micro-benchmarks failed"
fi

# 2-4. The end-to-end suites, all into one raw file (each line tagged with its suite).
if wanted main; then
  note "2/6 end-to-end comparison (suite main)"
  SUITE=main RAW=$raw "$here/e2e/compare.sh" >"$results/compare-main.md"
fi
if wanted logging; then
  note "2b/6 the decision log by destination (suite logging)"
  if [[ $QUICK == 1 ]]; then log_rounds=${ROUNDS:-2}; else log_rounds=${ROUNDS:-4}; fi
  SUITE=logging RAW=$raw ROUNDS=$log_rounds WORKLOADS=setups SETUP_LEVELS=16 \
    TARGETS="none limit sandgate sandgate-logfile sandgate-pipe sandgate-quiet" \
    "$here/e2e/compare.sh" >"$results/compare-logging.md"
fi
if wanted blocklist; then
  note "3/6 1,000,000-entry blocklist (suite blocklist)"
  # A name of five labels: the lookup probes one slot for each label count the list holds.
  # More rounds than usual: the difference looked for is a few percent.
  if [[ $QUICK == 1 ]]; then bl_rounds=${ROUNDS:-2}; else bl_rounds=${ROUNDS:-5}; fi
  SUITE=blocklist RAW=$raw ROUNDS=$bl_rounds TARGETS="none sandgate sandgate-1m" \
    WORKLOADS=setups SETUP_LEVELS=16 CONNECT_HOST=cdn.api.origin.sandgate-bench.com \
    "$here/e2e/compare.sh" >"$results/compare-blocklist.md"
fi
if wanted scaling; then
  note "4/6 two worker threads on both cores (suite scaling)"
  # Nothing pinned to one core: sandgate's workers, the origin and the load tool's two threads
  # share both cores, as they would on a laptop.
  if [[ $QUICK == 1 ]]; then levels="16"; else levels="16 256"; fi
  SUITE=scaling RAW=$raw TARGETS="none sandgate sandgate-t2" WORKLOADS="setups download http" \
    PROXY_CPU=0,1 ORIGIN_CPU=0,1 LOAD_CPU=0,1 LOAD_THREADS=2 SETUP_LEVELS="$levels" \
    STREAM_LEVELS=16 HTTP_LEVELS=16 "$here/e2e/compare.sh" >"$results/compare-scaling.md"
fi

# 4b. Suite "owncore": the origin moves to the load tool's core, so the proxy has a core of its
# own; this asks whether the proxy keeps up rather than what it costs the origin.
if wanted owncore; then
  note "4b/6 the proxy on a core of its own (suite owncore)"
  SUITE=owncore RAW=$raw ORIGIN_CPU=1 TARGETS="none sandgate squid" \
    WORKLOADS="setups download upload" SETUP_LEVELS=16 STREAM_LEVELS=16 \
    "$here/e2e/compare.sh" >"$results/compare-owncore.md"
fi

# 5. Instruction counts (callgrind) and a kernel-inclusive profile of setups (perf).
if wanted instructions; then
  note "5/6 instructions per operation (callgrind)"
  OUT=$results/instructions.json PROFILE_OUT=$results/callgrind-setups.txt \
    "$here/e2e/instructions.sh" || note "instruction counts failed"
fi
if wanted profile; then
  OUT=$results/perf-setups.txt "$here/e2e/profile.sh" || note "perf profile failed"
fi

# 6. Summary and plots.
note "6/6 summary and plots"
python3 - "$results/machine.json" "$started_at" <<'EOF'
import json, sys, time
path, started = sys.argv[1], int(sys.argv[2])
machine = json.load(open(path))
machine["load_average_end"] = open("/proc/loadavg").read().split()[:3]
machine["minutes"] = round((time.time() - started) / 60, 1)
json.dump(machine, open(path, "w"), indent=1)
EOF
summary_args=(--machine "$results/machine.json" --csv "$results/summary.csv"
  --json "$results/summary.json")
[[ -s $results/instructions.json ]] && summary_args+=(--instructions "$results/instructions.json")
for micro in "$results"/*_bench.json; do
  [[ -s $micro ]] && summary_args+=(--micro "$micro")
done
python3 "$here/e2e/summarize.py" "$raw" "${summary_args[@]}" \
  -- none limit sandgate sandgate-logfile sandgate-pipe sandgate-quiet sandgate-t2 sandgate-1m \
  tinyproxy squid >"$results/summary.md"
if wanted plots; then
  python3 "$here/plot.py" "$results/summary.json" "$results" || note "plots failed"
fi
cat "$results/summary.md"
note "done in $(( ($(date +%s) - started_at) / 60 )) min; results in $results"
