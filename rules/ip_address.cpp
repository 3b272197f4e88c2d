// IP address parsing, printing and classification. Over 600 lines because the two parsers are
// state machines written out in full, each edge next to the rule that decides it.
//
// The parsers are written out here instead of calling inet_aton()/inet_pton(): libc versions
// disagree at the edges (trailing junk, zones, `0x` alone, leading zeros in an embedded IPv4),
// and the gate must read an address exactly once, the same way on every platform, with every
// edge pinned down by tests. IPv4 follows the WHATWG URL host parser, which is the most liberal
// spelling a client in the sandbox is likely to send; IPv6 follows RFC 4291 section 2.2 using
// the WHATWG IPv6 parser's state machine, plus zones as in RFC 4007 and RFC 6874.
#include "rules/ip_address.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace sandgate::rules {
namespace {

constexpr std::uint64_t kV4Limit = std::uint64_t{1} << 32;

int digit_value(char c, int radix) {
  int value = -1;
  if (c >= '0' && c <= '9') {
    value = c - '0';
  } else if (c >= 'a' && c <= 'f') {
    value = c - 'a' + 10;
  } else if (c >= 'A' && c <= 'F') {
    value = c - 'A' + 10;
  }
  return value < radix ? value : -1;
}

bool is_decimal(char c) { return c >= '0' && c <= '9'; }

// The WHATWG "IPv4 number parser": decimal, octal after a leading 0, hex after 0x/0X, where
// `0x` alone is zero. Values that do not fit 32 bits saturate at 2^32 rather than fail, because
// such a part still *is* a number for the "ends in a number" test; the caller rejects it.
bool parse_ipv4_number(std::string_view text, std::uint64_t& value) {
  if (text.empty()) {
    return false;
  }
  int radix = 10;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    radix = 16;
    text.remove_prefix(2);
  } else if (text.size() >= 2 && text[0] == '0') {
    radix = 8;
    text.remove_prefix(1);
  }
  value = 0;
  for (const char c : text) {
    const int digit = digit_value(c, radix);
    if (digit < 0) {
      return false;
    }
    value = value * static_cast<std::uint64_t>(radix) + static_cast<std::uint64_t>(digit);
    if (value > kV4Limit) {
      value = kV4Limit;  // keep reading: a later bad digit still makes the part no number
    }
  }
  return true;
}

// The WHATWG "ends in a number checker": a host whose last label (ignoring one trailing dot) is
// all digits or a hex number is meant as IPv4, so it must parse as one or be refused; otherwise
// it is a DNS name. This is what stops `example.123` from becoming a name in one parser and an
// address in another.
bool ends_in_number(std::string_view text) {
  if (!text.empty() && text.back() == '.') {
    if (text.size() == 1) {
      return false;  // "." is a single empty part
    }
    text.remove_suffix(1);
  }
  const std::size_t dot = text.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? text : text.substr(dot + 1);
  if (last.empty()) {
    return false;
  }
  bool all_decimal = true;
  for (const char c : last) {
    all_decimal = all_decimal && is_decimal(c);
  }
  std::uint64_t ignored = 0;
  return all_decimal || parse_ipv4_number(last, ignored);
}

// Strict dotted decimal for the IPv4 tail of an IPv6 literal (RFC 4291 section 2.2 form 3): four
// parts of 0..255, no leading zeros (inet_pton refuses them too), no other radix.
bool parse_dotted_tail(std::string_view text, std::uint32_t& out) {
  std::uint32_t result = 0;
  int parts = 0;
  std::size_t i = 0;
  while (true) {
    if (i >= text.size() || !is_decimal(text[i])) {
      return false;
    }
    if (text[i] == '0' && i + 1 < text.size() && is_decimal(text[i + 1])) {
      return false;  // leading zero: ambiguous between decimal and octal readers
    }
    std::uint32_t part = 0;
    while (i < text.size() && is_decimal(text[i])) {
      part = part * 10 + static_cast<std::uint32_t>(text[i] - '0');
      if (part > 255) {
        return false;
      }
      ++i;
    }
    result = (result << 8) | part;
    ++parts;
    if (parts == 4) {
      break;
    }
    if (i >= text.size() || text[i] != '.') {
      return false;
    }
    ++i;
  }
  if (i != text.size()) {
    return false;
  }
  out = result;
  return true;
}

// The address part of an IPv6 literal, without zone. Pieces are filled left to right; at `::`
// the position is remembered and the pieces after it are moved to the end afterwards.
bool parse_ipv6_address(std::string_view text, std::array<std::uint16_t, 8>& pieces) {
  pieces.fill(0);
  std::size_t i = 0;
  std::size_t piece = 0;
  std::size_t compress = 8;  // 8: no `::` seen
  const std::size_t n = text.size();
  if (n > 0 && text[0] == ':') {
    if (n < 2 || text[1] != ':') {
      return false;  // a lone leading ':'
    }
    i = 2;
    piece = 1;
    compress = 1;
  }
  while (i < n) {
    if (piece == 8) {
      return false;  // more than eight pieces
    }
    if (text[i] == ':') {
      if (compress != 8) {
        return false;  // a second `::`
      }
      ++i;
      // `::` stands for at least one zero piece, so it takes a slot now.
      ++piece;
      compress = piece;
      continue;
    }
    std::uint32_t value = 0;
    std::size_t length = 0;
    while (length < 4 && i < n && digit_value(text[i], 16) >= 0) {
      value = value * 16 + static_cast<std::uint32_t>(digit_value(text[i], 16));
      ++i;
      ++length;
    }
    if (i < n && text[i] == '.') {
      // An embedded IPv4 tail: re-read this piece as dotted decimal; it fills two pieces and
      // must end the literal.
      if (length == 0 || piece > 6) {
        return false;
      }
      std::uint32_t v4 = 0;
      if (!parse_dotted_tail(text.substr(i - length), v4)) {
        return false;
      }
      pieces[piece++] = static_cast<std::uint16_t>(v4 >> 16);
      pieces[piece++] = static_cast<std::uint16_t>(v4 & 0xffff);
      i = n;
      break;
    }
    if (length == 0) {
      return false;  // a character that is neither hex nor ':' (or a fifth hex digit run)
    }
    if (i < n) {
      if (text[i] != ':') {
        return false;  // includes a fifth hex digit
      }
      ++i;
      if (i == n) {
        return false;  // a lone trailing ':'
      }
    }
    pieces[piece++] = static_cast<std::uint16_t>(value);
  }
  if (compress != 8) {
    // Move the pieces written after `::` to the end of the address.
    std::size_t swaps = piece - compress;
    std::size_t last = 7;
    while (last != 0 && swaps > 0) {
      const std::uint16_t moved = pieces[compress + swaps - 1];
      pieces[compress + swaps - 1] = pieces[last];
      pieces[last] = moved;
      --last;
      --swaps;
    }
  } else if (piece != 8) {
    return false;
  }
  return true;
}

bool is_zone_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_decimal(c) || c == '.' ||
         c == '_' || c == '~' || c == '-';
}

char* write_decimal(char* out, unsigned value) {
  if (value >= 100) {
    *out++ = static_cast<char>('0' + value / 100);
  }
  if (value >= 10) {
    *out++ = static_cast<char>('0' + value / 10 % 10);
  }
  *out++ = static_cast<char>('0' + value % 10);
  return out;
}

char* write_dotted(char* out, const std::uint8_t* bytes) {
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      *out++ = '.';
    }
    out = write_decimal(out, bytes[i]);
  }
  return out;
}

char* write_hex_piece(char* out, unsigned value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  bool started = false;
  for (int shift = 12; shift >= 0; shift -= 4) {
    const unsigned digit = (value >> shift) & 0xf;
    if (digit != 0 || started || shift == 0) {
      *out++ = kDigits[digit];
      started = true;
    }
  }
  return out;
}

bool all_zero(const std::array<std::uint8_t, 16>& bytes, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    if (bytes[i] != 0) {
      return false;
    }
  }
  return true;
}

bool has_prefix(const std::array<std::uint8_t, 16>& bytes, std::initializer_list<std::uint8_t> p) {
  std::size_t i = 0;
  for (const std::uint8_t b : p) {
    if (bytes[i++] != b) {
      return false;
    }
  }
  return true;
}

bool is_v4_mapped(const std::array<std::uint8_t, 16>& bytes) {
  return all_zero(bytes, 0, 10) && bytes[10] == 0xff && bytes[11] == 0xff;
}

std::uint32_t last_32_bits(const std::array<std::uint8_t, 16>& bytes) {
  return std::uint32_t{bytes[12]} << 24 | std::uint32_t{bytes[13]} << 16 |
         std::uint32_t{bytes[14]} << 8 | std::uint32_t{bytes[15]};
}

struct V4Range {
  std::uint32_t network;
  int prefix_length;
  AddressClass cls;
};

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return a << 24 | b << 16 | c << 8 | d;
}

// First match wins, so the exact metadata addresses come before the ranges that hold them
// (link-local, CGNAT, 192.0.0.0/24, Azure's public block).
constexpr V4Range kV4Ranges[] = {
    // Cloud instance metadata and credential endpoints.
    {v4(169, 254, 169, 254), 32, AddressClass::metadata},  // AWS, GCP, Azure, OpenStack, ...
    {v4(169, 254, 169, 253), 32, AddressClass::metadata},  // AWS VPC DNS resolver
    {v4(169, 254, 170, 2), 32, AddressClass::metadata},    // AWS ECS task credentials
    {v4(169, 254, 170, 23), 32, AddressClass::metadata},   // AWS EKS Pod Identity credentials
    {v4(169, 254, 0, 23), 32, AddressClass::metadata},     // Tencent Cloud
    {v4(100, 100, 100, 200), 32, AddressClass::metadata},  // Alibaba Cloud
    {v4(192, 0, 0, 192), 32, AddressClass::metadata},      // Oracle Cloud
    // Azure WireServer: a public-looking address that hands out VM configuration and
    // certificates to the guest agent; nothing a sandboxed agent should reach.
    {v4(168, 63, 129, 16), 32, AddressClass::metadata},
    // "This network": 0.0.0.0 as a destination reaches the local host on Linux and macOS.
    {v4(0, 0, 0, 0), 8, AddressClass::unspecified},
    {v4(127, 0, 0, 0), 8, AddressClass::loopback},
    {v4(169, 254, 0, 0), 16, AddressClass::link_local},
    {v4(10, 0, 0, 0), 8, AddressClass::private_network},
    {v4(172, 16, 0, 0), 12, AddressClass::private_network},
    {v4(192, 168, 0, 0), 16, AddressClass::private_network},
    {v4(100, 64, 0, 0), 10, AddressClass::carrier_nat},
    {v4(224, 0, 0, 0), 4, AddressClass::multicast},
    // Never routable on the internet (IANA IPv4 special-purpose registry): a destination here
    // is a mistake or an attempt to reach something local, so it is refused like one.
    {v4(240, 0, 0, 0), 4, AddressClass::reserved},      // future use; includes 255.255.255.255
    {v4(192, 0, 0, 0), 24, AddressClass::reserved},     // IETF protocol assignments
    {v4(192, 0, 2, 0), 24, AddressClass::reserved},     // TEST-NET-1 (documentation)
    {v4(198, 51, 100, 0), 24, AddressClass::reserved},  // TEST-NET-2 (documentation)
    {v4(203, 0, 113, 0), 24, AddressClass::reserved},   // TEST-NET-3 (documentation)
    {v4(198, 18, 0, 0), 15, AddressClass::reserved},    // benchmarking (RFC 2544)
    {v4(192, 88, 99, 0), 24, AddressClass::reserved},   // deprecated 6to4 relay anycast (RFC 7526)
};

AddressClass classify_v4(std::uint32_t address) {
  for (const V4Range& range : kV4Ranges) {
    const std::uint32_t mask =
        range.prefix_length == 0 ? 0 : ~std::uint32_t{0} << (32 - range.prefix_length);
    if ((address & mask) == range.network) {
      return range.cls;
    }
  }
  return AddressClass::public_address;
}

struct V6Range {
  std::array<std::uint8_t, 16> network;
  int prefix_length;
  AddressClass cls;
};

// An IPv6 network written as its eight 16-bit pieces, for readable tables.
constexpr std::array<std::uint8_t, 16> v6(std::array<std::uint16_t, 8> pieces) {
  std::array<std::uint8_t, 16> bytes{};
  for (std::size_t i = 0; i < 8; ++i) {
    bytes[2 * i] = static_cast<std::uint8_t>(pieces[i] >> 8);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(pieces[i] & 0xff);
  }
  return bytes;
}

bool in_range(const std::array<std::uint8_t, 16>& bytes, const V6Range& range) {
  int bits = range.prefix_length;
  for (std::size_t i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    const std::uint8_t mask = bits >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - bits));
    if ((bytes[i] & mask) != range.network[i]) {
      return false;
    }
  }
  return true;
}

// Metadata services over IPv6. All sit inside fc00::/7, so they are checked before it.
constexpr std::array<std::uint8_t, 16> kV6Metadata[] = {
    v6({0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254}),  // AWS IMDS
    v6({0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023}),  // AWS EKS Pod Identity credentials
    v6({0xfd20, 0x00ce, 0, 0, 0, 0, 0, 0x0254}),  // GCP metadata server
};

// First match wins. Checked after the exact addresses (metadata, ::, ::1) and after an
// embedded IPv4 address has had its say.
constexpr V6Range kV6Ranges[] = {
    {v6({0xfe80}), 10, AddressClass::link_local},
    {v6({0xfc00}), 7, AddressClass::unique_local},
    {v6({0xff00}), 8, AddressClass::multicast},
    {v6({0x2001, 0x0db8}), 32, AddressClass::reserved},          // documentation (RFC 3849)
    {v6({0x3fff, 0x0000}), 20, AddressClass::reserved},          // documentation (RFC 9637)
    {v6({0x2001, 0x0002, 0x0000}), 48, AddressClass::reserved},  // benchmarking (RFC 5180)
    {v6({0x2001, 0x0010}), 28, AddressClass::reserved},          // ORCHID, deprecated (RFC 4843)
    {v6({0x0100, 0, 0, 0}), 64, AddressClass::reserved},         // discard-only (RFC 6666)
};

AddressClass classify_v6(const IpAddress& address) {
  const auto& bytes = address.bytes;
  for (const auto& metadata : kV6Metadata) {
    if (bytes == metadata) {
      return AddressClass::metadata;
    }
  }
  if (all_zero(bytes, 0, 15) && bytes[15] <= 1) {
    return bytes[15] == 0 ? AddressClass::unspecified : AddressClass::loopback;
  }
  const std::optional<EmbeddedIpv4> embedded = embedded_ipv4(address);
  if (embedded) {
    const AddressClass inner = classify_v4(embedded->address.v4_host_order());
    if (inner != AddressClass::public_address) {
      return inner;
    }
    // IPv4-compatible addresses were deprecated by RFC 4291 and nothing routes them; the other
    // forms reach the embedded public address through a translator or relay.
    return embedded->form == "IPv4-compatible" ? AddressClass::reserved
                                               : AddressClass::public_address;
  }
  for (const V6Range& range : kV6Ranges) {
    if (in_range(bytes, range)) {
      return range.cls;
    }
  }
  // Global unicast is 2000::/3; everything else not named above (::/8 leftovers such as the
  // SIIT ::ffff:0:0:0/96 form, the deprecated site-local fec0::/10, 4000::/2, ...) is
  // unassigned or reserved by the IETF and not routable on the internet today.
  if ((bytes[0] & 0xe0) != 0x20) {
    return AddressClass::reserved;
  }
  return AddressClass::public_address;
}

}  // namespace

IpAddress IpAddress::from_v4(std::uint32_t host_order) {
  IpAddress address;
  address.family = Family::v4;
  address.bytes[0] = static_cast<std::uint8_t>(host_order >> 24);
  address.bytes[1] = static_cast<std::uint8_t>(host_order >> 16);
  address.bytes[2] = static_cast<std::uint8_t>(host_order >> 8);
  address.bytes[3] = static_cast<std::uint8_t>(host_order);
  return address;
}

IpAddress IpAddress::from_v6(const std::array<std::uint8_t, 16>& network_order) {
  IpAddress address;
  address.family = Family::v6;
  address.bytes = network_order;
  return address;
}

std::uint32_t IpAddress::v4_host_order() const {
  return std::uint32_t{bytes[0]} << 24 | std::uint32_t{bytes[1]} << 16 |
         std::uint32_t{bytes[2]} << 8 | std::uint32_t{bytes[3]};
}

std::string IpAddress::to_string() const {
  char buffer[48];  // "ffff:...:ffff" is 39 characters
  char* out = buffer;
  if (is_v4()) {
    out = write_dotted(out, bytes.data());
    return std::string(buffer, out);
  }
  if (is_v4_mapped(bytes)) {
    // RFC 5952 section 5: the mapped form is written with its IPv4 address dotted.
    static constexpr std::string_view kPrefix = "::ffff:";
    out += kPrefix.copy(out, kPrefix.size());
    out = write_dotted(out, bytes.data() + 12);
  } else {
    std::uint16_t pieces[8];
    for (std::size_t i = 0; i < 8; ++i) {
      pieces[i] = static_cast<std::uint16_t>(bytes[2 * i] << 8 | bytes[2 * i + 1]);
    }
    // RFC 5952 section 4.2: compress the longest run of two or more zero pieces, the first
    // one when runs tie.
    int best_start = -1;
    int best_length = 1;
    for (int i = 0; i < 8;) {
      if (pieces[i] != 0) {
        ++i;
        continue;
      }
      int j = i;
      while (j < 8 && pieces[j] == 0) {
        ++j;
      }
      if (j - i > best_length) {
        best_start = i;
        best_length = j - i;
      }
      i = j;
    }
    for (int i = 0; i < 8; ++i) {
      if (i == best_start) {
        *out++ = ':';
        *out++ = ':';
        i += best_length - 1;
        continue;
      }
      if (i > 0 && i != best_start + best_length) {
        *out++ = ':';
      }
      out = write_hex_piece(out, pieces[i]);
    }
  }
  std::string text(buffer, out);
  if (!zone.empty()) {
    text += '%';
    text += zone;
  }
  return text;
}

Ipv4Parse parse_ipv4(std::string_view text, IpAddress& out) {
  if (!ends_in_number(text)) {
    return Ipv4Parse::not_ipv4;
  }
  if (text.back() == '.') {
    text.remove_suffix(1);  // ends_in_number() made sure something is left
  }
  std::uint64_t numbers[4];
  std::size_t count = 0;
  while (true) {
    if (count == 4) {
      return Ipv4Parse::invalid;  // a fifth part
    }
    const std::size_t dot = text.find('.');
    if (!parse_ipv4_number(text.substr(0, dot), numbers[count])) {
      return Ipv4Parse::invalid;
    }
    ++count;
    if (dot == std::string_view::npos) {
      break;
    }
    text.remove_prefix(dot + 1);
  }
  // Every part but the last is one byte; the last fills the bytes that remain.
  std::uint64_t result = 0;
  for (std::size_t i = 0; i + 1 < count; ++i) {
    if (numbers[i] > 255) {
      return Ipv4Parse::invalid;
    }
    result |= numbers[i] << (8 * (3 - i));
  }
  const std::uint64_t last_limit = std::uint64_t{1} << (8 * (5 - count));
  if (numbers[count - 1] >= last_limit) {
    return Ipv4Parse::invalid;
  }
  result |= numbers[count - 1];
  out = IpAddress::from_v4(static_cast<std::uint32_t>(result));
  return Ipv4Parse::ok;
}

std::optional<IpAddress> parse_ipv6(std::string_view text) {
  std::string_view zone;
  const std::size_t percent = text.find('%');
  if (percent != std::string_view::npos) {
    zone = text.substr(percent + 1);
    text = text.substr(0, percent);
    // RFC 6874 writes the '%' of a zone as `%25` inside a URI. A zone that is literally "25"
    // (interface index 25) stays as it is; `%25x` is always read as the URI form. What is left
    // may not start with "25" again (`%2525x`): printed as `%25x`, it would read back as zone
    // "x", and a text that means two things is refused.
    if (zone.size() > 2 && zone.starts_with("25")) {
      zone.remove_prefix(2);
      if (zone.size() > 2 && zone.starts_with("25")) {
        return std::nullopt;
      }
    }
    if (zone.empty()) {
      return std::nullopt;
    }
    for (const char c : zone) {
      if (!is_zone_char(c)) {
        return std::nullopt;  // also refuses a second '%' and any further escape
      }
    }
  }
  std::array<std::uint16_t, 8> pieces;
  if (!parse_ipv6_address(text, pieces)) {
    return std::nullopt;
  }
  std::array<std::uint8_t, 16> bytes;
  for (std::size_t i = 0; i < 8; ++i) {
    bytes[2 * i] = static_cast<std::uint8_t>(pieces[i] >> 8);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(pieces[i] & 0xff);
  }
  IpAddress address = IpAddress::from_v6(bytes);
  address.zone = std::string(zone);
  return address;
}

std::string_view to_string(AddressClass cls) {
  switch (cls) {
    case AddressClass::public_address:
      return "public";
    case AddressClass::loopback:
      return "loopback";
    case AddressClass::unspecified:
      return "unspecified";
    case AddressClass::metadata:
      return "metadata";
    case AddressClass::link_local:
      return "link-local";
    case AddressClass::private_network:
      return "private";
    case AddressClass::carrier_nat:
      return "carrier-grade-nat";
    case AddressClass::unique_local:
      return "unique-local";
    case AddressClass::multicast:
      return "multicast";
    case AddressClass::reserved:
      return "reserved";
  }
  return "unknown";
}

std::optional<EmbeddedIpv4> embedded_ipv4(const IpAddress& address) {
  if (address.is_v4()) {
    return std::nullopt;
  }
  const auto& bytes = address.bytes;
  if (is_v4_mapped(bytes)) {
    return EmbeddedIpv4{IpAddress::from_v4(last_32_bits(bytes)), "IPv4-mapped"};
  }
  if (all_zero(bytes, 0, 12)) {
    // ::/96 minus :: and ::1, which are IPv6's own unspecified and loopback addresses.
    const std::uint32_t inner = last_32_bits(bytes);
    if (inner <= 1) {
      return std::nullopt;
    }
    return EmbeddedIpv4{IpAddress::from_v4(inner), "IPv4-compatible"};
  }
  if (has_prefix(bytes, {0x00, 0x64, 0xff, 0x9b}) && all_zero(bytes, 4, 12)) {
    return EmbeddedIpv4{IpAddress::from_v4(last_32_bits(bytes)), "NAT64"};  // RFC 6052
  }
  if (has_prefix(bytes, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01})) {
    // RFC 8215 local-use prefix: the operator picks the prefix length inside the /48, so take
    // the last 32 bits, where a /96 translator (by far the common choice) puts the address.
    return EmbeddedIpv4{IpAddress::from_v4(last_32_bits(bytes)), "NAT64"};
  }
  if (has_prefix(bytes, {0x20, 0x02})) {
    const std::uint32_t inner = std::uint32_t{bytes[2]} << 24 | std::uint32_t{bytes[3]} << 16 |
                                std::uint32_t{bytes[4]} << 8 | std::uint32_t{bytes[5]};
    return EmbeddedIpv4{IpAddress::from_v4(inner), "6to4"};  // RFC 3056
  }
  if (has_prefix(bytes, {0x20, 0x01, 0x00, 0x00})) {
    // RFC 4380 section 4: the client's public address, bit-inverted in the last 32 bits.
    return EmbeddedIpv4{IpAddress::from_v4(~last_32_bits(bytes)), "Teredo"};
  }
  return std::nullopt;
}

AddressClass classify(const IpAddress& address) {
  return address.is_v4() ? classify_v4(address.v4_host_order()) : classify_v6(address);
}

}  // namespace sandgate::rules
