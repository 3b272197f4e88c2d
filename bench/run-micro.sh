#!/usr/bin/env bash
# Runs the component micro-benchmarks (Google Benchmark) from a release build and prints their
# tables. `QUICK=1` is the short smoke run CI can afford. Results are recorded in bench/README.md.
#
# Environment: BUILD (the build folder, default build/), QUICK (0), JSON_DIR (when set, each
# benchmark also writes Google Benchmark's JSON there as NAME.json, for bench/run.sh's summary).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
if [[ ${QUICK:-0} == 1 ]]; then min_time=0.01; else min_time=0.5; fi
if [[ -n ${JSON_DIR:-} ]]; then
  mkdir -p "$JSON_DIR"
  JSON_DIR=$(cd "$JSON_DIR" && pwd)
fi
found=0
for bench in "$build"/bench/*_bench; do
  [[ -x "$bench" ]] || continue
  found=1
  json=()
  if [[ -n ${JSON_DIR:-} ]]; then
    mkdir -p "$JSON_DIR"
    json=(--benchmark_out="$JSON_DIR/$(basename "$bench").json" --benchmark_out_format=json)
  fi
  echo "== $bench"
  # From the project folder by a relative path where the build is inside it, so that the JSON
  # (which records the command) names the benchmark by its place in the project, not by folders
  # of the machine it ran on.
  relative=${bench#"$root"/}
  [[ $relative == /* ]] || relative=./$relative
  (cd "$root" && "$relative" --benchmark_min_time="$min_time" --benchmark_counters_tabular=true \
    "${json[@]}")
done
((found)) || { echo "run-micro.sh: no benchmarks in $build/bench: build first" >&2; exit 1; }
