// The unix-socket allow-list of `sandgate run` on Linux, for sockets that appear after start.
//
// A host daemon's socket bound to a path the confined command can see (a restarted Docker
// daemon's ~/.docker/run/docker.sock, say) is reachable through the mount view whenever it is
// made: hiding what exists at start (private_view) cannot cover what appears later, read-only
// mounts do not stop connect(), and Landlock (ABI 7) does not cover it. So connect(), and
// sendto() with an address, of every process inside are handed to this supervisor by the
// seccomp filter (user notification), and the supervisor makes the call itself on the caller's
// own socket (taken with pidfd_getfd), after judging the destination:
//   - a socket that is not AF_UNIX (the family the socket has, not the one the address claims),
//     an abstract or unnamed unix address: done as asked (the network namespace fences them);
//   - a unix path: opened in the caller's view (its root, its working folder), and refused with
//     ECONNREFUSED when the socket there is bound in the host's network namespace (asked of the
//     kernel with sock_diag at the time of the call, so one made after start counts) and is not
//     listed (--allow-unix-socket, SSH_AUTH_SOCK). The call is then made on exactly the inode that
//     was judged (through /proc/self/fd), so nothing can be swapped in between.
// The caller's memory is read once; a caller that cannot be read (it made itself non-dumpable)
// is refused with EACCES. Not covered: sendmsg() with an address on an unconnected datagram
// socket (seccomp cannot read the address inside the message header, and notifying every
// sendmsg would tax every program).
//
// Thread-safe; owns a thread, and one short-lived thread per call being made.
#pragma once

#include <sys/types.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sandgate::sandbox {

// The (device, inode) pairs of every path-bound unix socket in the caller's network namespace,
// as sock_diag reports them (32 bits each). Empty on error.
std::set<std::pair<std::uint32_t, std::uint32_t>> bound_unix_socket_inodes();

class UnixConnectGuard {
 public:
  // `notify_fd`: the seccomp listener (owned from here on); `allowed`: socket paths, in this
  // process's view, that may be reached although the host's (stat()ed at each call).
  UnixConnectGuard(int notify_fd, std::vector<std::string> allowed);
  ~UnixConnectGuard();  // stop()s
  UnixConnectGuard(const UnixConnectGuard&) = delete;
  UnixConnectGuard& operator=(const UnixConnectGuard&) = delete;

  // Ends the supervisor's thread. Calls being made finish on their own threads. Idempotent.
  void stop();

  struct State;  // shared with the per-call threads

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace sandgate::sandbox
