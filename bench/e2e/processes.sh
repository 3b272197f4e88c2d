# Sourced by the bench scripts that start proxies (compare.sh, inspection.sh, instructions.sh,
# socks_parent.sh): the processes they started, stopped on exit with the work folder ($work)
# removed, and two loopback helpers. $stop_wait_tenths (50 unless the script set it) is how long
# a process is given to end after SIGTERM, in tenths of a second.
# shellcheck shell=bash

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
