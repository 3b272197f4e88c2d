# Sourced by the bench scripts that start proxies (compare.sh, http2.sh, inspection.sh,
# instructions.sh, socks_parent.sh): the processes they started, stopped on exit with the work
# folder ($work) removed, two loopback helpers, and the steps the load-tool benchmarks share
# (the origin, a sandgate started and awaited, a run of the load tool, a perf profile, the
# notes). $stop_wait_tenths (50 unless the script set it) is how long a process is given to end
# after SIGTERM, in tenths of a second. The helpers below read the script's own settings: note,
# pin, $here, $work, $load, $origin_cpu, $proxy_cpu, $load_cpu, $suite, $stamp, $raw, $rounds.
# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034  # settings the sourcing script sets, and reads back

declare -A proxy_addr proxy_pid
started=()

stop_pid() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq "${stop_wait_tenths:-50}"); do
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

# ---- the steps the load-tool benchmarks share ------------------------------------------------

# sandgate-load's origin on a free loopback port with ARGS (--dns, --tls-cert ...), pinned to
# $origin_cpu: sets origin (127.0.0.1:PORT), origin_port and origin_pid. Exits the script when it
# does not start: nothing can be measured without it.
start_origin() {
  pin "$origin_cpu" "$load" origin --listen 127.0.0.1:0 --port-file "$work/origin.port" \
    --lifetime 7200 "$@" >"$work/origin.out" 2>&1 &
  origin_pid=$!
  started+=("$origin_pid")
  for _ in $(seq 100); do
    [[ -s $work/origin.port ]] && break
    sleep 0.05
  done
  origin=$(cat "$work/origin.port" 2>/dev/null) || { note "origin did not start"; exit 1; }
  origin_port=${origin##*:}
}

# The origin's test CA (origin-ca.pem) and its leaf (origin.pem, for NAME and 127.0.0.1), EC
# P-256 like the gate's own CA, valid two days, in $work. Exits the script when openssl cannot.
ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
make_ca() {
  local name=$1 subject=$2
  ec_key "$work/$name-key.pem" &&
    openssl req -x509 -new -key "$work/$name-key.pem" -subj "/CN=$subject" -days 2 \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
      -out "$work/$name.pem" 2>/dev/null
}
make_origin_certificates() {
  local name=$1
  make_ca origin-ca "sandgate bench origin CA" || { note "openssl cannot make the test CA"; exit 1; }
  ec_key "$work/origin-key.pem"
  openssl req -new -key "$work/origin-key.pem" -subj "/CN=$name" -out "$work/origin.csr" \
    2>/dev/null
  printf 'subjectAltName=DNS:%s,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
    "$name" >"$work/origin.ext"
  openssl x509 -req -in "$work/origin.csr" -CA "$work/origin-ca.pem" -CAkey "$work/origin-ca-key.pem" \
    -CAcreateserial -days 2 -extfile "$work/origin.ext" -out "$work/origin.pem" 2>/dev/null ||
    { note "openssl cannot sign the origin's certificate"; exit 1; }
}

# `BINARY serve ARGS` as target NAME, pinned to $proxy_cpu, its stdout in $work/NAME.out and its
# log in $work/NAME.log; waits for its "sandgate listening on" line and records its PID and
# address (proxy_pid[NAME], proxy_addr[NAME]). 1, with the log's last lines, when it did not
# start.
start_sandgate_serve() {
  local name=$1 binary=$2
  shift 2
  : >"$work/$name.out"
  rm -f "$work/$name.log"
  pin "$proxy_cpu" "$binary" serve "$@" >"$work/$name.out" 2>"$work/$name.log" &
  local pid=$!
  for _ in $(seq 100); do
    grep -q '^sandgate listening on ' "$work/$name.out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  local addr
  addr=$(sed -n 's/^sandgate listening on \([^ ]*\).*/\1/p' "$work/$name.out" | head -1)
  if [[ -z $addr ]]; then
    stop_pid "$pid"
    note "$name did not start: $(tail -2 "$work/$name.log")"
    return 1
  fi
  started+=("$pid")
  proxy_pid[$name]=$pid
  proxy_addr[$name]=$addr
}

stop_target() {
  local pid=${proxy_pid[$1]:-}
  [[ -n $pid ]] && stop_pid "$pid"
  unset "proxy_pid[$1]" "proxy_addr[$1]"
}

# One run of the load tool, `run --proxy ADDRESS ARGS`, as TARGET (skipped when TARGET has no
# address: it did not start), pinned to $load_cpu; the proxy's PID lets the tool read its CPU
# time over the measured window. Its JSON line, tagged with $suite, $stamp and FIELDS (the
# round, and whatever else the script tallies by: `"round":1,`), appended to $raw.
run_load() {
  local target=$1 fields=$2
  shift 2
  local addr=${proxy_addr[$target]:-}
  [[ -n $addr ]] || return 0
  local extra=()
  [[ -n ${proxy_pid[$target]:-} ]] && extra+=(--proxy-pid "${proxy_pid[$target]}")
  pin "$load_cpu" "$load" run --proxy "$addr" "$@" "${extra[@]}" |
    sed -e "s/^{/{\"suite\":\"$suite\",\"run_id\":\"$stamp\",$fields/" >>"$raw"
}

# SECONDS of PID under perf (software cpu-clock, which works without hardware counters; DWARF
# unwinding: Debian's libcrypto and libnghttp2 have no frame pointers, so frame-pointer stacks
# would stop inside them), into $work/perf.data.
perf_record() {
  local pid=$1 seconds=$2
  perf record -q -e cpu-clock -F 500 --call-graph dwarf,16384 -p "$pid" \
    -o "$work/perf.data" -- sleep "$seconds" 2>/dev/null
}

# perf_record's profile as PREFIX-self.txt (self time by library and function),
# PREFIX-children.txt (inclusive time by function) and PREFIX-groups.md (self time grouped by
# bench/e2e/inspection_profile.py).
perf_report() {
  local prefix=$1
  perf report -i "$work/perf.data" --stdio --no-children --sort dso,symbol -g none \
    2>/dev/null | grep -v '^#' | grep -v '^$' | cut -c1-200 | sed -e 's/ *$//' \
    >"$prefix-self.txt"
  perf report -i "$work/perf.data" --stdio --children --sort symbol -g none \
    --percent-limit 2 2>/dev/null | grep -v '^#' | grep -v '^$' | head -120 | cut -c1-200 |
    sed -e 's/ *$//' >"$prefix-children.txt"
  python3 "$here/inspection_profile.py" "$prefix-self.txt" >"$prefix-groups.md"
  rm -f "$work/perf.data"
}

# ROUND's order of the targets (targets[]) into order[]: rotated every round, so no target
# always runs first (or right after a heavy one).
rotate_targets() {
  local round=$1 i
  order=()
  for ((i = 0; i < ${#targets[@]}; ++i)); do
    order+=("${targets[$(((i + round - 1) % ${#targets[@]}))]}")
  done
}

# Each target of order[] started (the script's start_target), and the rounds each one was
# measured in counted (rounds_measured[], which record_notes reads).
start_targets() {
  local target
  for target in "${order[@]}"; do
    start_target "$target" && rounds_measured[$target]=$((${rounds_measured[$target]:-0} + 1))
  done
}

# The notes (notes[]) completed with the targets that ran in fewer than $rounds rounds
# (rounds_measured[]), and written into $raw too, so the summary made from it later repeats them.
record_notes() {
  local target count text
  for target in "$@"; do
    count=${rounds_measured[$target]:-0}
    if ((count == 0)); then
      notes+=("$target: not available, skipped.")
    elif ((count < rounds)); then
      notes+=("$target: available in $count of $rounds rounds only; its medians are over those.")
    fi
  done
  for text in "${notes[@]}"; do
    python3 -c 'import json, sys
print(json.dumps({"suite": sys.argv[1], "run_id": sys.argv[2], "note": sys.argv[3]}))' \
      "$suite" "$stamp" "$text" >>"$raw"
  done
}
