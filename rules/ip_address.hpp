// IP addresses as the gate sees them: parsing every spelling a resolver or a WHATWG URL parser
// accepts, canonical printing, and classification (loopback, private, metadata, ...), looking
// through IPv6 forms that carry an IPv4 address inside them.
//
// Everything here is pure computation on values: thread-safe, no allocation except to_string().
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::rules {

struct IpAddress {
  enum class Family : std::uint8_t { v4, v6 };

  Family family = Family::v4;
  // Network byte order. An IPv4 address uses bytes[0..3]; the rest stay zero.
  std::array<std::uint8_t, 16> bytes{};
  // Scope of a link-local IPv6 address (`fe80::1%eth0`), as written, without the '%'.
  std::string zone;

  static IpAddress from_v4(std::uint32_t host_order);
  static IpAddress from_v6(const std::array<std::uint8_t, 16>& network_order);

  bool is_v4() const { return family == Family::v4; }
  std::uint32_t v4_host_order() const;  // only for is_v4()

  // Canonical text: dotted quad for IPv4; RFC 5952 for IPv6 (lower case, longest zero run
  // compressed, embedded IPv4 of mapped addresses in dotted form), no brackets, `%zone` kept.
  std::string to_string() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// The outcome of reading a host as IPv4. `not_ipv4` means the text does not end in a number,
// so it is a DNS name; `invalid` means it ends in a number but is no valid IPv4 spelling, which
// a URL parser rejects outright (e.g. `1.2.3.256`, `0x`, `1.2.3.4.5`, `example.123`).
enum class Ipv4Parse : std::uint8_t { ok, not_ipv4, invalid };

// Parses IPv4 as inet_aton() and the WHATWG URL host parser do: 1 to 4 dot-separated parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the remaining bytes
// (`127.1`, `2130706433`, `0x7f.1`, `0177.0.0.1`). One trailing dot is allowed (`1.2.3.4.`).
Ipv4Parse parse_ipv4(std::string_view text, IpAddress& out);

// Parses an IPv6 literal without brackets: full, compressed (`::`), with embedded dotted IPv4
// (`::ffff:1.2.3.4`), optionally with a zone (`fe80::1%eth0` or URI-style `%25eth0`). Zone text is
// limited to [A-Za-z0-9._~-]. Returns nothing for anything else.
std::optional<IpAddress> parse_ipv6(std::string_view text);

// What kind of destination an address is. Ordered roughly from most to least dangerous.
enum class AddressClass : std::uint8_t {
  public_address,   // anything not listed below: the open internet
  loopback,         // 127.0.0.0/8, ::1
  unspecified,      // 0.0.0.0/8, :: (connecting to these reaches the local host)
  metadata,         // cloud instance metadata services (169.254.169.254, fd00:ec2::254, ...)
  link_local,       // 169.254.0.0/16, fe80::/10
  private_network,  // RFC 1918: 10/8, 172.16/12, 192.168/16
  carrier_nat,      // 100.64.0.0/10 (RFC 6598)
  unique_local,     // fc00::/7
  multicast,        // 224.0.0.0/4, ff00::/8
  reserved,         // 240.0.0.0/4, 255.255.255.255, and other never-routable ranges
};

std::string_view to_string(AddressClass);

// The IPv4 address carried inside an IPv6 one, if any: IPv4-mapped (::ffff:0:0/96),
// IPv4-compatible (::/96, except :: and ::1), NAT64 (64:ff9b::/96 and 64:ff9b:1::/48),
// 6to4 (2002::/16) and Teredo (2001::/32, the client address, de-obfuscated).
struct EmbeddedIpv4 {
  IpAddress address;
  std::string_view form;  // "IPv4-mapped", "IPv4-compatible", "NAT64", "6to4", "Teredo"
};
std::optional<EmbeddedIpv4> embedded_ipv4(const IpAddress& v6);

// Classifies an address. An IPv6 address that embeds IPv4 takes the class of the embedded
// address when that is more restrictive than public (so `::ffff:127.0.0.1` is loopback and
// `2002:a9fe:a9fe::` is metadata).
AddressClass classify(const IpAddress& address);

}  // namespace sandgate::rules
