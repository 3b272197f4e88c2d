// RFC 6724 destination ordering (contract: address_order.hpp).
#include "proxy/dns/address_order.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace sandgate::dns {
namespace {

namespace asio = boost::asio;
using Bytes = asio::ip::address_v6::bytes_type;

// Any port will do: a UDP connect() only picks the route and the source address.
constexpr std::uint16_t probe_port = 9;

// An address as RFC 6724 sees it: IPv4 as IPv4-mapped IPv6.
Bytes as_v6(const asio::ip::address& address) {
  if (address.is_v6()) {
    return address.to_v6().to_bytes();
  }
  return asio::ip::make_address_v6(asio::ip::v4_mapped, address.to_v4()).to_bytes();
}

bool has_prefix(const Bytes& bytes, std::initializer_list<std::uint8_t> prefix, int bits) {
  auto it = prefix.begin();
  for (int i = 0; bits > 0; ++i, ++it, bits -= 8) {
    const std::uint8_t value = it == prefix.end() ? 0 : *it;
    const std::uint8_t mask = bits >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - bits));
    if ((bytes[static_cast<std::size_t>(i)] & mask) != (value & mask)) {
      return false;
    }
  }
  return true;
}

bool is_v4_mapped(const Bytes& b) {
  return has_prefix(b, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96);
}

// The default policy table (RFC 6724 section 2.1): {precedence, label}.
std::pair<int, int> policy(const Bytes& b) {
  static const Bytes loopback = asio::ip::address_v6::loopback().to_bytes();
  if (b == loopback) {
    return {50, 0};
  }
  if (is_v4_mapped(b)) {
    return {35, 4};
  }
  if (has_prefix(b, {0x20, 0x02}, 16)) {
    return {30, 2};
  }
  if (has_prefix(b, {0x20, 0x01, 0, 0}, 32)) {
    return {5, 5};
  }
  if (has_prefix(b, {0xfc}, 7)) {
    return {3, 13};
  }
  if (has_prefix(b, {}, 96)) {
    return {1, 3};
  }
  if (has_prefix(b, {0xfe, 0xc0}, 10)) {
    return {1, 11};
  }
  if (has_prefix(b, {0x3f, 0xfe}, 16)) {
    return {1, 12};
  }
  return {40, 1};
}

// RFC 6724 section 3.1 (and 3.2 for IPv4): 2 link-local, 5 site-local, 14 global.
int scope(const Bytes& b) {
  if (b[0] == 0xff) {
    return b[1] & 0x0f;  // multicast carries its scope
  }
  if (is_v4_mapped(b)) {
    const bool link_local = b[12] == 127 || (b[12] == 169 && b[13] == 254);
    return link_local ? 2 : 14;
  }
  if (b == asio::ip::address_v6::loopback().to_bytes() || has_prefix(b, {0xfe, 0x80}, 10)) {
    return 2;
  }
  if (has_prefix(b, {0xfe, 0xc0}, 10)) {
    return 5;
  }
  return 14;
}

int common_prefix(const Bytes& a, const Bytes& b) {
  int bits = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const unsigned diff = static_cast<unsigned>(a[i] ^ b[i]);
    if (diff != 0) {
      for (unsigned mask = 0x80; (diff & mask) == 0; mask >>= 1) {
        ++bits;
      }
      return bits;
    }
    bits += 8;
  }
  return bits;
}

// The source address the kernel would use to reach `destination`, or nothing if it has no route.
std::optional<Bytes> source_for(const asio::ip::address& destination) {
  sockaddr_storage to{};
  socklen_t length = 0;
  if (destination.is_v4()) {
    auto* in = reinterpret_cast<sockaddr_in*>(&to);
    in->sin_family = AF_INET;
    in->sin_port = htons(probe_port);
    in->sin_addr.s_addr = htonl(destination.to_v4().to_uint());
    length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&to);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(probe_port);
    const Bytes bytes = destination.to_v6().to_bytes();
    std::memcpy(&in6->sin6_addr, bytes.data(), bytes.size());
    in6->sin6_scope_id = destination.to_v6().scope_id();
    length = sizeof(sockaddr_in6);
  }
  const int fd = ::socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd < 0) {
    return std::nullopt;
  }
  std::optional<Bytes> source;
  sockaddr_storage from{};
  socklen_t from_length = sizeof from;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), length) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&from), &from_length) == 0) {
    if (from.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&from);
      source = as_v6(asio::ip::address_v4(ntohl(in->sin_addr.s_addr)));
    } else if (from.ss_family == AF_INET6) {
      Bytes bytes;
      std::memcpy(bytes.data(), &reinterpret_cast<const sockaddr_in6*>(&from)->sin6_addr,
                  bytes.size());
      source = bytes;
    }
  }
  ::close(fd);
  return source;
}

struct Candidate {
  asio::ip::address address;
  Bytes destination;
  std::optional<Bytes> source;
};

// True when `a` should be tried before `b` (RFC 6724 section 6, rules 1, 2, 5, 6, 8, 9).
bool before(const Candidate& a, const Candidate& b) {
  if (a.source.has_value() != b.source.has_value()) {
    return a.source.has_value();  // rule 1
  }
  const int scope_a = scope(a.destination);
  const int scope_b = scope(b.destination);
  if (a.source && b.source) {
    const bool match_a = scope(*a.source) == scope_a;
    const bool match_b = scope(*b.source) == scope_b;
    if (match_a != match_b) {
      return match_a;  // rule 2
    }
    const bool label_a = policy(*a.source).second == policy(a.destination).second;
    const bool label_b = policy(*b.source).second == policy(b.destination).second;
    if (label_a != label_b) {
      return label_a;  // rule 5
    }
  }
  const int precedence_a = policy(a.destination).first;
  const int precedence_b = policy(b.destination).first;
  if (precedence_a != precedence_b) {
    return precedence_a > precedence_b;  // rule 6
  }
  if (scope_a != scope_b) {
    return scope_a < scope_b;  // rule 8
  }
  if (a.source && b.source && a.address.is_v6() && b.address.is_v6() &&
      !is_v4_mapped(a.destination) && !is_v4_mapped(b.destination)) {
    const int prefix_a = std::min(common_prefix(*a.source, a.destination), 64);
    const int prefix_b = std::min(common_prefix(*b.source, b.destination), 64);
    if (prefix_a != prefix_b) {
      return prefix_a > prefix_b;  // rule 9
    }
  }
  return false;  // rule 10: stable_sort keeps the given order
}

}  // namespace

void order_destinations(std::vector<asio::ip::address>& addresses) {
  if (addresses.size() < 2) {
    return;  // nothing to order: spare the probe sockets
  }
  std::vector<Candidate> candidates;
  candidates.reserve(addresses.size());
  for (const auto& address : addresses) {
    candidates.push_back({address, as_v6(address), source_for(address)});
  }
  std::stable_sort(candidates.begin(), candidates.end(), before);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    addresses[i] = candidates[i].address;
  }
}

}  // namespace sandgate::dns
