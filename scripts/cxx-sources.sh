#!/usr/bin/env bash
# The project's own C++ files, one per line, relative to the source root: what `make format`
# formats and the format check (CTest `format_check`) checks. Build trees are left out.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
find proxy rules sandbox-profile connect-proxy config tests bench \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' \) -type f -print | LC_ALL=C sort
