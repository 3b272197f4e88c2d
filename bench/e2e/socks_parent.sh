#!/usr/bin/env bash
# bench/e2e/socks_parent.sh: tunnel setups per second through sandgate asked with HTTP CONNECT,
# with SOCKS5, and with CONNECT through a parent proxy (Debian's squid, its own process), side by
# side in the same rounds; squid alone as a reference for what the parent costs by itself. The
# sandgate-load `setups` workload (connect, ask, echo 32 bytes, close) on loopback; the proxies
# (and squid, and the origin) pinned to one core, the load tool to the other. Prints medians and
# ratios to plain CONNECT as markdown; raw JSON lines go to $RAW.
#
#   bench/e2e/socks_parent.sh             # 3 rounds, 16 clients, 5 s runs
#   QUICK=1 bench/e2e/socks_parent.sh     # 1 round, 2 s runs
#
# Environment: ROUNDS (3; quick 1), DURATION (5; quick 2), CONCURRENCY (16), PROXY_CPU (0),
# LOAD_CPU (1), BUILD (build), RAW (default BUILD/bench-results/socks-parent-STAMP.jsonl).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
quick=${QUICK:-0}
rounds=${ROUNDS:-$([[ $quick == 1 ]] && echo 1 || echo 3)}
duration=${DURATION:-$([[ $quick == 1 ]] && echo 2 || echo 5)}
concurrency=${CONCURRENCY:-16}
proxy_cpu=${PROXY_CPU:-0}
load_cpu=${LOAD_CPU:-1}
PATH=$PATH:/usr/sbin

note() { printf 'socks_parent.sh: %s\n' "$*" >&2; }
for tool in "$build/bench/sandgate-load" "$build/bin/sandgate"; do
  [[ -x $tool ]] || { note "$tool is not built (cmake --build --preset release)"; exit 1; }
done
command -v squid >/dev/null || { note "squid is not installed (scripts/install-deps.sh)"; exit 1; }
if command -v taskset >/dev/null && (($(nproc) >= 2)); then
  pin() { local cpu=$1; shift; exec taskset -c "$cpu" "$@"; }
else
  note "no taskset or one core: unpinned"
  pin() { shift; exec "$@"; }
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=${RAW:-$build/bench-results/socks-parent-$stamp.jsonl}
mkdir -p "$(dirname "$raw")"
work=$(mktemp -d /tmp/sandgate-socks-parent.XXXXXX)
chmod 755 "$work"  # squid, as root, runs as its own user and must reach its files here
cp "$build/bench/sandgate-load" "$work/load" && cp "$build/bin/sandgate" "$work/sandgate"
load=$work/load
sandgate=$work/sandgate
# The started processes, stopped on exit (with $work), free_port and wait_listening: processes.sh.
source "$here/processes.sh"

# The origin: echoes; CONNECTs name its address literal (its port file holds ADDR:PORT), so
# nothing is resolved anywhere.
pin "$proxy_cpu" "$load" origin --listen 127.0.0.1:0 --port-file "$work/origin.port" \
  --lifetime 7200 >"$work/origin.out" 2>&1 &
started+=($!)
for _ in $(seq 100); do [[ -s $work/origin.port ]] && break; sleep 0.05; done
origin=$(cat "$work/origin.port") || { note "origin did not start"; exit 1; }

# squid: no cache, no logs, every client and port allowed (as in compare.sh).
squid_port=$(free_port)
: >"$work/squid-cache.log" && chmod 666 "$work/squid-cache.log"
cat >"$work/squid.conf" <<CONF
http_port 127.0.0.1:$squid_port
visible_hostname sandgate-bench
http_access allow all
cache deny all
access_log none
cache_store_log none
cache_log $work/squid-cache.log
pid_filename none
logfile_rotate 0
icp_port 0
htcp_port 0
shutdown_lifetime 0 seconds
coredump_dir $work
CONF
pin "$proxy_cpu" squid -N -f "$work/squid.conf" >"$work/squid.out" 2>&1 &
squid_pid=$!
started+=("$squid_pid")
wait_listening "$squid_pid" "$squid_port" || { note "squid did not start"; exit 1; }

# Two gates: direct (asked with CONNECT and with SOCKS5) and one whose parent is squid.
start_gate() {  # NAME EXTRA-ARGS...
  local name=$1
  shift
  : >"$work/blocked.txt"
  pin "$proxy_cpu" "$sandgate" serve --listen 127.0.0.1:0 --threads 1 --allow-ip=true \
    --block-loopback=false --blocklist "$work/blocked.txt" --drain-seconds 1 "$@" \
    >"$work/$name.out" 2>/dev/null &
  local pid=$!
  started+=("$pid")
  for _ in $(seq 100); do
    grep -q '^sandgate listening on ' "$work/$name.out" && break
    sleep 0.1
  done
  gate_addr[$name]=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/$name.out" | head -1)
  gate_pid[$name]=$pid
  [[ -n ${gate_addr[$name]} ]] || { note "$name did not start"; exit 1; }
}
declare -A gate_addr gate_pid
start_gate direct
start_gate parent --parent-proxy "http://127.0.0.1:$squid_port"

# target -> the proxy address, the pid whose CPU is sampled, extra options
declare -A addr=([connect]=${gate_addr[direct]} [socks5]=${gate_addr[direct]}
  [parent]=${gate_addr[parent]} [squid]=127.0.0.1:$squid_port)
declare -A pid=([connect]=${gate_pid[direct]} [socks5]=${gate_pid[direct]}
  [parent]=${gate_pid[parent]} [squid]=$squid_pid)
targets=(connect socks5 parent squid)
note "$rounds round(s) of $duration s, $concurrency clients; raw results: $raw"
for ((round = 1; round <= rounds; ++round)); do
  for ((i = 0; i < ${#targets[@]}; ++i)); do
    target=${targets[$(((i + round - 1) % ${#targets[@]}))]}
    extra=()
    [[ $target == socks5 ]] && extra+=(--socks5)
    note "round $round: $target"
    pin "$load_cpu" "$load" run --proxy "${addr[$target]}" --origin "$origin" \
      --label "$target" --workload setups --concurrency "$concurrency" --duration "$duration" \
      --proxy-pid "${pid[$target]}" "${extra[@]}" |
      sed -e "s/^{/{\"suite\":\"socks-parent\",\"run_id\":\"$stamp\",\"round\":$round,/" >>"$raw"
  done
done

python3 - "$raw" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
order = ["connect", "socks5", "parent", "squid"]
what = {
    "connect": "sandgate, HTTP CONNECT (direct)",
    "socks5": "sandgate, SOCKS5 (direct)",
    "parent": "sandgate, HTTP CONNECT through squid as its parent",
    "squid": "squid alone, HTTP CONNECT (reference)",
}
rates = {t: [r["setups_per_s"] for r in rows if r["label"] == t] for t in order}
errors = {t: sum(r.get("errors_total", 0) for r in rows if r["label"] == t) for t in order}
base = statistics.median(rates["connect"]) if rates["connect"] else None
print("| path | setups/s (median) | ratio to CONNECT | runs | errors |")
print("| --- | ---: | ---: | ---: | ---: |")
for t in order:
    if not rates[t]:
        continue
    m = statistics.median(rates[t])
    ratio = f"{m / base:.2f}" if base else "-"
    print(f"| {what[t]} | {m:,.0f} | {ratio} | {len(rates[t])} | {errors[t]} |")
PY
