// SO_ORIGINAL_DST (Linux). See capture_sockets.hpp.
#include "sandbox-profile/process/capture_sockets.hpp"

#include <netinet/in.h>

namespace sandgate::sandbox {
namespace {

// From <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h>, which cannot be
// included next to <net/if.h> (both define the interface flags).
constexpr int kSoOriginalDst = 80;      // SO_ORIGINAL_DST, level SOL_IP
constexpr int kIp6tSoOriginalDst = 80;  // IP6T_SO_ORIGINAL_DST, level SOL_IPV6

}  // namespace

bool original_destination(int fd, sockaddr_storage& out) {
  out = {};
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return false;
  }
  length = sizeof out;
  if (local.ss_family == AF_INET6) {
    return ::getsockopt(fd, SOL_IPV6, kIp6tSoOriginalDst, &out, &length) == 0 &&
           out.ss_family == AF_INET6;
  }
  return ::getsockopt(fd, SOL_IP, kSoOriginalDst, &out, &length) == 0 && out.ss_family == AF_INET;
}

}  // namespace sandgate::sandbox
