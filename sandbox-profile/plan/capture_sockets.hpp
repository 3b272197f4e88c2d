// The capture's sockets (Linux, `run --capture`): made in the command's namespace by
// linux/capture_network.hpp and served by the gate from the host. A plain struct every platform
// compiles, as it crosses run_options.hpp and the gate's interface.
#pragma once

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

  // Closes every descriptor (inline: the struct crosses run_options.hpp on every platform).
  void close_all() {
    for (auto* list : {&tcp, &dns_udp, &dns_tcp}) {
      for (int fd : *list) {
        ::close(fd);
      }
      list->clear();
    }
  }
};

}  // namespace sandgate::sandbox
