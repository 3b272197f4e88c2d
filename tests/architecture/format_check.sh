#!/usr/bin/env bash
# Every C++ file is formatted as .clang-format says (clang-format from Debian, the version
# scripts/install-deps.sh installs). Fails naming each file that is not; `make format` fixes them.
# Usage: format_check.sh CLANG_FORMAT SOURCE_ROOT
set -euo pipefail
clang_format="$1"
root="$2"
cd "$root"
# --dry-run --Werror reports each unformatted place as "FILE:LINE:COL: error: ..."; batches of
# files per process, two at a time.
report=$("$root/scripts/cxx-sources.sh" "$root" |
  xargs -P 2 -n 50 "$clang_format" --dry-run --Werror 2>&1 >/dev/null || true)
mapfile -t unformatted < <(grep -oE '^[^:]+\.(cpp|hpp|h|c):[0-9]+:[0-9]+: error' <<<"$report" |
  cut -d: -f1 | LC_ALL=C sort -u)
if ((${#unformatted[@]} > 0)); then
  printf 'not formatted as .clang-format says: %s\n' "${unformatted[@]}"
  echo "${#unformatted[@]} file(s); run \`make format\` ($("$clang_format" --version))"
  exit 1
fi
if grep -q . <<<"$report"; then
  echo "clang-format failed: $report"
  exit 1
fi
echo "every C++ file is formatted ($("$clang_format" --version))"
