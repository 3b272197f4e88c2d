// The invariants every parsed host must keep, whichever parser produced it (parse_host,
// parse_authority, the plain-HTTP target parser): one normal form, which re-parses to itself.
// Shared by host_fuzz, ip_fuzz and request_head_fuzz.
#pragma once

#include <string>
#include <string_view>

#include "rules/host.hpp"
#include "rules/ip_address.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace sandgate::fuzz {

inline std::string describe(const rules::Host& host) {
  const char* kind = host.kind == rules::HostKind::dns_name ? "dns"
                     : host.kind == rules::HostKind::ipv4   ? "ipv4"
                                                            : "ipv6";
  return std::string(kind) + " '" + escaped(host.name) + "'";
}

// Checks that `host` is in normal form: the characters its kind allows, the length limits, the
// address agreeing with the name, and parse_host() of its printed form giving it back unchanged
// (so the name the policy checks is the name that would be dialled, however often it is
// re-read). `input` is only for the failure message.
inline void check_host_normal_form(const rules::Host& host, std::string_view input) {
  using rules::HostKind;
  const std::string& name = host.name;
  const auto where = [&] { return describe(host) + " from '" + escaped(input) + "'"; };
  FUZZ_CHECK(!name.empty(), where());

  // Only an IPv6 zone may hold upper case or '%' (zones are interface names, kept as written).
  const std::size_t zone_at = host.kind == HostKind::ipv6 ? name.find('%') : std::string::npos;
  const std::string_view address_part = std::string_view(name).substr(0, zone_at);
  for (const char c : address_part) {
    FUZZ_CHECK(!(c >= 'A' && c <= 'Z'), "upper case in " + where());
    FUZZ_CHECK(c != '@' && c != '/' && c != '\\' && c != '%' && c != '?' && c != '#',
               "forbidden character in " + where());
    FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f,
               "control or non-ASCII byte in " + where());
  }

  switch (host.kind) {
    case HostKind::dns_name: {
      FUZZ_CHECK(name.size() <= 253, "name over 253 octets: " + where());
      FUZZ_CHECK(name.back() != '.' && name.front() != '.', "edge dot in " + where());
      FUZZ_CHECK(name.find("..") == std::string::npos, "empty label in " + where());
      std::size_t label = 0;
      for (const char c : name) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        FUZZ_CHECK(ok, "byte outside [a-z0-9._-] in " + where());
        label = c == '.' ? 0 : label + 1;
        FUZZ_CHECK(label <= 63, "label over 63 octets in " + where());
      }
      // A DNS name that some reader could take for an IPv4 address (`1.2.3.4`, `0x7f.1`) would
      // be checked as a name but dialled as an address.
      rules::IpAddress ignored;
      FUZZ_CHECK(rules::parse_ipv4(name, ignored) == rules::Ipv4Parse::not_ipv4,
                 "a DNS name that reads as IPv4: " + where());
      FUZZ_CHECK(host.display() == name, where());
      break;
    }
    case HostKind::ipv4:
      FUZZ_CHECK(host.address.is_v4() && host.address.zone.empty(), where());
      FUZZ_CHECK(name == host.address.to_string(), "name is not the address: " + where());
      FUZZ_CHECK(host.display() == name, where());
      break;
    case HostKind::ipv6:
      FUZZ_CHECK(!host.address.is_v4(), where());
      FUZZ_CHECK(name == host.address.to_string(), "name is not the address: " + where());
      FUZZ_CHECK(host.display() == "[" + name + "]", where());
      FUZZ_CHECK(zone_at == std::string::npos || zone_at + 1 < name.size(),
                 "empty zone in " + where());
      break;
  }

  // Idempotent: the printed form parses back to the very same Host. An IPv6 literal is re-read
  // in brackets, the only form parse_host() accepts with a zone.
  const std::string again_text = host.kind == HostKind::ipv6 ? host.display() : name;
  const auto again = rules::parse_host(again_text);
  FUZZ_CHECK(again.has_value(),
             "normal form does not re-parse (" +
                 std::string(again.has_value() ? "" : rules::to_string(again.error())) +
                 "): " + where());
  FUZZ_CHECK(*again == host, "normal form re-parses to " + describe(*again) + ": " + where());
}

}  // namespace sandgate::fuzz
