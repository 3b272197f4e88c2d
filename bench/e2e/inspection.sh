#!/usr/bin/env bash
# bench/e2e/inspection.sh: what TLS inspection costs. sandgate-load's https workloads side by side,
# rounds alternated, against
#   none              the client straight to the TLS origin (the limit of this load generator)
#   sandgate          the gate as an opaque tunnel (no inspection)
#   sandgate-inspect  the same gate with --inspect for the origin's name: it terminates the
#                     client's TLS with a leaf from its own CA and opens its own TLS to the origin
#   squid-bump        Debian's squid-openssl with ssl-bump (`ssl_bump bump all`), certificates
#                     minted by security_file_certgen, the origin verified against its test CA
# on loopback, the proxy and the origin pinned to one core and the load tool to the other (as
# compare.sh). Prints medians and ratios as markdown on stdout (bench/e2e/summarize.py, suite
# "inspection"), progress on stderr, one JSON line per run to $RAW; with PROFILE=1 (the default
# when perf works) also a `perf record -g` of sandgate-inspect and squid-bump under each
# workload, into $PROFILE_DIR. Run it offline, as bench/run.sh does:
#
#   scripts/offline.sh bench/e2e/inspection.sh
#   ROUNDS=1 DURATION=2 SETUP_LEVELS=16 scripts/offline.sh bench/e2e/inspection.sh
#
# Environment: ROUNDS (3), DURATION (4), TARGETS ("none sandgate sandgate-inspect squid-bump"),
# WORKLOADS ("https-setups https"), SETUP_LEVELS ("1 16"), HTTPS_LEVELS ("16"), PROXY_CPU (0),
# LOAD_CPU (1), ORIGIN_CPU (PROXY_CPU), LOAD_THREADS (1), ORIGIN_NAME (origin.bench.example: the
# name every client asks for, resolved by the proxies to the origin), PROFILE (1 when perf works),
# PROFILE_DIR (build/bench-results/inspection-STAMP), PROFILE_SECONDS (4), PROFILE_TARGETS
# ("sandgate-inspect squid-bump"), SUITE (inspection),
# RAW, BUILD (build), SANDGATE (its binary), SQUID (/usr/sbin/squid), SQUID_CERTGEN
# (/usr/lib/squid/security_file_certgen).

# Not -e: one target failing must leave the others' results standing.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
load=$build/bench/sandgate-load
sandgate=${SANDGATE:-$build/bin/sandgate}
targets=(${TARGETS:-none sandgate sandgate-inspect squid-bump})
workloads=(${WORKLOADS:-https-setups https})
rounds=${ROUNDS:-3}
duration=${DURATION:-4}
setup_levels=(${SETUP_LEVELS:-1 16})
https_levels=(${HTTPS_LEVELS:-16})
proxy_cpu=${PROXY_CPU:-0}
load_cpu=${LOAD_CPU:-1}
origin_cpu=${ORIGIN_CPU:-$proxy_cpu}
load_threads=${LOAD_THREADS:-1}
origin_name=${ORIGIN_NAME:-origin.bench.example}
suite=${SUITE:-inspection}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=${RAW:-$build/bench-results/inspection-$stamp.jsonl}
profile_dir=${PROFILE_DIR:-$build/bench-results/inspection-$stamp}
profile_seconds=${PROFILE_SECONDS:-4}

note() { printf 'inspection.sh: %s\n' "$*" >&2; }
notes=()
want() { [[ " ${targets[*]} " == *" $1 "* ]]; }
wants_workload() { [[ " ${workloads[*]} " == *" $1 "* ]]; }

# ---- prerequisites ---------------------------------------------------------------------------

[[ -x $load ]] || { note "build sandgate-load first (cmake --build build --target sandgate-load)"; exit 1; }
if [[ " ${targets[*]}" == *" sandgate"* && ! -x $sandgate ]]; then
  note "no sandgate binary at $sandgate (SANDGATE=...): its targets are skipped"
fi
if [[ -z ${SANDGATE_OFFLINE:-} ]]; then
  note "not under scripts/offline.sh: nothing here dials out, but the namespace makes sure"
fi
if ! command -v taskset >/dev/null || (($(nproc) < 2)); then
  notes+=("Processes were not pinned (no taskset or a single core).")
  pin() { shift; exec "$@"; }
else
  pin() { local cpu=$1; shift; exec taskset -c "$cpu" "$@"; }
fi
# pin execs, so `pin CPU CMD &` leaves $! the command's own PID. Only call it in a subshell.
# Debian's squid (GnuTLS) has no ssl-bump; squid-openssl (scripts/install-deps.sh) does. Where
# the system's squid is the GnuTLS one, SQUID and SQUID_CERTGEN may name squid-openssl's binaries
# unpacked elsewhere (`apt-get download squid-openssl && dpkg-deb -x squid-openssl_*.deb DIR`).
# (The version text is read whole: `grep -q` closing the pipe early would fail under pipefail.)
squid=${SQUID:-/usr/sbin/squid}
certgen=${SQUID_CERTGEN:-/usr/lib/squid/security_file_certgen}
squid_bump_ok=0
if [[ -x $squid && -x $certgen && $("$squid" -v 2>/dev/null) == *--with-openssl* ]]; then
  squid_bump_ok=1
elif want squid-bump; then
  note "squid-bump: $squid is not built with OpenSSL (Debian's squid-openssl, installed by \
scripts/install-deps.sh; or SQUID=... SQUID_CERTGEN=...): skipped"
fi
if ! command -v perf >/dev/null || ! perf record -q -e cpu-clock -o /dev/null true 2>/dev/null; then
  profile=${PROFILE:-0}
else
  profile=${PROFILE:-1}
fi

mkdir -p "$(dirname "$raw")"
work=$(mktemp -d /tmp/sandgate-inspection.XXXXXX)
# squid drops to its own user and must still reach its config, certificates and logs in here.
chmod 755 "$work"
mkdir "$work/policy"  # sandgate watches its blocklist's folder: nothing else is written there
cp "$load" "$work/sandgate-load" && load=$work/sandgate-load
if [[ -x $sandgate ]] && cp "$sandgate" "$work/sandgate"; then
  note "sandgate: measuring a copy of $sandgate ($(stat -c %y "$sandgate" | cut -d. -f1))"
  sandgate=$work/sandgate
fi

# The started proxies and origins, stopped on exit (with $work), and the steps shared with
# http2.sh and compare.sh: bench/e2e/processes.sh.
source "$here/processes.sh"

# ---- certificates ----------------------------------------------------------------------------

# Test certificates, EC P-256 like the gate's own CA, valid for two days: the origin's CA and its
# leaf (the origin's name and 127.0.0.1), and squid's CA. The gate makes its CA itself (`sandgate
# ca`). The clients trust a bundle of all three, as a client of any of these targets would have
# to.
make_origin_certificates "$origin_name"
make_ca squid-ca "sandgate bench squid CA"
# squid's helpers run as its own user and read the CA key: a throwaway key in a throwaway folder.
chmod 644 "$work/squid-ca-key.pem"
cat "$work/origin-ca.pem" "$work/squid-ca.pem" >"$work/bundle.pem"
if [[ -x $sandgate ]] && "$sandgate" ca --ca-dir "$work/gate-ca" >/dev/null 2>&1; then
  cat "$work/gate-ca/ca.pem" >>"$work/bundle.pem"
elif want sandgate-inspect; then
  note "sandgate ca --ca-dir failed: sandgate-inspect will fail its handshakes"
fi

# ---- processes -------------------------------------------------------------------------------

# The origin: HTTP inside TLS (and DNS, so the gate resolves the origin's name to it).
start_origin --dns --tls-cert "$work/origin.pem" --tls-key "$work/origin-key.pem"
# squid resolves the name from a hosts file of its own (it has no DNS port setting).
printf '127.0.0.1 %s\n' "$origin_name" >"$work/hosts"

# sandgate (opaque) and sandgate-inspect: one worker thread, an empty blocklist, loopback and IP
# literals allowed, the origin's port a TLS port (so the tunnel's ClientHello is checked, and
# inspected for the inspect variant), names resolved by the origin's DNS, the log to a file.
start_sandgate() {
  local variant=$1
  [[ -x $sandgate ]] || { note "$variant: no sandgate binary: skipped"; return 1; }
  : >"$work/policy/blocked.txt"
  local args=(--listen 127.0.0.1:0 --threads 1 --allow-ip=true --block-loopback=false
    --blocklist "$work/policy/blocked.txt" --dns-server "$origin" --tls-ports "$origin_port"
    --max-connections 4096 --drain-seconds 1)
  if [[ $variant == sandgate-inspect ]]; then
    args+=(--inspect "$origin_name" --ca-dir "$work/gate-ca"
      --inspect-extra-ca "$work/origin-ca.pem")
  fi
  start_sandgate_serve "$variant" "$sandgate" "${args[@]}"
}

# squid with ssl-bump: every CONNECT bumped at the first step (its leaf minted from the CONNECT's
# name by security_file_certgen, then cached in memory), the origin verified against its CA; no
# cache, no access log, its cache.log and certificate database in the work folder.
start_squid_bump() {
  ((squid_bump_ok)) || return 1
  local port
  port=$(free_port)
  rm -rf "$work/squid-ssl-db"
  "$certgen" -c -s "$work/squid-ssl-db" -M 16MB >/dev/null 2>&1 ||
    { note "squid-bump: security_file_certgen -c failed: skipped"; return 1; }
  chown -R proxy:proxy "$work/squid-ssl-db" 2>/dev/null
  : >"$work/squid-cache.log"
  chmod 666 "$work/squid-cache.log"
  cat >"$work/squid.conf" <<EOF
http_port 127.0.0.1:$port ssl-bump generate-host-certificates=on dynamic_cert_mem_cache_size=16MB tls-cert=$work/squid-ca.pem tls-key=$work/squid-ca-key.pem
sslcrtd_program $certgen -s $work/squid-ssl-db -M 16MB
sslcrtd_children 2 startup=1 idle=1
ssl_bump bump all
tls_outgoing_options cafile=$work/origin-ca.pem
hosts_file $work/hosts
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
EOF
  pin "$proxy_cpu" "$squid" -N -f "$work/squid.conf" >"$work/squid.out" 2>&1 &
  local pid=$!
  started+=("$pid")
  wait_listening "$pid" "$port" ||
    { note "squid-bump did not start: $(tail -3 "$work/squid-cache.log")"; return 1; }
  proxy_pid[squid-bump]=$pid
  proxy_addr[squid-bump]=127.0.0.1:$port
}

start_target() {
  local target=$1
  unset "proxy_pid[$target]" "proxy_addr[$target]"
  case $target in
    none) proxy_addr[none]=none ;;
    sandgate | sandgate-inspect) start_sandgate "$target" ;;
    squid-bump) start_squid_bump ;;
    *) note "unknown target $target: skipped"; return 1 ;;
  esac
}

# One measurement (processes.sh's run_load): every client asks for the origin's name and verifies
# certificates against the bundle.
measure() {
  local target=$1 round=$2
  shift 2
  run_load "$target" "\"round\":$round," --origin "$origin" --label "$target" \
    --connect-host "$origin_name" --ca-file "$work/bundle.pem" --threads "$load_threads" "$@"
}

# ---- rounds ----------------------------------------------------------------------------------

note "suite $suite: targets ${targets[*]}; workloads ${workloads[*]}; $rounds round(s) of \
${duration} s runs; CPUs proxy $proxy_cpu, origin $origin_cpu, load $load_cpu; raw: $raw"
declare -A rounds_measured
for ((round = 1; round <= rounds; ++round)); do
  rotate_targets "$round"
  note "round $round/$rounds: ${order[*]}"
  start_targets
  # Once: who issued the certificate each target's clients see (the origin's CA through an
  # opaque tunnel, the proxy's own CA when it inspects), so the table cannot mislabel a path.
  if ((round == 1)); then
    for target in "${order[@]}"; do
      addr=${proxy_addr[$target]:-}
      [[ -n $addr ]] || continue
      via=(-connect "127.0.0.1:$origin_port")
      [[ $addr != none ]] && via=(-proxy "$addr" -connect "$origin_name:$origin_port")
      issuer=$(timeout 10 openssl s_client "${via[@]}" -servername "$origin_name" \
        -verify_hostname "$origin_name" -verify_return_error -CAfile "$work/bundle.pem" \
        </dev/null 2>/dev/null | sed -n 's/^issuer=//p' | head -1)
      notes+=("$target: the clients are shown a certificate issued by '${issuer:-(no handshake)}'.")
      note "${notes[-1]}"
    done
  fi
  if wants_workload https-setups; then
    for level in "${setup_levels[@]}"; do
      for target in "${order[@]}"; do
        measure "$target" "$round" --workload https-setups --concurrency "$level" --duration "$duration"
      done
    done
  fi
  if wants_workload https; then
    for level in "${https_levels[@]}"; do
      for target in "${order[@]}"; do
        measure "$target" "$round" --workload https --concurrency "$level" --duration "$duration"
      done
    done
  fi
  for target in "${order[@]}"; do stop_target "$target"; done
done

# ---- profile ---------------------------------------------------------------------------------

# Where the inspecting proxies' CPU goes: perf (software cpu-clock, which works without hardware
# counters) on each under each workload at 16 clients, the middle seconds of a run; self time
# grouped by bench/e2e/inspection_profile.py, inclusive time by function. Round 0 in the raw file.
for target in ${PROFILE_TARGETS:-sandgate-inspect squid-bump}; do
  [[ $profile == 1 ]] && want "$target" && start_target "$target" || continue
  mkdir -p "$profile_dir"
  pid=${proxy_pid[$target]}
  for workload in "${workloads[@]}"; do
    measure "$target" 0 --workload "$workload" --concurrency 16 \
      --duration "$((profile_seconds + 2))" &
    load_job=$!
    sleep 1
    perf_record "$pid" "$profile_seconds"
    wait "$load_job"
    prefix=$profile_dir/perf-$target-$workload
    perf_report "$prefix"
    note "profile of $target under $workload: $prefix-*"
  done
  stop_target "$target"
done
stop_pid "$origin_pid"

record_notes "${targets[@]}"

# ---- report ----------------------------------------------------------------------------------

machine="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
printf '<!-- sandgate-load inspection %s: %s; %s round(s) of %s s runs; CPU: proxy %s, origin %s, ' \
  "$stamp" "$machine" "$rounds" "$duration" "$proxy_cpu" "$origin_cpu"
printf 'load %s (%s thread(s)); raw: %s -->\n' "$load_cpu" "$load_threads" \
  "$(realpath --relative-to="$root" "$raw" 2>/dev/null || echo "$raw")"
# Profile runs are round 0: kept in the raw file, left out of the medians.
grep -v '"round":0,' "$raw" >"$work/rounds.jsonl"
python3 "$here/summarize.py" --suite "$suite" "$work/rounds.jsonl" -- "${targets[@]}"
