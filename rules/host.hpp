// Destination hosts: strict syntax and one normal form, so that the name the policy checks is
// exactly the name the proxy dials. Also parses `host:port` authorities as sent in CONNECT.
//
// Pure functions on values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rules/expected.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::rules {

// The longest DNS name in octets, without the trailing dot (RFC 1035, section 2.3.4).
inline constexpr std::size_t kMaxDnsName = 253;

enum class HostKind : std::uint8_t { dns_name, ipv4, ipv6 };

struct Host {
  HostKind kind = HostKind::dns_name;
  // Normal form: a DNS name lower-cased, in punycode (UTS #46), without a trailing dot; an
  // IPv4 address as a dotted quad; an IPv6 address in RFC 5952 form without brackets.
  std::string name;
  // The address, for IP literals.
  IpAddress address;

  bool is_ip() const { return kind != HostKind::dns_name; }
  // `[v6]` for IPv6, `name` otherwise: the form to print in `host:port`.
  std::string display() const;

  friend bool operator==(const Host&, const Host&) = default;
};

// Why a host or authority was refused. Stable: tests and logs key on these.
enum class HostError : std::uint8_t {
  empty,               // nothing there
  too_long,            // a DNS name over 253 octets
  label_too_long,      // a label over 63 octets
  empty_label,         // `a..b`, `.a`, or more than one trailing dot
  userinfo,            // `user@host`: the text before '@' would be checked, the rest dialled
  path,                // '/', '\\', '?' or '#' inside the host
  percent_escape,      // '%' outside an IPv6 zone: decoders disagree on what it means
  nul,                 // a NUL byte
  whitespace,          // spaces, tabs, line breaks, other control characters
  bad_character,       // anything else a DNS name cannot hold
  bad_hyphen,          // a label that starts or ends with '-'
  bad_underscore,      // '_' in the last label (top-level domains never have one)
  bad_ipv4,            // ends in a number but is no valid IPv4 spelling (`1.2.3.256`)
  bad_ipv6,            // inside brackets but no valid IPv6 literal
  unbalanced_bracket,  // '[' without ']' or the reverse
  bad_idn,       // a non-ASCII name UTS #46 rejects, or an `xn--` label that is no valid punycode
  missing_port,  // an authority without `:port`
  bad_port,      // not 1..65535 in plain decimal without leading zeros
};

std::string_view to_string(HostError);  // a short sentence, e.g. "user information ('@') in host"

// Parses and normalises a host: a DNS name, an IPv4 literal in any spelling parse_ipv4()
// accepts, or an IPv6 literal with or without brackets.
Expected<Host, HostError> parse_host(std::string_view text);

struct Authority {
  Host host;
  std::uint16_t port = 0;
};

// Parses the authority-form target of CONNECT: `host:port` or `[v6]:port`. The port is required
// and must be plain decimal 1..65535 without leading zeros. An unbracketed IPv6 literal is refused.
Expected<Authority, HostError> parse_authority(std::string_view text);

}  // namespace sandgate::rules
