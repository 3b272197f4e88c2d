#!/usr/bin/env bash
# A streamed reply (server-sent events, one every GAP ms) through an inspected host, with a masked
# secret bound to it (its responses are cleaned as they stream) against the same host inspected
# without one: how long each event waits between the origin's sending it and the client's reading
# it (median, 90th percentile, largest), side by side in one run. Loopback only: run it under
# scripts/offline.sh (bench/README.md has the command and the results).
#
#   bench/e2e/masked_stream.sh [EVENTS] [GAP_MS]
set -euo pipefail
events=${1:-100}
gap=${2:-20}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
gate=$root/build/bin/sandgate
[[ -x $gate ]] || { echo "masked_stream: build sandgate first (make gate)" >&2; exit 1; }
[[ -n ${SANDGATE_OFFLINE:-} ]] || { echo "masked_stream: run it under scripts/offline.sh" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The origin's certificate for api.stream.test, from a CA of the run's own.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=stream-ca -keyout "$work/ca.key" \
  -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=api.stream.test -keyout "$work/server.key" \
  -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.stream.test\n' >"$work/san"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
  -CAcreateserial -days 1 -extfile "$work/san" -out "$work/server.pem" 2>/dev/null

origin_port=18443 dns_port=18053
python3 "$root/bench/e2e/fake_dns.py" $dns_port & pids+=($!)
python3 "$root/tests/support/echo_https_server.py" $origin_port "$work/server.pem" \
  "$work/server.key" unused & pids+=($!)
export API_TOKEN=ghp_RealTokenRealTokenRealToken0123456789
sleep 1

# gate NAME PORT [ARG...]: a gate inspecting api.stream.test, listening on PORT.
start_gate() {
  local name=$1 port=$2
  shift 2
  "$gate" serve --listen "127.0.0.1:$port" --inspect api.stream.test --tls-ports $origin_port \
    --inspect-extra-ca "$work/ca.pem" --ca-dir "$work/ca-$name" --block-loopback=false \
    --dns-server "127.0.0.1:$dns_port" --log-file /dev/null "$@" >"$work/$name.out" 2>&1 &
  pids+=($!)
}
start_gate masked 18877 --secret API_TOKEN=api.stream.test --sentinels-file "$work/sentinels"
start_gate plain 18878
sleep 1
sentinel=$(sed -n 's/^API_TOKEN=//p' "$work/sentinels")
url="https://api.stream.test:$origin_port/sse?events=$events&gap=$gap"
for round in 1 2 3; do
  for setup in plain masked; do
    port=18878 ca=$work/ca-plain/ca.pem
    [[ $setup == masked ]] && port=18877 ca=$work/ca-masked/ca.pem
    printf '%s round %s: ' "$setup" "$round"
    python3 "$root/bench/e2e/masked_stream.py" $port "$ca" "$url" "Bearer ${sentinel:-none}" "$events"
  done
done
