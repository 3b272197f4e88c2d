// Where a captured connection was going: the address and port the command dialled before the
// capture's nftables rule redirected it to the gate (linux/capture_network.hpp).
#pragma once

#include <sys/socket.h>

namespace sandgate::sandbox {

// The original destination of a connection accepted on a capture listener (SO_ORIGINAL_DST for
// IPv4, IP6T_SO_ORIGINAL_DST for IPv6: what the process dialled before the redirect), into
// `out` (AF_INET or AF_INET6); false when the socket has none (it was not redirected).
// Thread-safe; one system call.
bool original_destination(int fd, sockaddr_storage& out);

}  // namespace sandgate::sandbox
