// The start-up self-probe of `sandgate run` on Linux: before the command starts, a process in
// exactly the command's confinement (namespaces, private view, Landlock, no privileges) tries
// the ways out that the fence must close, and `run` refuses to start, naming the one that
// worked, if any does:
//   - a direct TCP connection (to a documentation address, 192.0.2.1:443 by default: inside the
//     namespace there is no route, so connect() fails at once and nothing is ever sent); with
//     capture, a UDP datagram to it instead (the fence drops it: sendto() fails);
//   - a host unix socket that `run` created after the confinement was built (as a daemon that
//     restarts would);
//   - writes to the protected paths and to a system folder (nothing is written if one opens:
//     it is closed at once, and a file it had to create is removed), and a chmod of each to the
//     mode it has (Landlock does not cover metadata; the read-only mounts must);
//   - opening a terminal of the host's (/dev/pts/N): another terminal of the user's, whose keys
//     it could read;
//   - a netlink request that needs CAP_NET_ADMIN, sent with an address (through `run`'s
//     supervisor, which owns the user namespace: it must lend no capability), one that changes
//     nothing when allowed (adding lo's own 127.0.0.1/8 again: EEXIST) and EPERM when refused;
//   - binding a unix socket in a folder the host sees (a server the user's tools would trust);
//   - the kernel keyrings (request_key: a key upcall runs a helper in the host's namespaces), a
//     new namespace (unshare), and the namespace's init: tracing it, reading its memory, or
//     taking one of its descriptors (pidfd_getfd), any of which would hand over what init holds
//     or let the command act as a process without the filter.
//
// Runs in the probing process; not thread-safe (uses errno); no allocation after the targets
// are built is needed by the caller.
#pragma once

#include <string>
#include <vector>

namespace sandgate::sandbox {

struct ProbeTargets {
  std::string tcp_host = "192.0.2.1";  // numeric IPv4
  unsigned short tcp_port = 443;
  std::string host_socket;                 // a listening unix socket on the host; may be empty
  std::vector<std::string> no_write;       // files or folders that must not be writable, nor have
                                           // their mode changed
  std::string host_pty;                    // a terminal of the host's (/dev/pts/N); may be empty
  unsigned long long host_pty_device = 0;  // st_dev of the host's devpts, to recognise it
  // Capture is on: a direct TCP connection is redirected to the gate by design (its set-up
  // checked that, capture_network.hpp), so the probe sends a UDP datagram to the TCP target
  // instead, which the capture's fence must refuse.
  bool captured = false;
  // The namespace's init, which the probe and the command must not reach (0: not probed).
  int init_pid = 0;
  // The probe holds no capability: a privileged netlink request must be refused (false: not
  // probed, as where the prober owns its namespace).
  bool netlink = false;
  // A folder the host sees, where no unix socket may be bound (empty: not probed).
  std::string no_socket_folder;
};

// What escaped, one sentence each; empty when the fence held everywhere.
std::vector<std::string> probe_fence(const ProbeTargets& targets);

}  // namespace sandgate::sandbox
