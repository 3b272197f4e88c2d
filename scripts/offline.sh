#!/usr/bin/env bash
# Runs a command in a network namespace of its own whose only interface is loopback, so that
# nothing it does can leave the machine, DNS included: the test suites and the benchmarks run
# under it (make test, make test-tsan, make bench). Every test already gives its gate a
# fake DNS server on loopback; this makes a slip impossible rather than unlikely.
#
# As root: a new network namespace only (root keeps its users, which sshd's privilege
# separation needs). As anyone else: a new user namespace mapping only the current user, with
# the capabilities it grants kept so that `ip` can bring loopback up. Where namespaces are not
# available (some containers), the command runs as it is, with a warning: the tests' fake DNS
# is then the only guard.
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: scripts/offline.sh COMMAND [ARG...]" >&2; exit 2; }
if [[ -n "${SANDGATE_OFFLINE:-}" ]]; then
  exec "$@"  # already inside
fi
if [[ $(id -u) -eq 0 ]]; then
  namespace=(unshare --net)
else
  namespace=(unshare --net --map-current-user --keep-caps)
fi
if ! "${namespace[@]}" true 2>/dev/null || ! command -v ip >/dev/null; then
  echo "offline.sh: cannot create a network namespace here (${namespace[*]}); running" \
       "'$1' without one: only the fake DNS servers keep it on this machine" >&2
  SANDGATE_OFFLINE=unavailable exec "$@"
fi
exec "${namespace[@]}" bash -c 'ip link set lo up && SANDGATE_OFFLINE=1 exec "$@"' offline.sh "$@"
