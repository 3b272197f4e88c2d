#!/usr/bin/env bash
# Runs the component micro-benchmarks (Google Benchmark) from a release build and prints their
# tables. `QUICK=1` is the short smoke run CI can afford. Results are recorded in bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
min_time=${QUICK:+0.01}
min_time=${min_time:-0.5}
for bench in build/bench/*_bench; do
  [[ -x "$bench" ]] || continue
  echo "== $bench"
  "$bench" --benchmark_min_time="$min_time" --benchmark_counters_tabular=true
done
