// The capture's sockets (Linux, `run --capture`): made in the command's namespace by
// linux/capture_network.hpp and served by the gate from the host, and how the gate reads where
// each captured connection was going. A plain struct every platform compiles, as it crosses the
// gate's interface (run/gate_handle.hpp) and the gate's server; original_destination() is
// Linux's (built there only).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace sandgate::sandbox {

// The capture's sockets, made in the namespace and served by the gate from the host. Each
// descriptor is close-on-exec; the owner closes them.
struct CaptureSockets {
  std::vector<int> tcp;      // the capture listener: 127.0.0.1:P, and [::1]:P when IPv6 is up
  std::vector<int> dns_udp;  // bound on 127.0.0.1:53 (and [::1]:53)
  std::vector<int> dns_tcp;  // listening on 127.0.0.1:53 (and [::1]:53)
  std::uint16_t port = 0;    // P

  // Closes every descriptor (inline: the struct crosses the gate's interface on every platform).
  void close_all() {
    for (auto* list : {&tcp, &dns_udp, &dns_tcp}) {
      for (int fd : *list) {
        ::close(fd);
      }
      list->clear();
    }
  }
};

// The original destination of a connection accepted on a capture listener (SO_ORIGINAL_DST for
// IPv4, IP6T_SO_ORIGINAL_DST for IPv6: what the process dialled before the capture's nftables
// rule redirected it), into `out` (AF_INET or AF_INET6); false when the socket has none (it was
// not redirected). Thread-safe; one system call. Linux only.
bool original_destination(int fd, sockaddr_storage& out);

}  // namespace sandgate::sandbox
