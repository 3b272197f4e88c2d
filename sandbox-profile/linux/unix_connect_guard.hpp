// The unix-socket allow-list of `sandgate run` on Linux, for sockets that appear after start.
//
// A host daemon's socket bound to a path the confined command can see (a restarted Docker
// daemon's ~/.docker/run/docker.sock, say) is reachable through the mount view whenever it is
// made: hiding what exists at start (private_view) cannot cover what appears later, read-only
// mounts do not stop connect(), and Landlock (ABI 7) does not cover it. So connect(), and
// sendto() with an address, of every process inside are handed to this supervisor by the
// seccomp filter (user notification), and the supervisor makes the call itself on the caller's
// own socket (taken with pidfd_getfd), after judging the destination, never with more authority
// than the caller has (the kernel checks some calls against the capabilities of the process
// that makes them, and `run` owns the sandbox's user namespace):
//   - the family is the one the socket has, not the one the address claims; only unix, IPv4,
//     IPv6 and netlink sockets exist inside (the filter), any other answers EAFNOSUPPORT;
//   - sendto() flags by allow-list: MSG_ZEROCOPY and the rest answer EOPNOTSUPP;
//   - IPv4, IPv6, an abstract or unnamed unix address: made as asked (the network namespace
//     fences them; no capability is asked of these calls);
//   - netlink: only what needs no capability (see judge_netlink), else EPERM;
//   - a unix path: opened in the caller's view (its root, its working folder), and made only when
//     the socket there is bound in the confinement's own network namespace (the command's own
//     sockets: asked of the kernel with sock_diag, through a socket made inside, at the time of
//     the call) or is listed (--allow-unix-socket, SSH_AUTH_SOCK); every other socket (the host's,
//     a container's, another sandbox's, whenever it was made) is refused with ECONNREFUSED. The
//     call is then made on exactly the inode that was judged (through /proc/self/fd), so nothing
//     can be swapped in between.
// Why not let the kernel make the rest as the caller (SECCOMP_USER_NOTIF_FLAG_CONTINUE): it would
// run the call on whatever the caller's descriptor number and memory hold by then, which its other
// threads can change after the judgement (a unix socket and a path in place of a netlink socket).
// The caller's memory is read once; a caller that cannot be read (it made itself non-dumpable)
// is refused with EACCES. Not covered: sendmsg() with an address on an unconnected datagram
// socket (seccomp cannot read the address inside the message header, and notifying every
// sendmsg would tax every program).
//
// Thread-safe; owns a thread, and a pool of threads that make the calls (kept while in use).
#pragma once

#include <sys/types.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sandgate::sandbox {

// The (device, inode) pairs of every path-bound unix socket in the network namespace of the
// sock_diag socket `diag` (-1: one made now, in the caller's namespace), in stat()'s encoding
// (32 bits each). Empty on error.
std::set<std::pair<std::uint32_t, std::uint32_t>> bound_unix_socket_inodes(int diag = -1);

class UnixConnectGuard {
 public:
  // `notify_fd`: the seccomp listener; `diag_fd`: a NETLINK_SOCK_DIAG socket made in the
  // confinement's network namespace (both owned from here on); `allowed`: socket paths, in this
  // process's view, that may be reached although not the confinement's (stat()ed at each call).
  UnixConnectGuard(int notify_fd, int diag_fd, std::vector<std::string> allowed);
  ~UnixConnectGuard();  // stop()s
  UnixConnectGuard(const UnixConnectGuard&) = delete;
  UnixConnectGuard& operator=(const UnixConnectGuard&) = delete;

  // Ends the supervisor's thread; the pool's threads finish the calls being made, then end.
  // Idempotent.
  void stop();

  struct State;  // shared with the pool's threads

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace sandgate::sandbox
