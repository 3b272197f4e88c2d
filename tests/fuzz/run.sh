#!/usr/bin/env bash
# Builds the fuzz targets (`cmake --preset fuzz`: clang, libFuzzer, ASan+UBSan) and runs each for
# a bounded time: first every saved crash under regressions/<target>/ once, then fuzzing from a
# copy of corpus/<target>/ (the committed corpus is never written to), with dict/ where one fits.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     default: 10 s, every target
#
# Prints one line per target (time, executions, coverage) and exits non-zero if any target
# crashed, hung, ran out of memory or failed a regression. A crashing input is left under
# build-fuzz/fuzz-runs/<target>/ with the command that replays it; see README.md for what to do
# with it. Builds with -j2 and runs two targets at a time (FUZZ_JOBS): the machine has two cores,
# and each target is one process. `make fuzz` runs it (FUZZ_SECONDS per target); `make test`
# only replays the corpora and regressions (fuzz_replay.*, replay_main.cpp).
set -euo pipefail

seconds=${1:-10}
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -eq 0 ]]; then
  echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin_dir="$root/build-fuzz/fuzz"
runs_dir="$root/build-fuzz/fuzz-runs"

all_targets=(host_fuzz ip_fuzz domain_set_fuzz client_hello_fuzz request_head_fuzz sse_fuzz
  launchdarkly_json_fuzz json_writer_fuzz text_log_fuzz socks5_fuzz parent_reply_fuzz dns_query_fuzz
  secrets_fuzz budgets_fuzz websocket_frame_fuzz h2_server_codec_fuzz h2_client_codec_fuzz
  h2_http1_response_fuzz mcp_body_fuzz mcp_stream_fuzz mcp_answer_fuzz)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")

# The dictionary each target mutates with.
dict_for() {
  case "$1" in
    host_fuzz | ip_fuzz) echo "$here/dict/host.dict" ;;
    domain_set_fuzz | budgets_fuzz) echo "$here/dict/domain_set.dict" ;;
    client_hello_fuzz) echo "$here/dict/tls.dict" ;;
    request_head_fuzz | parent_reply_fuzz | secrets_fuzz | h2_http1_response_fuzz)
      echo "$here/dict/http.dict" ;;
    websocket_frame_fuzz) echo "$here/dict/websocket.dict" ;;
    h2_server_codec_fuzz | h2_client_codec_fuzz) echo "$here/dict/http2.dict" ;;
    sse_fuzz | launchdarkly_json_fuzz) echo "$here/dict/launchdarkly.dict" ;;
    mcp_body_fuzz | mcp_stream_fuzz | mcp_answer_fuzz) echo "$here/dict/mcp.dict" ;;
    json_writer_fuzz | text_log_fuzz) echo "$here/dict/utf8.dict" ;;
  esac
}

# Build only the fuzz targets and what they link.
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ is missing; scripts/install-deps.sh installs clang and libclang-rt-14-dev" >&2
  exit 1
fi
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j 2 >/dev/null || {
  echo "fuzz: the build failed; rerun 'cmake --build --preset fuzz' to see why" >&2
  exit 1
}

# Sanitizers: abort (so libFuzzer records the input) and say where.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One target: its regressions replayed, then fuzzed; prints its report line(s), returns non-zero
# when it failed.
fuzz_one() {
  local target=$1
  exe="$bin_dir/$target"
  if [[ ! -x "$exe" ]]; then
    echo "$target: FAILED (no such fuzz target: $exe)"
    return 1
  fi
  work="$runs_dir/$target"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$here/corpus/$target/"* "$work/corpus/" 2>/dev/null || true
  log="$work/fuzz.log"

  # 1. Every input that once crashed this target, replayed once each.
  regressions=()
  if [[ -d "$here/regressions/$target" ]]; then
    while IFS= read -r -d '' file; do
      regressions+=("$file")
    done < <(find "$here/regressions/$target" -type f ! -name '.*' ! -name '*.md' -print0 | sort -z)
  fi
  if [[ ${#regressions[@]} -gt 0 ]]; then
    if ! "$exe" -artifact_prefix="$work/artifacts/" "${regressions[@]}" \
      >"$work/regressions.log" 2>&1; then
      echo "$target: FAILED a saved regression input crashes again; see $work/regressions.log"
      return 1
    fi
  fi

  # 2. Fuzzing, from a copy of the seeds.
  dict=$(dict_for "$target")
  status=0
  started=$SECONDS
  "$exe" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    ${dict:+-dict="$dict"} -artifact_prefix="$work/artifacts/" "$work/corpus" >"$log" 2>&1 ||
    status=$?
  elapsed=$((SECONDS - started))

  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  summary="${elapsed} s, ${execs:-?} execs (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}"
  summary+=", corpus ${corp:-?}"
  if [[ $status -eq 0 ]]; then
    echo "$target: ok ${summary}, regressions ${#regressions[@]}"
  else
    crash=$(find "$work/artifacts" -type f | head -1)
    echo "$target: FAILED (exit $status) ${summary}"
    grep -E '^==sandgate-fuzz==|  check: |  detail: |^SUMMARY|ERROR: ' "$log" | head -6 |
      sed 's/^/  /'
    if [[ -n "$crash" ]]; then
      echo "  input: $crash ($(od -An -tx1 -v "$crash" | tr -d ' \n' | cut -c1-160))"
      echo "  replay: $exe $crash"
    fi
    echo "  log: $log"
    return 1
  fi
}

# The targets FUZZ_JOBS at a time (2 by default: the machine's two cores; each target is one
# process), their reports printed in order once each batch is done.
jobs=${FUZZ_JOBS:-2}
failed=0
mkdir -p "$runs_dir"
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  batch=("${targets[@]:i:jobs}")
  pids=()
  for target in "${batch[@]}"; do
    fuzz_one "$target" >"$runs_dir/$target.report" 2>&1 &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    wait "${pids[$k]}" || failed=1
    cat "$runs_dir/${batch[$k]}.report"
  done
done
exit $failed
