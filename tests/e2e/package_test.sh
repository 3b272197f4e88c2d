#!/usr/bin/env bash
# Install and packaging, end to end from a build tree:
#   1. `cmake --install` into a temporary prefix: the layout, and the service files naming the
#      executable they were installed with;
#   2. `cpack -G DEB` into a temporary folder: the package's metadata (dpkg-deb -I/-f), Depends
#      covering every library the executable links (ldd + dpkg -S), its exact file list, and
#      Debian's own checker: lintian, whose errors and warnings fail the test (its informational
#      tags are printed: hardening flags, the LICENSE beside the copyright file, data files in
#      /usr/share/sandgate, and spelling "errors" that are fragments of strings the compiler
#      packed; no tag is overridden);
#   3. the package extracted into a temporary root (dpkg-deb -x): the copyright file in Debian's
#      machine-readable format, the changelog's version the package's, the manual pages readable
#      by man, `sandgate --version`, and `sandgate check` with the packaged blocklist template, as
#      is and with an entry added.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without dpkg-deb or cpack.
set -euo pipefail

build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
for tool in cpack dpkg-deb dpkg ldd readelf; do
  command -v "$tool" >/dev/null || { echo "package_test: no $tool here; skipped"; exit 77; }
done
# Where dpkg is, lintian must be: scripts/install-deps.sh installs it.
for tool in lintian dpkg-parsechangelog man; do
  command -v "$tool" >/dev/null ||
    { echo "package_test: FAIL: no $tool here (scripts/install-deps.sh installs it)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/sandgate-package-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "package_test: FAIL: $*" >&2
  exit 1
}
# The version the package must carry: the project's, from the top-level CMakeLists.txt.
version=$(sed -n 's/^project(sandgate VERSION \([0-9.]*\).*/\1/p' "$source/CMakeLists.txt")
[[ -n $version ]] || fail "cannot read the project version"

# ---- 1. cmake --install --------------------------------------------------------------------
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$work/install.log")"
for f in bin/sandgate bin/sandgate-connect bin/sandgate-load; do
  [[ -x $prefix/$f ]] || fail "cmake --install: $f missing or not executable"
done
for f in share/sandgate/blocked.txt share/sandgate/sandgate.example.toml \
  share/sandgate/launchd/io.sandgate.gate.plist lib/systemd/user/sandgate.service \
  share/doc/sandgate/README.md share/doc/sandgate/docs/settings.md share/doc/sandgate/LICENSE \
  share/doc/sandgate/THIRD-PARTY-NOTICES share/doc/sandgate/copyright \
  share/doc/sandgate/changelog.gz share/man/man1/sandgate.1.gz share/man/man1/sandgate-run.1.gz \
  share/man/man1/sandgate-connect.1.gz share/man/man1/sandgate-load.1.gz \
  share/man/man5/sandgate.toml.5.gz share/sandgate/presets/dev.txt; do
  [[ -f $prefix/$f ]] || fail "cmake --install: $f missing"
done
cmp -s "$source/config/presets/dev.txt" "$prefix/share/sandgate/presets/dev.txt" ||
  fail "the installed preset dev differs from config/presets/dev.txt"
cmp -s "$source/config/blocked.txt" "$prefix/share/sandgate/blocked.txt" ||
  fail "the installed blocklist template differs from config/blocked.txt"
grep -qxF "ExecStart=$prefix/bin/sandgate serve" "$prefix/lib/systemd/user/sandgate.service" ||
  fail "the installed unit does not start $prefix/bin/sandgate: $(grep ExecStart= "$prefix/lib/systemd/user/sandgate.service")"
grep -qF "<string>$prefix/bin/sandgate</string>" "$prefix/share/sandgate/launchd/io.sandgate.gate.plist" ||
  fail "the installed launchd agent does not run $prefix/bin/sandgate"

# ---- 2. cpack -G DEB -----------------------------------------------------------------------
# CPACK_CMAKE_GENERATOR=Ninja: CPack then skips its `preinstall` step, a build of the whole
# tree (a test must not rebuild what it tests); the install itself runs cmake_install.cmake,
# which is the same for every generator.
(cd "$build" && cpack -G DEB -B "$work/cpack" -D CPACK_CMAKE_GENERATOR=Ninja) >"$work/cpack.log" 2>&1 ||
  fail "cpack -G DEB: $(cat "$work/cpack.log")"
debs=("$work"/cpack/sandgate_*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || fail "expected one sandgate_*.deb, got: $(ls "$work/cpack")"
deb=${debs[0]}
[[ $(basename "$deb") == "sandgate_${version}_$(dpkg --print-architecture).deb" ]] ||
  fail "unexpected package file name $(basename "$deb")"

dpkg-deb -I "$deb" >"$work/info.txt" || fail "dpkg-deb -I cannot read $deb"
field() { dpkg-deb -f "$deb" "$1"; }
expect_field() {
  [[ $(field "$1") == "$2" ]] || fail "control field $1 is '$(field "$1")', expected '$2'"
}
expect_field Package sandgate
expect_field Version "$version"
expect_field Section net
expect_field Architecture "$(dpkg --print-architecture)"
[[ $(field Maintainer) =~ ^[^\<]+\ \<[^@\>]+@[^\>]+\>$ ]] ||
  fail "Maintainer '$(field Maintainer)' is not 'Name <address>'"
[[ $(field Description | head -n1) == *"network gate for sandboxed AI agents"* ]] ||
  fail "Description synopsis: '$(field Description | head -n1)'"
[[ $(field Description | wc -l) -ge 2 ]] || fail "Description has no long text"

# Depends must name the package of every library the executables link directly (NEEDED).
# dpkg -S knows the path under /lib or /usr/lib, as the package shipped it (merged /usr).
depends=$(field Depends)
for exe in sandgate sandgate-connect sandgate-load; do
  while read -r soname; do
    # `libx.so.1 => /path/libx.so.1 (...)`, or for the dynamic loader `/path/ld-linux... (...)`.
    lib=$(ldd "$prefix/bin/$exe" | awk -v n="$soname" '
      $1 == n && $2 == "=>" { print $3; exit }
      substr($1, length($1) - length(n)) == "/" n { print $1; exit }')
    [[ -n $lib ]] || fail "ldd does not resolve $soname (linked by $exe)"
    owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null ||
      dpkg -S "${lib/#\/usr\/lib\//\/lib\/}" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null) ||
      fail "no package owns $lib (linked by $exe)"
    package=${owner%%:*}
    [[ ", $depends," == *", $package "* || ", $depends," == *", $package,"* ]] ||
      fail "Depends '$depends' lacks $package (for $soname, linked by $exe)"
  done < <(LC_ALL=C readelf -d "$prefix/bin/$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done

# The package holds exactly these files (no tests, no benchmarks but the load tool, no build
# paths).
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $NF }' | sed 's|^\./||' | LC_ALL=C sort >"$work/files.txt"
{
  cat <<'EOF'
usr/bin/sandgate
usr/bin/sandgate-connect
usr/bin/sandgate-load
usr/lib/systemd/user/sandgate.service
usr/share/doc/sandgate/LICENSE
usr/share/doc/sandgate/README.md
usr/share/doc/sandgate/THIRD-PARTY-NOTICES
usr/share/doc/sandgate/changelog.gz
usr/share/doc/sandgate/copyright
usr/share/man/man1/sandgate-connect.1.gz
usr/share/man/man1/sandgate-load.1.gz
usr/share/man/man1/sandgate-run.1.gz
usr/share/man/man1/sandgate.1.gz
usr/share/man/man5/sandgate.toml.5.gz
usr/share/sandgate/blocked.txt
usr/share/sandgate/budgets/dev.txt
usr/share/sandgate/launchd/io.sandgate.gate.plist
usr/share/sandgate/presets/claude-code.txt
usr/share/sandgate/presets/codex.txt
usr/share/sandgate/presets/dev.txt
usr/share/sandgate/sandgate.example.toml
EOF
  # Every page of docs/, beside the README that links them.
  for page in "$source"/docs/*.md; do echo "usr/share/doc/sandgate/docs/$(basename "$page")"; done
} | LC_ALL=C sort >"$work/expected.txt"
diff -u "$work/expected.txt" "$work/files.txt" >&2 || fail "unexpected file list in the package (diff above)"

# Debian's checker. --fail-on error,warning: a tag of either level fails the test; --allow-root:
# CI runs as root. The informational tags are printed for the log, not judged.
lintian --allow-root --fail-on error,warning --info --display-info "$deb" >"$work/lintian.txt" 2>&1 ||
  fail "lintian found errors or warnings in $(basename "$deb"):
$(grep -E '^[EW]:' "$work/lintian.txt" || cat "$work/lintian.txt")"
grep -E '^I:' "$work/lintian.txt" | sed 's/^/package_test: lintian /' || true

# ---- 3. the extracted package runs ---------------------------------------------------------
root=$work/root
dpkg-deb -x "$deb" "$root"
grep -qxF "ExecStart=/usr/bin/sandgate serve" "$root/usr/lib/systemd/user/sandgate.service" ||
  fail "the packaged unit does not start /usr/bin/sandgate"
grep -qxF "Documentation=file:///usr/share/doc/sandgate/README.md" \
  "$root/usr/lib/systemd/user/sandgate.service" || fail "the packaged unit's Documentation= is wrong"
grep -qF "<string>/usr/bin/sandgate</string>" "$root/usr/share/sandgate/launchd/io.sandgate.gate.plist" ||
  fail "the packaged launchd agent does not run /usr/bin/sandgate"

# The copyright file is Debian's machine-readable format, naming the project's licence; the
# changelog's newest entry is this version; every manual page renders.
[[ $(head -n1 "$root/usr/share/doc/sandgate/copyright") == \
  "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ]] ||
  fail "copyright is not in the machine-readable format: $(head -n1 "$root/usr/share/doc/sandgate/copyright")"
grep -qxF "License: Apache-2.0" "$root/usr/share/doc/sandgate/copyright" ||
  fail "copyright does not name the Apache-2.0 licence"
changelog_version=$(zcat "$root/usr/share/doc/sandgate/changelog.gz" | dpkg-parsechangelog -l- -S Version)
[[ $changelog_version == "$version" ]] ||
  fail "changelog.gz's newest entry is $changelog_version, the package $version"
for page in "$root"/usr/share/man/man1/*.1.gz "$root"/usr/share/man/man5/*.5.gz; do
  text=$(MANWIDTH=100 man -l "$page" 2>"$work/man.err") || fail "man -l $page: $(cat "$work/man.err")"
  grep -q '^NAME' <<<"$text" || fail "man -l $page printed no NAME section"
done

sandgate=$root/usr/bin/sandgate
template=$root/usr/share/sandgate/blocked.txt
out=$("$sandgate" --version) || fail "sandgate --version exited $?"
[[ $out == "sandgate $version" ]] || fail "sandgate --version printed '$out'"

# `check` in a clean environment: a fresh HOME and no GOOSE_/SANDGATE_ variables.
mkdir -p "$work/home"
check() { env -i PATH="$PATH" HOME="$work/home" "$sandgate" check "$@"; }
status=0
out=$(check --blocklist "$template" api.example.com) || status=$?
[[ $status -eq 0 && $(head -n1 <<<"$out") == "allow api.example.com:443" ]] ||
  fail "check with the template (which blocks nothing): exit $status, output: $out"

cp "$template" "$work/blocked.txt"
echo "example.com" >>"$work/blocked.txt"
line=$(wc -l <"$work/blocked.txt")
status=0
out=$(check --blocklist "$work/blocked.txt" api.example.com) || status=$?
[[ $status -eq 1 ]] || fail "check of a blocked host: exit $status, expected 1; output: $out"
grep -qxF "reason: blocklist" <<<"$out" || fail "check of a blocked host: $out"
grep -qxF "rule: $work/blocked.txt:$line example.com" <<<"$out" || fail "check of a blocked host: $out"

# A preset works from the package alone: it is embedded, and its rules name it.
status=0
out=$(check --allowlist preset:dev --blocklist "$template" pypi.org) || status=$?
[[ $status -eq 0 ]] || fail "check with preset:dev: exit $status; output: $out"
grep -qE '^rule: preset:dev:[0-9]+ pypi.org:443$' <<<"$out" || fail "check with preset:dev: $out"

status=0
"$root/usr/bin/sandgate-connect" >/dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "sandgate-connect without arguments exited $status, expected 2 (usage)"

echo "package_test: ok ($(basename "$deb"), Depends: $depends)"
