// Fuzz target: IP literal parsing, printing and classification (rules/ip_address.hpp), checked
// against the C library's own numeric parsers. An address spelling the system reads one way and
// the gate another is a way past the address rules, so the differential checks matter most:
//   - inet_pton(AF_INET6) accepts  =>  parse_ipv6() accepts, the same 16 bytes, no zone;
//   - parse_ipv6() accepts a text without '%'  =>  inet_pton(AF_INET6) accepts it too;
//   - inet_pton(AF_INET) accepts (strict dotted quad)  =>  parse_ipv4() gives that address;
//   - inet_aton() accepts (the liberal spelling: `127.1`, `0x7f.1`, `017700000001`), the text
//     holding no whitespace (inet_aton stops at the first one and ignores the rest) and no part
//     long enough to overflow glibc's unsigned long  =>  parse_ipv4() gives that address;
//   - getaddrinfo(AI_NUMERICHOST) accepts  =>  parse_host() is an error or an IP literal of the
//     same address, never a DNS name (which the gate would resolve and check as a name);
// and the gate's own consistency:
//   - parse_host() agrees with parse_ipv4() on what is IPv4 (for text without ':', brackets and
//     '%', which make it IPv6 or an error), on the address, and on refusing invalid spellings;
//   - to_string() is canonical: it re-parses to the same address (zone included); for IPv4 and
//     for IPv6 without a zone inet_pton agrees, and it equals inet_ntop() except where RFC 5952
//     and glibc differ on purpose (IPv4-compatible ::a.b.c.d);
//   - classify() is total and ignores the zone; embedded_ipv4() is consistent with it: an IPv6
//     address carrying a non-public IPv4 address takes that address's class, and every IPv4
//     address classifies the same through its IPv4-mapped form.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "rules/host.hpp"
#include "rules/ip_address.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using sandgate::fuzz::escaped;
namespace rules = sandgate::rules;
using rules::AddressClass;
using rules::IpAddress;

std::string hex_bytes(const std::uint8_t* bytes, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0xf];
  }
  return out;
}

std::string show(const IpAddress& address) {
  return (address.is_v4() ? "v4 " : "v6 ") + hex_bytes(address.bytes.data(), 16) +
         (address.zone.empty() ? "" : " zone '" + escaped(address.zone) + "'");
}

bool is_c_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// No run of more than 12 characters between dots: below 2^48 in any radix, so glibc's
// inet_aton cannot wrap its unsigned long accumulator around to a small, valid value.
bool short_parts(std::string_view text) {
  std::size_t run = 0;
  for (const char c : text) {
    run = c == '.' ? 0 : run + 1;
    if (run > 12) {
      return false;
    }
  }
  return true;
}

bool is_ipv4_compatible(const IpAddress& address) {
  for (std::size_t i = 0; i < 12; ++i) {
    if (address.bytes[i] != 0) {
      return false;
    }
  }
  return true;
}

void check_classification(const IpAddress& address) {
  const AddressClass cls = rules::classify(address);
  FUZZ_CHECK(rules::to_string(cls) != "unknown", show(address));
  const auto embedded = rules::embedded_ipv4(address);
  if (address.is_v4()) {
    FUZZ_CHECK(!embedded.has_value(), "an IPv4 address embeds IPv4: " + show(address));
    std::array<std::uint8_t, 16> mapped_bytes{};
    mapped_bytes[10] = 0xff;
    mapped_bytes[11] = 0xff;
    std::memcpy(mapped_bytes.data() + 12, address.bytes.data(), 4);
    const IpAddress mapped = IpAddress::from_v6(mapped_bytes);
    FUZZ_CHECK(rules::classify(mapped) == cls,
               "IPv4-mapped form classifies as " +
                   std::string(rules::to_string(rules::classify(mapped))) + ", the address as " +
                   std::string(rules::to_string(cls)) + ": " + show(address));
    const auto through = rules::embedded_ipv4(mapped);
    FUZZ_CHECK(through.has_value() && through->address == address && through->form == "IPv4-mapped",
               "embedded_ipv4 of the mapped form: " + show(address));
    return;
  }
  IpAddress bare = address;
  bare.zone.clear();
  FUZZ_CHECK(rules::classify(bare) == cls, "the zone changes the class: " + show(address));
  if (!embedded) {
    return;
  }
  const std::string_view form = embedded->form;
  FUZZ_CHECK(form == "IPv4-mapped" || form == "IPv4-compatible" || form == "NAT64" ||
                 form == "6to4" || form == "Teredo",
             "unknown form: " + show(address));
  FUZZ_CHECK(embedded->address.is_v4() && embedded->address.zone.empty(), show(address));
  const AddressClass inner = rules::classify(embedded->address);
  if (inner != AddressClass::public_address) {
    FUZZ_CHECK(cls == inner, "embeds " + std::string(rules::to_string(inner)) + " IPv4 (" +
                                 std::string(form) + ") but classifies as " +
                                 std::string(rules::to_string(cls)) + ": " + show(address));
  } else {
    FUZZ_CHECK(cls == AddressClass::public_address ||
                   (cls == AddressClass::reserved && form == "IPv4-compatible"),
               "embeds public IPv4 but classifies as " + std::string(rules::to_string(cls)) + ": " +
                   show(address));
  }
}

void check_ipv4(const IpAddress& address, std::string_view input) {
  const auto where = [&] { return "'" + escaped(input) + "' -> " + show(address); };
  FUZZ_CHECK(address.is_v4() && address.zone.empty(), where());
  for (std::size_t i = 4; i < 16; ++i) {
    FUZZ_CHECK(address.bytes[i] == 0, "IPv4 with bytes past the fourth: " + where());
  }
  const std::string text = address.to_string();
  IpAddress again;
  FUZZ_CHECK(rules::parse_ipv4(text, again) == rules::Ipv4Parse::ok && again == address,
             "'" + text + "' does not re-parse: " + where());
  in_addr system{};
  FUZZ_CHECK(inet_pton(AF_INET, text.c_str(), &system) == 1 &&
                 std::memcmp(&system, address.bytes.data(), 4) == 0,
             "inet_pton disagrees with the canonical '" + text + "': " + where());
  check_classification(address);
}

void check_ipv6(const IpAddress& address, std::string_view input) {
  const auto where = [&] { return "'" + escaped(input) + "' -> " + show(address); };
  FUZZ_CHECK(!address.is_v4(), where());
  const std::string text = address.to_string();
  const auto again = rules::parse_ipv6(text);
  FUZZ_CHECK(again.has_value() && *again == address,
             "'" + escaped(text) + "' does not re-parse: " + where());
  const std::string bare = text.substr(0, text.find('%'));
  for (const char c : bare) {
    FUZZ_CHECK((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.',
               "'" + escaped(text) + "' is not canonical: " + where());
  }
  in6_addr system{};
  FUZZ_CHECK(inet_pton(AF_INET6, bare.c_str(), &system) == 1 &&
                 std::memcmp(&system, address.bytes.data(), 16) == 0,
             "inet_pton disagrees with the canonical '" + text + "': " + where());
  // glibc prints ::/96 as `::a.b.c.d` when the seventh piece is not zero; RFC 5952 (and the
  // gate) keep the dotted form for IPv4-mapped addresses only.
  const bool glibc_dotted_compatible =
      is_ipv4_compatible(address) && (address.bytes[12] != 0 || address.bytes[13] != 0);
  if (!glibc_dotted_compatible) {
    char printed[INET6_ADDRSTRLEN] = {};
    FUZZ_CHECK(inet_ntop(AF_INET6, address.bytes.data(), printed, sizeof printed) != nullptr &&
                   bare == printed,
               "to_string '" + bare + "' but inet_ntop '" + printed + "': " + where());
  }
  check_classification(address);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The C library sees a NUL-terminated string: compare only inputs it sees whole.
  const std::string c_text(input);
  const bool c_comparable = input.find('\0') == std::string_view::npos;

  IpAddress v4;
  const rules::Ipv4Parse v4_result = rules::parse_ipv4(input, v4);
  if (v4_result == rules::Ipv4Parse::ok) {
    check_ipv4(v4, input);
  }
  const std::optional<IpAddress> v6 = rules::parse_ipv6(input);
  if (v6) {
    check_ipv6(*v6, input);
  }

  // parse_host() reads an ASCII text without ':', brackets or '%' as IPv4 exactly when
  // parse_ipv4() does, and refuses what parse_ipv4() calls an invalid IPv4 spelling.
  bool plain_ascii = true;
  for (const char c : input) {
    const auto byte = static_cast<unsigned char>(c);
    plain_ascii = plain_ascii && byte < 0x80 && c != ':' && c != '[' && c != ']' && c != '%';
  }
  if (plain_ascii) {
    const auto host = rules::parse_host(input);
    const bool host_v4 = host.has_value() && host->kind == rules::HostKind::ipv4;
    FUZZ_CHECK(host_v4 == (v4_result == rules::Ipv4Parse::ok),
               "parse_host and parse_ipv4 disagree on whether '" + escaped(input) + "' is IPv4");
    FUZZ_CHECK(!host_v4 || host->address == v4,
               "parse_host and parse_ipv4 read different addresses from '" + escaped(input) + "'");
    FUZZ_CHECK(v4_result != rules::Ipv4Parse::invalid || !host.has_value(),
               "parse_host accepts '" + escaped(input) + "', an invalid IPv4 spelling");
  }
  if (!c_comparable) {
    return 0;
  }
  const auto where = [&] { return "'" + escaped(input) + "'"; };

  in_addr pton4{};
  if (inet_pton(AF_INET, c_text.c_str(), &pton4) == 1) {
    FUZZ_CHECK(v4_result == rules::Ipv4Parse::ok && std::memcmp(&pton4, v4.bytes.data(), 4) == 0,
               "inet_pton(AF_INET) reads " + where() + " as " +
                   hex_bytes(reinterpret_cast<const std::uint8_t*>(&pton4), 4) + ", parse_ipv4 " +
                   (v4_result == rules::Ipv4Parse::ok ? show(v4) : "refuses"));
  }
  in_addr aton{};
  bool has_space = false;
  for (const char c : input) {
    has_space = has_space || is_c_space(c);
  }
  if (!has_space && short_parts(input) && inet_aton(c_text.c_str(), &aton) != 0) {
    FUZZ_CHECK(v4_result == rules::Ipv4Parse::ok && std::memcmp(&aton, v4.bytes.data(), 4) == 0,
               "inet_aton reads " + where() + " as " +
                   hex_bytes(reinterpret_cast<const std::uint8_t*>(&aton), 4) + ", parse_ipv4 " +
                   (v4_result == rules::Ipv4Parse::ok ? show(v4) : "refuses"));
  }

  in6_addr pton6{};
  const bool system_v6 = inet_pton(AF_INET6, c_text.c_str(), &pton6) == 1;
  if (system_v6) {
    FUZZ_CHECK(v6.has_value() && v6->zone.empty() && std::memcmp(&pton6, v6->bytes.data(), 16) == 0,
               "inet_pton(AF_INET6) reads " + where() + " as " +
                   hex_bytes(reinterpret_cast<const std::uint8_t*>(&pton6), 16) + ", parse_ipv6 " +
                   (v6 ? show(*v6) : "refuses"));
  }
  if (v6 && input.find('%') == std::string_view::npos) {
    FUZZ_CHECK(system_v6, "parse_ipv6 accepts " + where() + " (" + show(*v6) +
                              ") but inet_pton(AF_INET6) refuses it");
  }

  // getaddrinfo's numeric reading, the one a resolver call would take as an address.
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_family = AF_UNSPEC;
  addrinfo* found = nullptr;
  if (getaddrinfo(c_text.c_str(), nullptr, &hints, &found) == 0 && found != nullptr) {
    const auto host = rules::parse_host(input);
    if (host.has_value()) {
      FUZZ_CHECK(host->is_ip(), "getaddrinfo(AI_NUMERICHOST) reads " + where() +
                                    " as an address, parse_host as the name '" +
                                    escaped(host->name) + "'");
      if (found->ai_family == AF_INET) {
        const auto* sin = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
        FUZZ_CHECK(host->address.is_v4() &&
                       std::memcmp(&sin->sin_addr, host->address.bytes.data(), 4) == 0,
                   "getaddrinfo and parse_host read different addresses from " + where());
      } else if (found->ai_family == AF_INET6) {
        const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(found->ai_addr);
        FUZZ_CHECK(!host->address.is_v4() &&
                       std::memcmp(&sin6->sin6_addr, host->address.bytes.data(), 16) == 0,
                   "getaddrinfo and parse_host read different addresses from " + where());
      }
    }
    freeaddrinfo(found);
  }
  return 0;
}
