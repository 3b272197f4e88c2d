#!/usr/bin/env bash
# bench/e2e/http2.sh: what HTTP/2 through the inspecting gate costs, against HTTP/1.1 through the
# same gate and against no proxy. sandgate-load's h2 and https workloads side by side, rounds
# alternated and rotated as in compare.sh:
#   h2-inspect   HTTP/2 through `sandgate serve --inspect NAME` (ALPN h2 both sides: the gate
#                offers h2 to the client because the client offered it and the origin chose it)
#   h1-inspect   HTTP/1.1 (the https workload: kept-alive TLS connections) through the same gate
#   h2-none      HTTP/2 straight to the origin
#   h1-none      HTTP/1.1 straight to the origin
# at the same total concurrency: LEVELS concurrent requests (16, 64, 256), spread over
# H2_CONNECTIONS (4) HTTP/2 connections (LEVEL / 4 streams in flight on each), or one HTTP/1.1
# connection per request in flight. Each run opens its connections first and counts only after a
# warm-up (WARMUP seconds) that covers their handshakes: what is compared is requests on open
# connections, not connection setup (inspection.sh's https-setups measures that). The gate (one
# worker thread) and the origin are pinned to one core, the load tool to the other. Then, each
# on a freshly started gate, the h2-hold and https-hold workloads: the gate's memory per idle
# inspected connection (IDLE_CONNECTIONS of them, each having carried one request) and per open
# request (HOLD_STREAMS streams on each HTTP/2 connection, one request on each HTTP/1.1 one, held
# open by the origin's /hold, which sends a head and never the body). Prints the tables as
# markdown on stdout (bench/e2e/http2_summary.py), progress on stderr, one JSON line per run to
# $RAW. Then, each round, setups: SETUPS_LEVELS clients each opening a connection per request
# (h2-setups: connect, CONNECT, TLS offering h2, one stream, close; https-setups for HTTP/1.1),
# what the gate's shared origin connections save a client that does not keep its own. With
# BASELINE=/path/to/an/older/sandgate the inspect targets run twice in every round, the older
# binary as h2-inspect-base and h1-inspect-base: the summary's "against the baseline" table is
# the ratio of the two builds in the same rounds. With PROFILE=1 (the default when perf works) the gate is then profiled (`perf record`, as
# inspection.sh does) under h2 and under https at PROFILE_LEVEL requests in flight, into
# $PROFILE_DIR. Run offline:
#
#   scripts/offline.sh bench/e2e/http2.sh
#   QUICK=1 scripts/offline.sh bench/e2e/http2.sh       # 1 round, 2 s runs, fewer connections
#
# Environment: ROUNDS (3; QUICK 1), DURATION (5; QUICK 2: seconds counted, after the warm-up),
# WARMUP (3; QUICK 1.5), LEVELS ("16 64 256"), SETUPS_LEVELS ("16"; "" for none), BASELINE (an
# older sandgate binary: none), H2_CONNECTIONS (4), TARGETS ("h2-inspect h1-inspect h2-none
# h1-none", and h2-inspect-base h1-inspect-base with BASELINE), IDLE_CONNECTIONS (500; QUICK 100), HOLD_STREAMS (16; QUICK 8), MEMORY (1: run
# the hold workloads), PROFILE (1 when perf works), PROFILE_LEVEL (64), PROFILE_SECONDS (4),
# PROFILE_DIR (build/bench-results/http2-STAMP), PROXY_CPU (0), LOAD_CPU (1), ORIGIN_CPU
# (PROXY_CPU), ORIGIN_NAME (origin.bench.example), PAYLOAD (32: response body bytes), SUITE
# (http2), RAW (build/bench-results/http2-STAMP.jsonl), BUILD (build), SANDGATE (its binary).

# Not -e: one target failing must leave the others' results standing.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
load=$build/bench/sandgate-load
sandgate=${SANDGATE:-$build/bin/sandgate}
quick=${QUICK:-0}
if [[ $quick == 1 ]]; then
  rounds=${ROUNDS:-1} duration=${DURATION:-2} warmup=${WARMUP:-1.5}
  idle_connections=${IDLE_CONNECTIONS:-100} hold_streams=${HOLD_STREAMS:-8}
else
  rounds=${ROUNDS:-3} duration=${DURATION:-5} warmup=${WARMUP:-3}
  idle_connections=${IDLE_CONNECTIONS:-500} hold_streams=${HOLD_STREAMS:-16}
fi
levels=(${LEVELS:-16 64 256})
setups_levels=(${SETUPS_LEVELS-16})
baseline=${BASELINE:-}
h2_connections=${H2_CONNECTIONS:-4}
default_targets="h2-inspect h1-inspect h2-none h1-none"
[[ -n $baseline ]] && default_targets+=" h2-inspect-base h1-inspect-base"
targets=(${TARGETS:-$default_targets})
memory=${MEMORY:-1}
proxy_cpu=${PROXY_CPU:-0}
load_cpu=${LOAD_CPU:-1}
origin_cpu=${ORIGIN_CPU:-$proxy_cpu}
origin_name=${ORIGIN_NAME:-origin.bench.example}
payload=${PAYLOAD:-32}
suite=${SUITE:-http2}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=${RAW:-$build/bench-results/http2-$stamp.jsonl}
profile_dir=${PROFILE_DIR:-$build/bench-results/http2-$stamp}
profile_level=${PROFILE_LEVEL:-64}
profile_seconds=${PROFILE_SECONDS:-4}

note() { printf 'http2.sh: %s\n' "$*" >&2; }
notes=()

# ---- prerequisites ---------------------------------------------------------------------------

[[ -x $load ]] || { note "build sandgate-load first (cmake --build build --target sandgate-load)"; exit 1; }
[[ -x $sandgate ]] || note "no sandgate binary at $sandgate (SANDGATE=...): the inspect targets are skipped"
if [[ -z ${SANDGATE_OFFLINE:-} ]]; then
  note "not under scripts/offline.sh: nothing here dials out, but the namespace makes sure"
fi
for level in "${levels[@]}"; do
  ((level % h2_connections == 0)) ||
    { note "LEVELS: $level is not a multiple of H2_CONNECTIONS ($h2_connections)"; exit 2; }
done
if ! command -v taskset >/dev/null || (($(nproc) < 2)); then
  notes+=("Processes were not pinned (no taskset or a single core).")
  pin() { shift; exec "$@"; }
else
  pin() { local cpu=$1; shift; exec taskset -c "$cpu" "$@"; }
fi
# pin execs, so `pin CPU CMD &` leaves $! the command's own PID. Only call it in a subshell.
if ! command -v perf >/dev/null || ! perf record -q -e cpu-clock -o /dev/null true 2>/dev/null; then
  profile=${PROFILE:-0}
else
  profile=${PROFILE:-1}
fi

mkdir -p "$(dirname "$raw")"
work=$(mktemp -d /tmp/sandgate-http2.XXXXXX)
mkdir "$work/policy"  # sandgate watches its blocklist's folder: nothing else is written there
cp "$load" "$work/sandgate-load" && load=$work/sandgate-load
if [[ -x $sandgate ]] && cp "$sandgate" "$work/sandgate"; then
  note "sandgate: measuring a copy of $sandgate ($(stat -c %y "$sandgate" | cut -d. -f1))"
  sandgate=$work/sandgate
fi
if [[ -n $baseline ]]; then
  if [[ -x $baseline ]] && cp "$baseline" "$work/sandgate-base"; then
    note "baseline: a copy of $baseline ($(stat -c %y "$baseline" | cut -d. -f1))"
    baseline=$work/sandgate-base
  else
    note "BASELINE=$baseline is not an executable: the -base targets are skipped"
    baseline=
  fi
fi

# The started gates and the origin, stopped on exit (with $work), and the steps shared with
# inspection.sh and compare.sh: bench/e2e/processes.sh.
source "$here/processes.sh"

# ---- certificates ----------------------------------------------------------------------------

# The origin's test CA and its leaf (the origin's name and 127.0.0.1); the gate makes its own CA
# (`sandgate ca`). The clients trust both, as inspection.sh's do.
make_origin_certificates "$origin_name"
cp "$work/origin-ca.pem" "$work/bundle.pem"
if [[ -x $sandgate ]] && "$sandgate" ca --ca-dir "$work/gate-ca" >/dev/null 2>&1; then
  cat "$work/gate-ca/ca.pem" >>"$work/bundle.pem"
else
  note "sandgate ca --ca-dir failed: the inspect targets will fail their handshakes"
fi

# ---- processes -------------------------------------------------------------------------------

# The origin: HTTP/1.1 and HTTP/2 inside TLS (chosen by ALPN), and DNS, so the gate resolves the
# origin's name to it.
start_origin --dns --tls-cert "$work/origin.pem" --tls-key "$work/origin-key.pem"

# The inspecting gate, as inspection.sh's sandgate-inspect: one worker thread, an empty
# blocklist, loopback allowed, the origin's name inspected (its certificate verified against the
# origin's test CA), names resolved by the origin's DNS, the decision log to a file. BINARY: the
# gate measured (the baseline's for the -base targets).
start_gate() {
  local name=$1 binary=${2:-$sandgate}
  [[ -x $binary ]] || { note "$name: no sandgate binary: skipped"; return 1; }
  : >"$work/policy/blocked.txt"
  start_sandgate_serve "$name" "$binary" --listen 127.0.0.1:0 --threads 1 --allow-ip=true \
    --block-loopback=false --blocklist "$work/policy/blocked.txt" --dns-server "$origin" \
    --tls-ports "$origin_port" --max-connections 4096 --drain-seconds 1 \
    --inspect "$origin_name" --ca-dir "$work/gate-ca" --inspect-extra-ca "$work/origin-ca.pem"
}

start_target() {
  local target=$1
  unset "proxy_pid[$target]" "proxy_addr[$target]"
  case $target in
    h2-none | h1-none) proxy_addr[$target]=none ;;
    h2-inspect | h1-inspect) start_gate "$target" ;;
    h2-inspect-base | h1-inspect-base) start_gate "$target" "$baseline" ;;
    *) note "unknown target $target: skipped"; return 1 ;;
  esac
}

# One run of the load tool as TARGET in ROUND at $level (processes.sh's run_load), every client
# asking for the origin's name and verifying certificates against the bundle.
run_target() {
  local target=$1 round=$2
  shift 2
  run_load "$target" "\"round\":$round,\"level\":$level," --origin "$origin" --label "$target" \
    --connect-host "$origin_name" --ca-file "$work/bundle.pem" --payload "$payload" "$@"
}

# TARGET at LEVEL requests in flight: h2 on H2_CONNECTIONS connections, h1 on LEVEL connections;
# counted over DURATION seconds after WARMUP.
measure() {
  local target=$1 round=$2
  local timing=(--warmup "$warmup" --duration "$(python3 -c "print($warmup + $duration)")")
  if [[ $target == h2-* ]]; then
    run_target "$target" "$round" --workload h2 --concurrency "$h2_connections" \
      --streams "$((level / h2_connections))" "${timing[@]}"
  else
    run_target "$target" "$round" --workload https --concurrency "$level" "${timing[@]}"
  fi
}

# TARGET with LEVEL clients, each opening a connection for every request: h2-setups (one stream
# on each) or https-setups. Recorded with level 0 and the clients as concurrency.
measure_setups() {
  local target=$1 round=$2 clients=$3 level=0
  local timing=(--warmup "$warmup" --duration "$(python3 -c "print($warmup + $duration)")")
  local workload=https-setups
  [[ $target == h2-* ]] && workload=h2-setups
  run_target "$target" "$round" --workload "$workload" --concurrency "$clients" "${timing[@]}"
}

load_average() { cut -d' ' -f1-3 /proc/loadavg; }

# ---- rounds ----------------------------------------------------------------------------------

note "suite $suite: targets ${targets[*]}; levels ${levels[*]} (h2 on $h2_connections \
connections); $rounds round(s) of runs counting ${duration} s after a ${warmup} s warm-up; CPUs gate $proxy_cpu, origin $origin_cpu, \
load $load_cpu; raw: $raw"
notes+=("Load average at the start: $(load_average) (the machine's 1, 5 and 15 minute means).")
declare -A rounds_measured
for ((round = 1; round <= rounds; ++round)); do
  rotate_targets "$round"
  note "round $round/$rounds: ${order[*]} (load average $(load_average))"
  start_targets
  for level in "${levels[@]}"; do
    for target in "${order[@]}"; do
      measure "$target" "$round"
    done
  done
  for clients in "${setups_levels[@]}"; do
    for target in "${order[@]}"; do
      measure_setups "$target" "$round" "$clients"
    done
  done
  for target in "${order[@]}"; do stop_target "$target"; done

  # Memory, each on a gate started fresh for it (a heap grown by the rates above would hide it).
  if [[ $memory == 1 ]]; then
    level=0
    for label in h2-hold https-hold ${baseline:+h2-hold-base https-hold-base}; do
      workload=${label%-base}
      binary=$sandgate
      [[ $label == *-base ]] && binary=$baseline
      start_gate "$label" "$binary" || continue
      streams=$hold_streams
      [[ $workload == https-hold ]] && streams=1
      run_target "$label" "$round" --workload "$workload" --concurrency "$idle_connections" \
        --streams "$streams" --duration 2 --timeout 10
      stop_target "$label"
    done
  fi
done
# ---- profile ---------------------------------------------------------------------------------

# Where the gate's CPU goes under each protocol at PROFILE_LEVEL requests in flight: perf's
# software cpu-clock (no hardware counters needed) on a fresh gate, the middle seconds of a run,
# DWARF unwinding (Debian's libcrypto and libnghttp2 have no frame pointers); self time grouped by
# bench/e2e/inspection_profile.py, inclusive time by function. Round 0 in the raw file.
if [[ $profile == 1 ]]; then
  mkdir -p "$profile_dir"
  level=$profile_level
  for target in h2-inspect h1-inspect; do
    start_target "$target" || continue
    counted=$duration
    duration=$((profile_seconds + 2))
    measure "$target" 0 &
    load_job=$!
    sleep "$(python3 -c "print($warmup + 1)")"
    perf_record "${proxy_pid[$target]}" "$profile_seconds"
    wait "$load_job"
    duration=$counted
    prefix=$profile_dir/perf-$target-$profile_level
    perf_report "$prefix"
    note "profile of $target at $profile_level in flight: $prefix-*"
    stop_target "$target"
  done
fi
stop_pid "$origin_pid"
notes+=("Load average at the end: $(load_average).")

record_notes "${targets[@]}"

# ---- report ----------------------------------------------------------------------------------

machine="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
printf '<!-- sandgate-load http2 %s: %s; %s round(s) of %s s counted after %s s of warm-up; ' \
  "$stamp" "$machine" "$rounds" "$duration" "$warmup"
printf 'CPU: gate %s, origin %s, ' "$proxy_cpu" "$origin_cpu"
printf 'load %s; raw: %s -->\n' "$load_cpu" \
  "$(realpath --relative-to="$root" "$raw" 2>/dev/null || echo "$raw")"
python3 "$here/http2_summary.py" "$raw"
