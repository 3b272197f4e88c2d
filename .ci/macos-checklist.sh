#!/usr/bin/env bash
# Issue 41's checklist, on a Mac: one command per finding, each run inside `sandgate run` and
# expected to FAIL (the profile refuses it), and a few controls expected to work (a profile that
# refuses everything would pass the first kind alone). docs/macos-checklist.md says what each one
# shows. Runs in a scratch HOME and working folder under /tmp, never in yours; needs a built
# build/bin/sandgate (or SANDGATE=PATH), python3 and git. Exit status: the number of surprises.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ "$(uname -s)" != Darwin ]]; then
  echo "macos-checklist: needs macOS (sandbox-exec)" >&2
  exit 2
fi
bin=${SANDGATE:-$PWD/build/bin/sandgate}
[[ -x "$bin" ]] || { echo "macos-checklist: no $bin: build first (make gate)" >&2; exit 2; }

scratch=$(mktemp -d /tmp/sandgate-checklist.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
home=$scratch/home
work=$scratch/work
mkdir -p "$home/.cache/huggingface" "$home/.aws" "$home/Library/Caches" "$home/Library/Messages" \
  "$home/Library/LaunchAgents" "$home/.local/share/sandgate/ca" "$home/.claude" "$work"
echo not-a-real-token >"$home/.cache/huggingface/token"
printf '[default]\naws_secret_access_key = not-real\n' >"$home/.aws/credentials"
echo not-a-real-key >"$home/.local/share/sandgate/ca/key.pem"
echo hello >"$home/Library/Messages/chat.db"
git -C "$work" init -q
git -C "$work" -c user.email=check@example.com -c user.name=check commit -q --allow-empty -m init

# Helpers for the terminal and ps -E checks (readable inside: reads are not restricted).
cat >"$scratch/with-user-tty" <<'EOF'
#!/bin/sh
# Runs "$@" with USER_TTY naming the terminal it was started on (script's, the user's here).
USER_TTY=$(tty) exec "$@"
EOF
cat >"$scratch/own-tty" <<'EOF'
#!/bin/sh
# Inside run: a terminal, and not the user's.
test -t 0 && test "$(tty)" != "$USER_TTY"
EOF
cat >"$scratch/tiocsti-user-tty" <<'EOF'
#!/usr/bin/python3
# Inside run: TIOCSTI into the user's terminal, opened by its name.
import fcntl, os, termios
fd = os.open(os.environ["USER_TTY"], os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(fd, termios.TIOCSTI, b"#")
EOF
cat >"$scratch/ps-e-outside" <<'EOF'
#!/bin/sh
# Outside any sandbox: while "$@" (a run with a --secret) runs, ps -E shows its sentinel and
# never the real value.
GITHUB_TOKEN=ghp_checklistRealValue0123456789abcdefAB "$@" --secret GITHUB_TOKEN=api.github.com \
  -- /bin/sleep 4 &
sleep 2
shown=$(/bin/ps -E -ww -o command= -p $!)
wait
echo "$shown" | grep -q 'GITHUB_TOKEN=ghp_' && ! echo "$shown" | grep -q checklistRealValue
EOF
chmod +x "$scratch/with-user-tty" "$scratch/own-tty" "$scratch/tiocsti-user-tty" "$scratch/ps-e-outside"

surprises=0
# check fail|ok FINDING WHAT -- COMMAND...: COMMAND runs in the working folder with the scratch HOME.
check() {
  local want=$1 finding=$2 what=$3
  shift 4
  local got=ok
  (cd "$work" && HOME="$home" "$@") >"$scratch/out" 2>&1 || got=fail
  if [[ "$got" == "$want" ]]; then
    echo "as expected ($want)  $finding: $what"
  else
    echo "SURPRISE ($got)    $finding: $what"
    sed 's/^/      /' "$scratch/out" | tail -8
    surprises=$((surprises + 1))
  fi
}
run=("$bin" run)

# Controls: a confined command still works.
check ok control "a plain command" -- "${run[@]}" -- /usr/bin/true
check ok control "a file written in the working folder" -- "${run[@]}" -- /bin/sh -c 'echo hi >out.txt'
check ok control "git commits" -- "${run[@]}" -- /bin/sh -c \
  'git -c user.email=c@example.com -c user.name=c commit -q --allow-empty -m inside'
check ok control "a named sysctl" -- "${run[@]}" -- /usr/sbin/sysctl -n hw.ncpu kern.osrelease

# 1. The user's terminal (script(1) gives the run a terminal, as a shell would): the command has
# a relayed pty of its own, where TIOCSTI types only into its own input; the user's, by name, is
# out of reach.
check ok 1 "a terminal of its own, not the user's" -- /usr/bin/script -q /dev/null \
  "$scratch/with-user-tty" "${run[@]}" -- "$scratch/own-tty"
check ok 1 "TIOCSTI into its own terminal (its own input)" -- /usr/bin/script -q /dev/null \
  "${run[@]}" -- /usr/bin/python3 -c \
  'import fcntl,termios; fcntl.ioctl(open("/dev/tty","rb"),termios.TIOCSTI,b"\n")'
check fail 1 "TIOCSTI into the user's terminal, opened by name" -- /usr/bin/script -q /dev/null \
  "$scratch/with-user-tty" "${run[@]}" -- "$scratch/tiocsti-user-tty"
# 2. Another process's arguments and environment (KERN_PROCARGS2): the gate's, the parent.
check fail 2 "ps -E shows the gate's environment" -- "${run[@]}" -- /bin/sh -c \
  '/bin/ps -E -ww -o command= -p $PPID | grep -q PATH='
check fail 2 "the process table (kern.proc.all)" -- "${run[@]}" -- /bin/sh -c \
  '/bin/ps -ax -o pid= | grep -q .'
check ok 2 "outside, ps -E of the gate shows a --secret's sentinel, not its value" -- \
  "$scratch/ps-e-outside" "${run[@]}"
# 3. A credential store read by renaming a writable parent.
check fail 3 "mv ~/.cache/huggingface, then read the token" -- "${run[@]}" \
  --allow-write "$home/.cache" -- /bin/sh -c 'mv "$HOME/.cache/huggingface" "$HOME/.cache/x" && cat "$HOME/.cache/x/token"'
# 4. A credential store under another spelling (APFS is case-insensitive by default).
check fail 4 "cat ~/.AWS/credentials" -- "${run[@]}" -- /bin/sh -c 'cat "$HOME/.AWS/credentials"'
# 5. Git redirection and code the user's git runs later.
check fail 5 "write .git/commondir" -- "${run[@]}" -- /bin/sh -c 'echo /tmp/x >.git/commondir'
check fail 5 "a nested repository" -- "${run[@]}" -- /bin/sh -c 'mkdir -p vendor/dep/.git'
check fail 5 "a link in .git" -- "${run[@]}" -- /bin/sh -c 'ln -s "$HOME/.zshrc" .git/refs/heads/link'
check fail 5 "write .git/config" -- "${run[@]}" -- /bin/sh -c 'echo "[core] fsmonitor = x" >>.git/config'
check fail 5 "write .git/info/attributes" -- "${run[@]}" -- /bin/sh -c 'echo "* filter=x" >.git/info/attributes'
# 6. A unix socket squatted in a shared folder.
check fail 6 "bind a socket in /tmp" -- "${run[@]}" -- /usr/bin/python3 -c \
  'import socket; socket.socket(socket.AF_UNIX).bind("/private/tmp/sandgate-checklist.sock")'
check fail 6 "bind a socket in the working folder" -- "${run[@]}" -- /usr/bin/python3 -c \
  'import socket; socket.socket(socket.AF_UNIX).bind("x.sock")'
check ok 6 "bind a socket in the run's private folder (its \$TMPDIR)" -- "${run[@]}" -- \
  /usr/bin/python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).bind(os.environ["TMPDIR"]+"/s.sock")'
check ok 6 "the private folder is gone after the run" -- /bin/sh -c \
  'd=$("$0" run -- /bin/sh -c "echo \$TMPDIR" 2>/dev/null | tail -1)
   case "$d" in */sandgate-run.*) ! test -e "$d" ;; *) false ;; esac' "$bin"
# 7. Caches that hold what runs later; trustd.
check fail 7 "write ~/Library/Caches" -- "${run[@]}" -- /usr/bin/touch "$home/Library/Caches/x"
check fail 7 "write the per-user cache folder (xcrun's)" -- "${run[@]}" -- /bin/sh -c \
  'touch "$(getconf DARWIN_USER_CACHE_DIR)sandgate-checklist"'
check fail 7 "a certificate check through trustd" -- "${run[@]}" -- /usr/bin/security verify-cert \
  -c /etc/ssl/cert.pem -p ssl -L
# 8. Rule order, loopback, macOS secrets, autostart, setuid helpers.
check fail 8 "read the inspection CA's key inside an --allow-write folder" -- "${run[@]}" \
  --allow-write "$home/.local/share" -- /bin/cat "$home/.local/share/sandgate/ca/key.pem"
check fail 8 "UDP to localhost" -- "${run[@]}" -- /usr/bin/python3 -c \
  'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 53))'
check fail 8 "serve on every interface" -- "${run[@]}" --allow-inbound-port 8765 -- \
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0", 8765)); s.listen()'
check fail 8 "read ~/Library/Messages" -- "${run[@]}" -- /bin/cat "$home/Library/Messages/chat.db"
check fail 8 "write a LaunchAgent with --allow-write ~/Library" -- "${run[@]}" \
  --allow-write "$home/Library" -- /usr/bin/touch "$home/Library/LaunchAgents/x.plist"
check fail 8 "sudo with a live ticket" -- "${run[@]}" -- /usr/bin/sudo -n /usr/bin/true

echo "macos-checklist: $surprises surprise(s)"
exit "$surprises"
