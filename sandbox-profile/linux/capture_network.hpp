// Capture for `sandgate run` on Linux: inside the command's network namespace, every outbound
// TCP connection goes to the gate and every DNS query to the gate's DNS server, whatever the
// tool does about proxy variables. Set up by the namespace's init while it still holds
// CAP_NET_ADMIN in its user namespace, before Landlock, the seccomp filter and the dropping of
// privileges (after which the command cannot change any of it):
//   - a default route over `lo` (IPv4 and, when the namespace has ::1, IPv6), so that connect()
//     to any address reaches the output hook instead of failing with ENETUNREACH, and a second
//     address on lo per family (127.0.0.2, 100::1) so that getaddrinfo's AI_ADDRCONFIG, glibc's
//     default, still resolves names;
//   - the sockets the gate serves from the host (handed over like the explicit listener): a TCP
//     listener on 127.0.0.1:P and [::1]:P (the capture listener), and UDP and TCP sockets on
//     127.0.0.1:53 and [::1]:53 (the DNS server);
//   - one nftables table (Debian's libnftables): a nat output chain that redirects DNS (UDP and
//     TCP port 53 to anything but the gate's own DNS address) to the DNS sockets and every other
//     TCP connection not aimed at loopback to port P; a filter output chain that drops everything
//     else not aimed at loopback (all other UDP, so QUIC falls back to TCP; ICMP; other
//     protocols);
//   - a check that the redirect works: a connection to a documentation address is accepted on
//     the capture listener and SO_ORIGINAL_DST names the address dialled;
//   - /etc/resolv.conf (as the command sees it) naming 127.0.0.1, a file bound read-only over it.
//
// set_up_capture() runs in the cloned child, single-threaded, between clone() and exec(); the
// sockets it makes are process/capture_sockets.hpp (handed to the gate on every platform), where
// the gate also reads each connection's destination (original_destination()).
#pragma once

#include <cstdint>
#include <string>

#include "rules/expected.hpp"
#include "sandbox-profile/process/capture_sockets.hpp"

namespace sandgate::sandbox {

// The nftables ruleset that redirects to capture port `port` and fences the rest (the text
// given to libnftables; exposed for tests and for the start-up message).
std::string capture_ruleset(std::uint16_t port);

// In the namespace's init, after loopback is up and the private view is built: routes, sockets,
// rules, the redirect check and resolv.conf as above. The error is a sentence for the user (what
// failed and what to do, including `--capture=off`).
Expected<CaptureSockets, std::string> set_up_capture();

}  // namespace sandgate::sandbox
