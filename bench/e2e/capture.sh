#!/usr/bin/env bash
# Setups per second through `sandgate run`'s capture against the explicit proxy, in the same run:
# one confined command (bench/e2e/capture_client.py) alternates rounds of
#   proxy:   CONNECT bench.test:PORT to the gate's explicit port (the proxy variables' path),
#   capture: a direct connection to bench.test:PORT (resolved by the gate's DNS to a synthetic
#            address, redirected by nftables to the capture listener),
# each setup then one echo of PAYLOAD bytes through the tunnel, against sandgate-load's echo
# origin on the host's loopback (which also answers the gate's DNS: every name is 127.0.0.1).
# The same client, the same gate, the same machine state: the ratio is what holds.
#
#   bench/e2e/capture.sh [OUT.md]     (defaults: ROUNDS=3 SECONDS_PER_ROUND=5 CONCURRENCY=16)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-bench/results/$(date -u +%F)/capture.md}
rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_ROUND:-5}
concurrency=${CONCURRENCY:-16}
payload=${PAYLOAD:-64}
sandgate=$root/build/bin/sandgate
load=$root/build/bench/sandgate-load
for tool in "$sandgate" "$load"; do
  [[ -x $tool ]] || { echo "capture.sh: $tool is missing: build first (make)" >&2; exit 1; }
done

work=$(mktemp -d "$root/build/capture-bench-XXXXXX")
trap 'kill $origin_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$load" origin --listen 127.0.0.1:0 --port-file "$work/origin" --dns --lifetime 3600 &
origin_pid=$!
for _ in $(seq 100); do [[ -s $work/origin ]] && break; sleep 0.05; done
origin_port=$(sed "s/.*://" "$work/origin")
: > "$work/blocked.txt"
mkdir -p "$work/home"

# The gate on one thread with its log at `error` (no line per setup), the client inside.
(cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work/home" "$sandgate" run --threads 1 \
  --log-level error --block-loopback=false --dns-server "127.0.0.1:$origin_port" \
  --blocklist "$work/blocked.txt" -- /usr/bin/python3 "$root/bench/e2e/capture_client.py" \
  bench.test "$origin_port" "$rounds" "$seconds" "$concurrency" "$payload") \
  > "$work/results.txt" 2> "$work/run.err" || { cat "$work/run.err" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
{
  echo "# Setups/s: capture vs the explicit proxy (\`sandgate run\`, same run)"
  echo
  echo "Measured $(date -u '+%F %H:%M') UTC on $(nproc) CPUs ($(uname -r)); gate: \`--threads 1\`,"
  echo "log level error; client: \`bench/e2e/capture_client.py\` (Python threads, $concurrency"
  echo "at once, a $payload-byte echo per setup), $rounds alternating rounds of ${seconds} s each;"
  echo "origin: \`sandgate-load origin --dns\` on the host's loopback."
  echo
  echo "Rerun: \`ROUNDS=$rounds SECONDS_PER_ROUND=$seconds CONCURRENCY=$concurrency bench/e2e/capture.sh\`"
  echo
  cat "$work/results.txt"
} > "$out"
cat "$out"
