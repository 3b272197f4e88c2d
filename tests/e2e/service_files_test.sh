#!/usr/bin/env bash
# The login-service files as `cmake --install` installs them (into a temporary prefix):
#   - the systemd user unit passes `systemd-analyze verify --user` with nothing to report (no
#     unknown key, ExecStart executable), and says what the README promises;
#   - the launchd agent is a valid property list (python3's plistlib) with the keys launchd
#     needs, and its command, run here with /bin/sh as launchd would run it, starts the gate
#     with its logs in ~/Library/Logs.
# Usage: service_files_test.sh BUILD_DIR SOURCE_DIR. A missing systemd-analyze skips that part;
# without python3 the whole test is skipped (exit 77).
set -euo pipefail

build=$(cd "$1" && pwd)
command -v python3 >/dev/null || { echo "service_files_test: no python3 here; skipped"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sandgate-services-XXXXXX")
gate_pid=
cleanup() {
  [[ -n $gate_pid ]] && kill "$gate_pid" 2>/dev/null && wait "$gate_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "service_files_test: FAIL: $*" >&2
  exit 1
}

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$work/install.log")"
unit=$prefix/lib/systemd/user/sandgate.service
plist=$prefix/share/sandgate/launchd/io.sandgate.gate.plist

# ---- systemd ------------------------------------------------------------------------------
for setting in "ExecStart=$prefix/bin/sandgate serve" 'ExecReload=/bin/kill -HUP $MAINPID' \
  Restart=on-failure NoNewPrivileges=yes WantedBy=default.target; do
  grep -qxF "$setting" "$unit" || fail "the unit lacks '$setting'"
done
doc=$(sed -n 's|^Documentation=file://||p' "$unit")
[[ -f $doc ]] || fail "the unit's Documentation= names $doc, which was not installed"
if command -v systemd-analyze >/dev/null; then
  # A user manager's runtime folder is needed even offline; give it a private one.
  mkdir -m 700 "$work/runtime"
  status=0
  XDG_RUNTIME_DIR=$work/runtime systemd-analyze verify --user "$unit" >"$work/verify.txt" 2>&1 ||
    status=$?
  # verify exits 0 on mere warnings (an unknown key, say): any output is a finding too.
  [[ $status -eq 0 && ! -s $work/verify.txt ]] ||
    fail "systemd-analyze verify --user (exit $status): $(cat "$work/verify.txt")"
else
  echo "service_files_test: no systemd-analyze here; unit not verified"
fi

# ---- launchd ------------------------------------------------------------------------------
# Prints the agent's ProgramArguments, one a line, after checking the keys launchd needs.
python3 - "$plist" "$prefix/bin/sandgate" >"$work/arguments.txt" <<'PY' || fail "the launchd agent is not valid"
import os, plistlib, sys

path, sandgate = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    agent = plistlib.load(f)
def check(ok, what):
    if not ok:
        sys.exit(f"{path}: {what}; got {agent!r}")
check(agent.get("Label") == "io.sandgate.gate", "Label must be io.sandgate.gate")
check(os.path.basename(path) == agent["Label"] + ".plist", "the file must be named after Label")
check(agent.get("RunAtLoad") is True, "RunAtLoad must be true")
check(agent.get("KeepAlive") == {"SuccessfulExit": False}, "KeepAlive must restart it on failure")
arguments = agent.get("ProgramArguments")
check(isinstance(arguments, list) and all(isinstance(a, str) for a in arguments),
      "ProgramArguments must be an array of strings")
check(os.path.isabs(arguments[0]), "ProgramArguments[0] must be an absolute path")
check(sandgate in arguments, f"ProgramArguments must run {sandgate}")
check(" serve " in arguments[2], "the command must be `sandgate serve`")
for key in ("StandardOutPath", "StandardErrorPath", "WorkingDirectory"):
    # launchd expands neither ~ nor $HOME in these.
    check("~" not in agent.get(key, "") and "$" not in agent.get(key, ""), f"{key} cannot use ~ or $HOME")
print("\n".join(arguments))
PY

# Run the agent's command as launchd would (HOME set, no shell start-up files), on a free port.
mapfile -t arguments <"$work/arguments.txt"
home=$work/home
mkdir -p "$home/Library/Logs"
env -i PATH=/usr/bin:/bin HOME="$home" SANDGATE_LISTEN=127.0.0.1:0 \
  SANDGATE_BLOCKLIST="$prefix/share/sandgate/blocked.txt" "${arguments[@]}" &
gate_pid=$!
for _ in $(seq 100); do
  grep -q "^sandgate listening on 127.0.0.1:" "$home/Library/Logs/sandgate.out.log" 2>/dev/null && break
  kill -0 "$gate_pid" 2>/dev/null || fail "the agent's command exited: $(cat "$home"/Library/Logs/* 2>/dev/null)"
  sleep 0.1
done
grep -q "^sandgate listening on 127.0.0.1:" "$home/Library/Logs/sandgate.out.log" ||
  fail "no listening line in ~/Library/Logs/sandgate.out.log within 10 s"
grep -q "blocklist $prefix/share/sandgate/blocked.txt" "$home/Library/Logs/sandgate.log" ||
  fail "the decision log ~/Library/Logs/sandgate.log lacks the start-up notes: $(cat "$home/Library/Logs/sandgate.log")"
# The shell exec'd sandgate: launchd's signals reach the gate itself, which drains and exits 0.
[[ $(readlink "/proc/$gate_pid/exe" 2>/dev/null || echo "$prefix/bin/sandgate") == "$prefix/bin/sandgate" ]] ||
  fail "the agent's process is $(readlink "/proc/$gate_pid/exe"), not sandgate"
kill -TERM "$gate_pid"
status=0
wait "$gate_pid" || status=$?
gate_pid=
[[ $status -eq 0 ]] || fail "sandgate exited $status after SIGTERM"

echo "service_files_test: ok"
