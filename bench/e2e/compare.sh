#!/usr/bin/env bash
# bench/e2e/compare.sh: sandgate-load side by side against no proxy, the least possible proxy
# (limit: bench/limit-proxy), sandgate, tinyproxy and squid, on loopback, the proxy pinned to one
# core and the load tool to the other.
# Prints medians and ratios to "no proxy" as markdown on stdout; progress goes to stderr; raw
# JSON lines (one per run) go to $RAW. What each number means: bench/e2e/README.md. The whole
# benchmark (micro-benchmarks, this script three times, instruction counts, plots) is
# bench/run.sh, i.e. `make bench`.
#
#   bench/e2e/compare.sh                 # 3 rounds of every workload, 5 s runs
#   QUICK=1 bench/e2e/compare.sh         # 1 round, 16 clients/tunnels only, 2 s runs
#   ROUNDS=5 TARGETS="none sandgate" bench/e2e/compare.sh
#
# Targets: none, limit (bench/limit-proxy: one thread, epoll, read/write, no policy, no log),
# sandgate (1 worker thread, the decision log on standard error redirected to a file, as systemd,
# containers and launchers run it), sandgate-logfile (the log to --log-file), sandgate-pipe (standard
# error into a pipe a reader drains to a file, like the journal), sandgate-quiet (--log-level
# error: nothing logged per connection), sandgate-t2 (2 worker threads), sandgate-1m (1
# worker thread, a 1,000,000-entry blocklist), sandgate-budgets (1 worker thread, egress budgets
# that count every tunnel: `*` and the origin's address, up, down and connections, amounts far
# above what a run moves, so nothing is cut and only the counting costs), sandgate-b (the build in SANDGATE_B, run like
# sandgate: an A/B test of a candidate change, side by side in the same rounds), tinyproxy, squid.
#
# Environment: ROUNDS (3; quick 1), QUICK (0), TARGETS ("none limit sandgate tinyproxy squid"),
# WORKLOADS ("setups download upload http idle"), DURATION (5; quick 2), SETUP_LEVELS ("1 16
# 256"; quick "16"), STREAM_LEVELS ("1 16 256"; quick "16"), HTTP_LEVELS ("16 256"; quick "16"),
# IDLE_TUNNELS (10000; quick 2000), PROXY_CPU (0), LOAD_CPU (1), ORIGIN_CPU (same as PROXY_CPU),
# LOAD_THREADS (1), CONNECT_HOST (empty: CONNECT to the origin's IP; a name: sandgate targets
# CONNECT to that name and resolve it through the origin's DNS), SUITE ("main", copied into every
# JSON line), RAW (the JSON lines file; default BUILD/bench-results/compare-STAMP.jsonl), NICE
# (0), BUILD (build), SANDGATE (its binary), SANDGATE_B (the binary of target sandgate-b).

# Not -e: one target failing must leave the others' results standing.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
load=$build/bench/sandgate-load
limit_proxy=$build/bench/sandgate-limit-proxy
sandgate=${SANDGATE:-$build/bin/sandgate}
sandgate_b=${SANDGATE_B:-}
quick=${QUICK:-0}
targets=(${TARGETS:-none limit sandgate tinyproxy squid})
workloads=(${WORKLOADS:-setups download upload http idle})
if [[ $quick == 1 ]]; then
  rounds=${ROUNDS:-1}
  duration=${DURATION:-2}
  setup_levels=(${SETUP_LEVELS:-16})
  stream_levels=(${STREAM_LEVELS:-16})
  http_levels=(${HTTP_LEVELS:-16})
  idle_tunnels=${IDLE_TUNNELS:-2000}
else
  rounds=${ROUNDS:-3}
  duration=${DURATION:-5}
  setup_levels=(${SETUP_LEVELS:-1 16 256})
  stream_levels=(${STREAM_LEVELS:-1 16 256})
  http_levels=(${HTTP_LEVELS:-16 256})
  idle_tunnels=${IDLE_TUNNELS:-10000}
fi
proxy_cpu=${PROXY_CPU:-0}
load_cpu=${LOAD_CPU:-1}
# The origin shares the proxy's core: then every cycle the proxy spends is a cycle the origin
# lacks, so proxy overhead shows in the numbers instead of hiding in an idle core (README).
origin_cpu=${ORIGIN_CPU:-$proxy_cpu}
load_threads=${LOAD_THREADS:-1}
connect_host=${CONNECT_HOST:-}
suite=${SUITE:-main}
# NICE=-5 (as root) favours the measured processes over whatever else the machine runs; off by
# default because on a shared machine that slows everyone else down.
niceness=${NICE:-0}

note() { printf 'compare.sh: %s\n' "$*" >&2; }
notes=()  # caveats gathered on the way, repeated under the table
want() { [[ " ${targets[*]} " == *" $1 "* ]]; }
wants_workload() { [[ " ${workloads[*]} " == *" $1 "* ]]; }

# ---- prerequisites ---------------------------------------------------------------------------

if [[ ! -x $load || ! -x $limit_proxy ]]; then
  note "building sandgate-load and sandgate-limit-proxy"
  (cd "$root" && cmake --preset release >/dev/null && cmake --build "$build" \
    --target sandgate-load sandgate-limit-proxy -j 2 >/dev/null) ||
    { note "cannot build $load or $limit_proxy"; exit 1; }
fi
if ! command -v taskset >/dev/null || (($(nproc) < 2)); then
  note "no taskset or fewer than 2 cores: running unpinned"
  notes+=("Processes were not pinned (no taskset or a single core).")
  pin() { shift; exec nice -n "$niceness" "$@"; }
else
  pin() { local cpu=$1; shift; exec nice -n "$niceness" taskset -c "$cpu" "$@"; }
fi
# pin execs, so `pin CPU CMD &` leaves $! the command's own PID (taskset execs too): the PID
# whose memory and CPU time are read and which is stopped. Only ever call it in a subshell.

# Debian's tinyproxy and squid come from scripts/install-deps.sh. A benchmark never installs
# anything itself: it may run beside other work that holds the package manager's lock, and in
# its network namespace there is no network to install from. A peer that is missing is skipped,
# and said so here and in the results (it has no rows).
missing=()
want tinyproxy && ! command -v tinyproxy >/dev/null && missing+=(tinyproxy)
want squid && ! command -v squid >/dev/null && [[ ! -x /usr/sbin/squid ]] && missing+=(squid)
if ((${#missing[@]})); then
  note "${missing[*]} not installed (scripts/install-deps.sh installs them): skipped"
fi
PATH=$PATH:/usr/sbin

# Idle tunnels cost the proxy two descriptors each (client and origin side) plus its own few
# hundred (listener, epoll, pipe pool, logs). Raise the soft limit to the hard one, try to raise
# the hard one (needs CAP_SYS_RESOURCE, and is refused inside some sandboxes), and otherwise
# open as many tunnels as fit, saying so.
fd_margin=1000
ulimit -Sn "$(ulimit -Hn)" 2>/dev/null
fd_limit=$(ulimit -Sn)
fd_needed=$((2 * idle_tunnels + fd_margin))
if wants_workload idle && [[ $fd_limit != unlimited ]] && ((fd_needed > fd_limit)); then
  ulimit -Hn "$fd_needed" 2>/dev/null && ulimit -Sn "$fd_needed"
  fd_limit=$(ulimit -Sn)
  if ((2 * idle_tunnels + fd_margin > fd_limit)); then
    reduced=$(((fd_limit - fd_margin) / 2))
    notes+=("Idle: ${reduced} tunnels instead of ${idle_tunnels}: the descriptor limit is \
${fd_limit} and cannot be raised here; a proxy needs 2 descriptors per tunnel.")
    note "${notes[-1]}"
    idle_tunnels=$reduced
  fi
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=${RAW:-$build/bench-results/compare-$stamp.jsonl}
mkdir -p "$(dirname "$raw")"
work=$(mktemp -d /tmp/sandgate-compare.XXXXXX)
# squid drops to its own user and must still reach its config and log in here.
chmod 755 "$work"
# sandgate watches its blocklist's folder (inotify): nothing else is written there, so that no
# other file's writes wake its watcher thread during a measurement.
mkdir "$work/policy"
# Private copies of the load tool and sandgate, so a rebuild by someone else mid-run cannot swap
# or remove a binary between rounds: every round measures the same builds.
cp "$load" "$work/sandgate-load" && load=$work/sandgate-load
cp "$limit_proxy" "$work/sandgate-limit-proxy" && limit_proxy=$work/sandgate-limit-proxy
if [[ " ${targets[*]} " == *" sandgate"* && -x $sandgate ]] && cp "$sandgate" "$work/sandgate"; then
  note "sandgate: measuring a copy of $sandgate ($(stat -c %y "$sandgate" | cut -d. -f1))"
  sandgate=$work/sandgate
fi
if want sandgate-b && [[ -x $sandgate_b ]] && cp "$sandgate_b" "$work/sandgate-b"; then
  note "sandgate-b: measuring a copy of $sandgate_b ($(stat -c %y "$sandgate_b" | cut -d. -f1))"
  sandgate_b=$work/sandgate-b
fi

# The 1,000,000-entry blocklist for sandgate-1m: three shapes (2, 3 and 4 labels) so that a name
# lookup probes one hash slot per label count, as it would with a real list; none of them
# matches the name the clients ask for, so every setup is still allowed.
if want sandgate-1m; then
  python3 - "$work/policy/blocked-1m.txt" <<'EOF'
import sys
with open(sys.argv[1], "w") as out:
    for i in range(1_000_000):
        shape = i % 3
        if shape == 0:
            out.write(f"blocked{i}.net\n")
        elif shape == 1:
            out.write(f"host{i}.example-domain{i % 977}.com\n")
        else:
            out.write(f"x{i}.y{i % 1000}.cdn{i % 97}.org\n")
EOF
fi

# ---- processes -------------------------------------------------------------------------------

# The started proxies and origins, stopped on exit (with $work), and the steps shared with
# http2.sh and inspection.sh: bench/e2e/processes.sh.
source "$here/processes.sh"

# The reference: the least a CONNECT proxy can do on this kernel.
start_limit() {
  rm -f "$work/limit.port"
  pin "$proxy_cpu" "$limit_proxy" --listen 127.0.0.1:0 --port-file "$work/limit.port" \
    >"$work/limit.out" 2>&1 &
  local pid=$!
  started+=("$pid")
  for _ in $(seq 100); do
    [[ -s $work/limit.port ]] && break
    sleep 0.05
  done
  [[ -s $work/limit.port ]] || { note "limit did not start: skipped"; return 1; }
  proxy_pid[limit]=$pid
  proxy_addr[limit]=$(cat "$work/limit.port")
}

# sandgate, sandgate-t2 (two worker threads), sandgate-1m (the big blocklist), sandgate-b
# (another build, same settings), and the log destinations: sandgate-logfile, sandgate-pipe,
# sandgate-quiet.
start_sandgate() {
  local variant=$1 binary=$sandgate
  [[ $variant == sandgate-b ]] && binary=$sandgate_b
  [[ -x $binary ]] || { note "$variant: '$binary' not built: skipped"; return 1; }
  : >"$work/policy/blocked.txt"
  local blocklist=$work/policy/blocked.txt threads=1
  [[ $variant == sandgate-1m ]] && blocklist=$work/policy/blocked-1m.txt
  [[ $variant == sandgate-t2 ]] && threads=2
  if [[ $variant == sandgate-budgets ]]; then
    printf '%s\n' '* up=1000TB down=1000TB connections=1000000000' \
      '127.0.0.1 up=1000TB/day down=1000TB/day connections=1000000000/minute' \
      >"$work/policy/budgets.txt"
  fi
  # An empty blocklist of its own so the user's file (which may be large) does not change the
  # numbers (the bundled default blocks nothing either); IP literals and loopback allowed since
  # the origin is 127.0.0.1; enough connection slots for the idle test; a short drain.
  local base=(serve --listen 127.0.0.1:0 --port-file "$work/$variant.port" --threads "$threads"
    --allow-ip=true --block-loopback=false --blocklist "$blocklist")
  local extra=(--max-connections $((idle_tunnels + 1000)) --drain-seconds 1)
  [[ -n $connect_host ]] && extra+=(--dns-server "$origin")
  case $variant in
    sandgate-logfile) base+=(--log-file "$work/$variant.log") ;;
    sandgate-quiet) base+=(--log-level error) ;;
    sandgate-budgets) base+=(--budgets "$work/policy/budgets.txt") ;;
  esac
  local attempt args
  for attempt in full minimal; do
    args=("${base[@]}")
    [[ $attempt == full ]] && args+=("${extra[@]}")
    : >"$work/$variant.out"
    # The decision log (a decision and an end line per tunnel) is part of sandgate's cost: it
    # goes where a deployment sends it (standard error into a file, or a pipe, or --log-file).
    # The log file is emptied between rounds, so a long run does not fill the disk.
    rm -f "$work/$variant.log"
    if [[ $variant == sandgate-pipe ]]; then
      pin "$proxy_cpu" "$binary" "${args[@]}" >"$work/$variant.out" \
        2> >(cat >"$work/$variant.log") &
    elif [[ $variant == sandgate-logfile ]]; then
      pin "$proxy_cpu" "$binary" "${args[@]}" >"$work/$variant.out" 2>/dev/null &
    else
      pin "$proxy_cpu" "$binary" "${args[@]}" >"$work/$variant.out" 2>"$work/$variant.log" &
    fi
    local pid=$!
    # Up to 30 s: loading the 1,000,000-entry list takes about a second on a quiet machine.
    for _ in $(seq 300); do
      grep -q '^sandgate listening on ' "$work/$variant.out" && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    local addr
    addr=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/$variant.out" | head -1)
    if [[ -n $addr ]]; then
      started+=("$pid")
      proxy_pid[$variant]=$pid
      proxy_addr[$variant]=$addr
      return 0
    fi
    stop_pid "$pid"
  done
  note "$variant did not start: skipped"
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
    limit) start_limit ;;
    sandgate | sandgate-t2 | sandgate-1m | sandgate-b | sandgate-logfile | sandgate-pipe | \
      sandgate-quiet | sandgate-budgets) start_sandgate "$target" ;;
    tinyproxy) start_tinyproxy ;;
    squid) start_squid ;;
    *) note "unknown target $target: skipped"; return 1 ;;
  esac
}

# One measurement: the tool's JSON line, tagged with the suite and round, appended to the raw
# file. The proxy's PID lets the tool read its CPU time (and, for idle, its memory).
measure() {
  local target=$1 round=$2
  shift 2
  local addr=${proxy_addr[$target]:-}
  [[ -n $addr ]] || return 0
  local extra=()
  [[ -n ${proxy_pid[$target]:-} ]] && extra+=(--proxy-pid "${proxy_pid[$target]}")
  # Only sandgate is pointed at the origin's DNS; the others keep the address literal.
  [[ -n $connect_host && $target == sandgate* ]] && extra+=(--connect-host "$connect_host")
  pin "$load_cpu" "$load" run --proxy "$addr" --origin "$origin" --label "$target" "$@" \
    "${extra[@]}" |
    sed -e "s/^{/{\"suite\":\"$suite\",\"run_id\":\"$stamp\",\"round\":$round,/" >>"$raw"
}

# ---- rounds ----------------------------------------------------------------------------------

note "suite $suite: targets ${targets[*]}; workloads ${workloads[*]}; $rounds round(s) of \
${duration} s runs; CPUs proxy $proxy_cpu, origin $origin_cpu, load $load_cpu \
($load_threads thread(s)); raw results: $raw"
# With a CONNECT_HOST the origin also answers DNS, so sandgate resolves the name to it.
origin_dns=()
[[ -n $connect_host ]] && origin_dns=(--dns)
start_origin "${origin_dns[@]}"
declare -A rounds_measured
for ((round = 1; round <= rounds; ++round)); do
  # Rotate the order every round so no target always runs first (or right after a heavy one).
  rotate_targets "$round"
  note "round $round/$rounds: ${order[*]}"

  # Fresh proxies for every round; they all wait idle while another one is measured.
  start_targets
  timed=(--duration "$duration" --threads "$load_threads")
  if wants_workload setups; then
    for level in "${setup_levels[@]}"; do
      for target in "${order[@]}"; do
        measure "$target" "$round" --workload setups --concurrency "$level" "${timed[@]}"
      done
    done
  fi
  for workload in download upload; do
    wants_workload $workload || continue
    for level in "${stream_levels[@]}"; do
      for target in "${order[@]}"; do
        measure "$target" "$round" --workload "$workload" --concurrency "$level" "${timed[@]}"
      done
    done
  done
  if wants_workload http; then
    for level in "${http_levels[@]}"; do
      for target in "${order[@]}"; do
        measure "$target" "$round" --workload http --concurrency "$level" "${timed[@]}"
      done
    done
  fi
  for target in "${order[@]}"; do stop_target "$target"; done

  # Idle memory on a freshly started proxy, so the heap left by the runs above cannot hide
  # the cost of new tunnels. No proxy, no memory to price.
  if wants_workload idle; then
    for target in "${order[@]}"; do
      [[ $target == none ]] && continue
      start_target "$target" || continue
      measure "$target" "$round" --workload idle --concurrency "$idle_tunnels" --duration 2 \
        --timeout 10
      stop_target "$target"
    done
  fi
done
stop_pid "$origin_pid"

# The notes go into the raw file too, so the summary made from it later repeats them.
record_notes "${targets[@]}"

# ---- report ----------------------------------------------------------------------------------

machine="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
printf '<!-- sandgate-load compare %s, suite %s: %s; %s round(s) of %s s runs; CPU: proxy %s, ' \
  "$stamp" "$suite" "$machine" "$rounds" "$duration" "$proxy_cpu"
# The raw file relative to the project, so that a committed report names no machine's path.
printf 'origin %s, load %s (%s thread(s)); raw: %s -->\n' "$origin_cpu" "$load_cpu" \
  "$load_threads" "$(realpath --relative-to="$here/../.." "$raw" 2>/dev/null || echo "$raw")"
python3 "$here/summarize.py" --suite "$suite" "$raw" -- "${targets[@]}"
if ((${#notes[@]})); then
  printf '\nNotes:\n'
  printf -- '- %s\n' "${notes[@]}"
fi
