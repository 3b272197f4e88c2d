#!/usr/bin/env bash
# bench/e2e/compare.sh: sandgate-load side by side against no proxy (the limit), sandgate,
# tinyproxy and squid, on loopback, the proxy pinned to one core and the load tool to the other.
# Prints medians and ratios to "no proxy" as markdown on stdout; progress goes to stderr; raw
# JSON lines go to build/bench-results/. What each number means: bench/e2e/README.md.
#
#   bench/e2e/compare.sh                 # 3 rounds, setups at 1/16/256, 5 s runs
#   QUICK=1 bench/e2e/compare.sh         # setups at 16 only, 2 s runs
#   ROUNDS=5 TARGETS="none sandgate" bench/e2e/compare.sh
#
# Environment: ROUNDS (3), QUICK (0), TARGETS ("none sandgate tinyproxy squid"), DURATION (5,
# quick 2), SETUP_LEVELS ("1 16 256", quick "16"), STREAM_LEVELS ("1 16"), IDLE_TUNNELS (10000),
# PROXY_CPU (0), LOAD_CPU (1), ORIGIN_CPU (same as PROXY_CPU), NICE (0), BUILD (build),
# SANDGATE (its binary).

# Not -e: one target failing must leave the others' results standing.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
load=$build/bench/sandgate-load
sandgate=${SANDGATE:-$build/bin/sandgate}
rounds=${ROUNDS:-3}
quick=${QUICK:-0}
targets=(${TARGETS:-none sandgate tinyproxy squid})
if [[ $quick == 1 ]]; then
  duration=${DURATION:-2}
  setup_levels=(${SETUP_LEVELS:-16})
else
  duration=${DURATION:-5}
  setup_levels=(${SETUP_LEVELS:-1 16 256})
fi
stream_levels=(${STREAM_LEVELS:-1 16})
idle_tunnels=${IDLE_TUNNELS:-10000}
proxy_cpu=${PROXY_CPU:-0}
load_cpu=${LOAD_CPU:-1}
# The origin shares the proxy's core: then every cycle the proxy spends is a cycle the origin
# lacks, so proxy overhead shows in the numbers instead of hiding in an idle core (README).
origin_cpu=${ORIGIN_CPU:-$proxy_cpu}
# NICE=-5 (as root) favours the measured processes over whatever else the machine runs; off by
# default because on a shared machine that slows everyone else down.
niceness=${NICE:-0}

note() { printf 'compare.sh: %s\n' "$*" >&2; }
notes=()  # caveats gathered on the way, repeated under the table

# ---- prerequisites ---------------------------------------------------------------------------

if [[ ! -x $load ]]; then
  note "building sandgate-load"
  (cd "$root" && cmake --preset release >/dev/null && cmake --build "$build" \
    --target sandgate-load -j 2 >/dev/null) || { note "cannot build $load"; exit 1; }
fi
if ! command -v taskset >/dev/null || (($(nproc) < 2)); then
  note "no taskset or fewer than 2 cores: running unpinned"
  notes+=("Processes were not pinned (no taskset or a single core).")
  pin() { shift; exec nice -n "$niceness" "$@"; }
else
  pin() { local cpu=$1; shift; exec nice -n "$niceness" taskset -c "$cpu" "$@"; }
fi
# pin execs, so `pin CPU CMD &` leaves $! the command's own PID (taskset execs too): the PID
# whose memory is read and which is stopped. Only ever call it in a subshell (& or a pipe).

# Debian's tinyproxy and squid, installed on first use when we are root and asked for them.
want() { [[ " ${targets[*]} " == *" $1 "* ]]; }
missing=()
want tinyproxy && ! command -v tinyproxy >/dev/null && missing+=(tinyproxy)
want squid && ! command -v squid >/dev/null && [[ ! -x /usr/sbin/squid ]] && missing+=(squid)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    note "installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 &&
        apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; } ||
      note "apt-get could not install ${missing[*]}"
  else
    note "${missing[*]} missing and not root: skipped"
  fi
fi
PATH=$PATH:/usr/sbin

# Idle tunnels cost the proxy two descriptors each (client and origin side) plus its own few.
ulimit -Sn "$(ulimit -Hn)" 2>/dev/null
fd_limit=$(ulimit -Sn)
if [[ $fd_limit != unlimited ]] && ((2 * idle_tunnels + 1000 > fd_limit)); then
  ulimit -Hn $((2 * idle_tunnels + 1000)) 2>/dev/null && ulimit -Sn $((2 * idle_tunnels + 1000))
  fd_limit=$(ulimit -Sn)
  if ((2 * idle_tunnels + 1000 > fd_limit)); then
    reduced=$(((fd_limit - 1000) / 2))
    notes+=("Idle: ${reduced} tunnels instead of ${idle_tunnels}: the descriptor limit is \
${fd_limit} and cannot be raised here; a proxy needs 2 descriptors per tunnel.")
    note "${notes[-1]}"
    idle_tunnels=$reduced
  fi
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
results_dir=$build/bench-results
mkdir -p "$results_dir"
raw=$results_dir/compare-$stamp.jsonl
work=$(mktemp -d /tmp/sandgate-compare.XXXXXX)
# squid drops to its own user and must still reach its config and log in here.
chmod 755 "$work"
# Private copies of the load tool and sandgate, so a rebuild by someone else mid-run cannot swap
# or remove a binary between rounds: every round measures the same builds.
cp "$load" "$work/sandgate-load" && load=$work/sandgate-load
if want sandgate && [[ -x $sandgate ]] && cp "$sandgate" "$work/sandgate"; then
  note "sandgate: measuring a copy of $sandgate ($(stat -c %y "$sandgate" | cut -d. -f1))"
  sandgate=$work/sandgate
fi

# ---- processes -------------------------------------------------------------------------------

declare -A proxy_addr proxy_pid
started=()

stop_pid() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

cleanup() {
  for pid in "${started[@]}"; do stop_pid "$pid"; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits until PID listens on PORT (without connecting to it: a probe would count as a client).
wait_listening() {
  local pid=$1 port=$2
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 1
    [[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]] && return 0
    sleep 0.1
  done
  return 1
}

start_origin() {
  pin "$origin_cpu" "$load" origin --listen 127.0.0.1:0 --port-file "$work/origin.port" \
    --lifetime 7200 >"$work/origin.out" 2>&1 &
  origin_pid=$!
  started+=("$origin_pid")
  for _ in $(seq 100); do
    [[ -s $work/origin.port ]] && break
    sleep 0.05
  done
  origin=$(cat "$work/origin.port" 2>/dev/null) || { note "origin did not start"; exit 1; }
}

start_sandgate() {
  [[ -x $sandgate ]] || { note "sandgate: $sandgate not built: skipped"; return 1; }
  : >"$work/blocked.txt"
  # Enough connection slots for the idle test; an empty blocklist of its own so the user's file
  # (which may be large) does not change the numbers; a short drain so it stops at once.
  local args=(serve --listen 127.0.0.1:0 --port-file "$work/sandgate.port" --threads 1
    --allow-ip=true --block-loopback=false --max-connections $((idle_tunnels + 1000))
    --blocklist "$work/blocked.txt" --drain-seconds 1)
  local attempt
  for attempt in full minimal; do
    [[ $attempt == minimal ]] && args=("${args[@]:0:9}")
    : >"$work/sandgate.out"
    # The decision log (one line per tunnel) is part of sandgate's cost: kept, sent nowhere.
    pin "$proxy_cpu" "$sandgate" "${args[@]}" >"$work/sandgate.out" 2>/dev/null &
    local pid=$!
    for _ in $(seq 100); do
      grep -q '^sandgate listening on ' "$work/sandgate.out" && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    local addr
    addr=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/sandgate.out" | head -1)
    if [[ -n $addr ]]; then
      started+=("$pid")
      proxy_pid[sandgate]=$pid
      proxy_addr[sandgate]=$addr
      return 0
    fi
    stop_pid "$pid"
  done
  note "sandgate did not start: skipped"
  return 1
}

start_tinyproxy() {
  command -v tinyproxy >/dev/null || { note "tinyproxy not installed: skipped"; return 1; }
  local port
  port=$(free_port)
  # No ConnectPort line: CONNECT to every port. No Allow line: every client. No LogFile or
  # Syslog, LogLevel Critical: nothing written per request. MaxClients covers the idle test.
  cat >"$work/tinyproxy.conf" <<EOF
Port $port
Listen 127.0.0.1
Timeout 600
MaxClients $((idle_tunnels + 1000))
LogLevel Critical
DisableViaHeader Yes
EOF
  pin "$proxy_cpu" tinyproxy -d -c "$work/tinyproxy.conf" >"$work/tinyproxy.out" 2>&1 &
  local pid=$!
  started+=("$pid")
  wait_listening "$pid" "$port" || { note "tinyproxy did not start: skipped"; return 1; }
  proxy_pid[tinyproxy]=$pid
  proxy_addr[tinyproxy]=127.0.0.1:$port
}

start_squid() {
  command -v squid >/dev/null || { note "squid not installed: skipped"; return 1; }
  local port
  port=$(free_port)
  # Squid refuses to run as root and switches to its own user, so its log is made writable.
  : >"$work/squid-cache.log"
  chmod 666 "$work/squid-cache.log"
  # No cache, no access or store log, no pid file, no ICP/HTCP; every client and port allowed.
  cat >"$work/squid.conf" <<EOF
http_port 127.0.0.1:$port
visible_hostname sandgate-bench
http_access allow all
cache deny all
access_log none
cache_store_log none
cache_log $work/squid-cache.log
pid_filename none
logfile_rotate 0
max_filedescriptors $fd_limit
icp_port 0
htcp_port 0
shutdown_lifetime 0 seconds
coredump_dir $work
EOF
  pin "$proxy_cpu" squid -N -f "$work/squid.conf" >"$work/squid.out" 2>&1 &
  local pid=$!
  started+=("$pid")
  wait_listening "$pid" "$port" || { note "squid did not start: skipped"; return 1; }
  proxy_pid[squid]=$pid
  proxy_addr[squid]=127.0.0.1:$port
}

start_target() {
  local target=$1
  unset "proxy_pid[$target]" "proxy_addr[$target]"
  case $target in
    none) proxy_addr[none]=none ;;
    sandgate) start_sandgate ;;
    tinyproxy) start_tinyproxy ;;
    squid) start_squid ;;
    *) note "unknown target $target: skipped"; return 1 ;;
  esac
}

stop_target() {
  local pid=${proxy_pid[$1]:-}
  [[ -n $pid ]] && stop_pid "$pid"
  unset "proxy_pid[$1]" "proxy_addr[$1]"
}

# One measurement: the tool's JSON line, tagged with the round, appended to the raw file.
measure() {
  local target=$1 round=$2
  shift 2
  local addr=${proxy_addr[$target]:-}
  [[ -n $addr ]] || return 0
  pin "$load_cpu" "$load" run --proxy "$addr" --origin "$origin" --label "$target" "$@" |
    sed -e "s/^{/{\"run_id\":\"$stamp\",\"round\":$round,/" >>"$raw"
}

# ---- rounds ----------------------------------------------------------------------------------

note "targets: ${targets[*]}; $rounds round(s) of ${duration} s runs; raw results: $raw"
start_origin
declare -A rounds_measured
for ((round = 1; round <= rounds; ++round)); do
  # Rotate the order every round so no target always runs first (or right after a heavy one).
  order=()
  for ((i = 0; i < ${#targets[@]}; ++i)); do
    order+=("${targets[$(((i + round - 1) % ${#targets[@]}))]}")
  done
  note "round $round/$rounds: ${order[*]}"

  # Fresh proxies for every round; they all wait idle while another one is measured.
  for target in "${order[@]}"; do
    start_target "$target" && rounds_measured[$target]=$((${rounds_measured[$target]:-0} + 1))
  done
  for level in "${setup_levels[@]}"; do
    for target in "${order[@]}"; do
      measure "$target" "$round" --workload setups --concurrency "$level" --duration "$duration"
    done
  done
  for workload in download upload; do
    for level in "${stream_levels[@]}"; do
      for target in "${order[@]}"; do
        measure "$target" "$round" --workload "$workload" --concurrency "$level" \
          --duration "$duration"
      done
    done
  done
  for target in "${order[@]}"; do stop_target "$target"; done

  # Idle memory on a freshly started proxy, so the heap left by the runs above cannot hide
  # the cost of new tunnels. No proxy, no memory to price.
  for target in "${order[@]}"; do
    [[ $target == none ]] && continue
    start_target "$target" || continue
    measure "$target" "$round" --workload idle --concurrency "$idle_tunnels" --duration 2 \
      --proxy-pid "${proxy_pid[$target]}" --timeout 10
    stop_target "$target"
  done
done
stop_pid "$origin_pid"

for target in "${targets[@]}"; do
  count=${rounds_measured[$target]:-0}
  if ((count == 0)); then
    notes+=("$target: not available, skipped.")
  elif ((count < rounds)); then
    notes+=("$target: available in $count of $rounds rounds only; its medians are over those.")
  fi
done

# ---- report ----------------------------------------------------------------------------------

machine="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
printf '<!-- sandgate-load compare %s: %s; %s round(s) of %s s runs; CPU: proxy %s, ' \
  "$stamp" "$machine" "$rounds" "$duration" "$proxy_cpu"
printf 'origin %s, load %s; raw: %s -->\n' "$origin_cpu" "$load_cpu" "$raw"
python3 "$root/bench/e2e/summarize.py" "$raw" "${targets[@]}"
if ((${#notes[@]})); then
  printf '\nNotes:\n'
  printf -- '- %s\n' "${notes[@]}"
fi
