// Host and authority parsing: one strict reading of the destination, and one normal form.
//
// The gate checks a name and then the proxy dials it; any byte that another parser (a resolver,
// a URL library, the origin's virtual-host routing) could read differently is refused here
// rather than "fixed", so there is no second interpretation to smuggle a destination through.
// ASCII names are validated in place and cost one allocation (the normal form); libidn2 is only
// called for non-ASCII names and for `xn--` labels.
#include "rules/host.hpp"

#include <idn2.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>

#include "rules/ascii.hpp"

namespace sandgate::rules {
namespace {

constexpr std::size_t kMaxLabel = 63;
// Refusing longer non-ASCII input bounds the work handed to libidn2. The limit leaves room for
// text that maps down a lot (full-width forms, decomposed characters, deleted soft hyphens)
// and still fits 253 octets; anything over it could only get there by padding.
constexpr std::size_t kMaxIdnInput = 4096;
// UTS #46 nontransitional processing, as WHATWG URL and current browsers do (so `ß` stays `ß`),
// on NFC-normalised input. Not STD3: '_' is allowed in labels and checked by our own rules.
constexpr int kIdnFlags = IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL;

struct IdnFree {
  void operator()(char* p) const { idn2_free(p); }
};
using IdnString = std::unique_ptr<char, IdnFree>;

bool starts_with_ace_prefix(std::string_view label) {
  return label.size() >= 4 && ascii_lower(label[0]) == 'x' && ascii_lower(label[1]) == 'n' &&
         label[2] == '-' && label[3] == '-';
}

// What each byte is to the scanners below, looked up once per byte. `ok` bytes may still be
// refused later (':' outside an IPv6 literal, '!' in a label); the others carry their own
// error, more telling than "bad character", and are reported as soon as seen.
enum class ByteKind : std::uint8_t {
  ok,
  label,  // [A-Za-z0-9-]: always fine inside a DNS label
  nul,
  whitespace,  // space, and every other control character
  userinfo,
  path,
  percent,
  bracket,
  non_ascii,
};

constexpr std::array<ByteKind, 256> make_byte_kinds() {
  std::array<ByteKind, 256> kinds{};
  for (int c = 0; c < 256; ++c) {
    ByteKind kind = ByteKind::ok;
    if (c == 0) {
      kind = ByteKind::nul;
    } else if (c <= 0x20 || c == 0x7f) {
      kind = ByteKind::whitespace;
    } else if (c >= 0x80) {
      kind = ByteKind::non_ascii;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-') {
      kind = ByteKind::label;
    } else if (c == '@') {
      kind = ByteKind::userinfo;
    } else if (c == '/' || c == '\\' || c == '?' || c == '#') {
      kind = ByteKind::path;
    } else if (c == '%') {
      kind = ByteKind::percent;
    } else if (c == '[' || c == ']') {
      kind = ByteKind::bracket;
    }
    kinds[static_cast<std::size_t>(c)] = kind;
  }
  return kinds;
}

constexpr std::array<ByteKind, 256> kByteKinds = make_byte_kinds();

ByteKind byte_kind(char c) { return kByteKinds[static_cast<unsigned char>(c)]; }

// The error a byte of kind nul..bracket stands for.
HostError error_for(ByteKind kind) {
  switch (kind) {
    case ByteKind::nul:
      return HostError::nul;
    case ByteKind::whitespace:
      return HostError::whitespace;
    case ByteKind::userinfo:
      return HostError::userinfo;
    case ByteKind::path:
      return HostError::path;
    case ByteKind::percent:
      return HostError::percent_escape;
    case ByteKind::bracket:
      return HostError::unbalanced_bracket;
    default:
      return HostError::bad_character;
  }
}

// An `xn--` label is only accepted if it is what UTS #46 would produce for the Unicode it
// decodes to: this refuses bad punycode, disallowed code points, unnormalised text and
// encodings of plain ASCII, all of which let two spellings name one host.
bool valid_a_label(std::string_view lower_label) {
  char buffer[kMaxLabel + 1];
  lower_label.copy(buffer, lower_label.size());
  buffer[lower_label.size()] = '\0';
  char* unicode_raw = nullptr;
  if (idn2_to_unicode_8z8z(buffer, &unicode_raw, 0) != IDN2_OK) {
    idn2_free(unicode_raw);
    return false;
  }
  const IdnString unicode(unicode_raw);
  char* back_raw = nullptr;
  if (unicode == nullptr || idn2_to_ascii_8z(unicode.get(), &back_raw, kIdnFlags) != IDN2_OK) {
    idn2_free(back_raw);
    return false;
  }
  const IdnString back(back_raw);
  return back != nullptr && std::strcmp(back.get(), buffer) == 0;
}

// A name that is all ASCII and free of the bytes with an error of their own: an IPv4 spelling, or
// a DNS name validated label by label and then lower-cased into the one string returned.
Expected<Host, HostError> parse_ascii_name(std::string_view text) {
  IpAddress address;
  switch (parse_ipv4(text, address)) {
    case Ipv4Parse::ok:
      return Host{HostKind::ipv4, address.to_string(), address};
    case Ipv4Parse::invalid:
      return Unexpected{HostError::bad_ipv4};
    case Ipv4Parse::not_ipv4:
      break;
  }
  std::string_view name = text;
  if (!name.empty() && name.back() == '.') {
    name.remove_suffix(1);  // the root label; only one (a second dot leaves an empty label)
  }
  if (name.empty()) {
    return Unexpected{text.empty() ? HostError::empty : HostError::empty_label};
  }
  bool has_a_label = false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    const bool last = end == std::string_view::npos;
    if (last) {
      end = name.size();
    }
    const std::string_view label = name.substr(start, end - start);
    if (label.empty()) {
      return Unexpected{HostError::empty_label};
    }
    if (label.size() > kMaxLabel) {
      return Unexpected{HostError::label_too_long};
    }
    for (const char c : label) {
      if (byte_kind(c) == ByteKind::label) {
        continue;
      }
      if (c != '_') {
        return Unexpected{HostError::bad_character};
      }
      if (last) {
        // Used in service names (`_dmarc.example.com`) but never in a top-level domain.
        return Unexpected{HostError::bad_underscore};
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return Unexpected{HostError::bad_hyphen};
    }
    has_a_label = has_a_label || starts_with_ace_prefix(label);
    start = end + 1;
  }
  if (name.size() > kMaxDnsName) {
    return Unexpected{HostError::too_long};
  }
  std::string normal(name);
  for (char& c : normal) {
    c = ascii_lower(c);
  }
  if (has_a_label) {
    std::string_view rest = normal;
    while (!rest.empty()) {
      const std::size_t dot = rest.find('.');
      const std::string_view label = rest.substr(0, dot);
      if (starts_with_ace_prefix(label) && !valid_a_label(label)) {
        return Unexpected{HostError::bad_idn};
      }
      rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
    }
  }
  return Host{HostKind::dns_name, std::move(normal), IpAddress{}};
}

// A name with non-ASCII bytes: UTS #46 maps it to ASCII (case folding, NFC, full-width forms,
// ideographic full stops to '.') and punycode; the result is then held to the ASCII rules.
Expected<Host, HostError> parse_unicode_name(std::string_view text) {
  if (text.size() > kMaxIdnInput) {
    return Unexpected{HostError::too_long};
  }
  const std::string input(text);  // libidn2 wants a NUL-terminated string; text has no NUL
  char* ascii_raw = nullptr;
  const int rc = idn2_to_ascii_8z(input.c_str(), &ascii_raw, kIdnFlags);
  const IdnString ascii(ascii_raw);
  if (rc != IDN2_OK || ascii == nullptr) {
    switch (rc) {
      case IDN2_TOO_BIG_LABEL:
      case IDN2_PUNYCODE_BIG_OUTPUT:  // what libidn2 reports for a label over 63 octets
        return Unexpected{HostError::label_too_long};
      case IDN2_TOO_BIG_DOMAIN:
        return Unexpected{HostError::too_long};
      case IDN2_HYPHEN_STARTEND:
        return Unexpected{HostError::bad_hyphen};
      default:
        return Unexpected{HostError::bad_idn};
    }
  }
  // The mapping turns compatibility forms into ASCII punctuation (FULLWIDTH SOLIDUS into '/',
  // FULLWIDTH COMMERCIAL AT into '@', FULLWIDTH COLON into ':'), so the output gets the same
  // byte checks as raw input. It never becomes an IPv6 literal, but can become IPv4
  // (full-width digits), which parse_ascii_name() reads, as a URL parser would.
  const std::string_view mapped(ascii.get());
  for (const char c : mapped) {
    const ByteKind kind = byte_kind(c);
    if (kind == ByteKind::non_ascii) {
      return Unexpected{HostError::bad_idn};
    }
    if (kind == ByteKind::bracket || c == ':') {
      return Unexpected{HostError::bad_character};
    }
    if (kind != ByteKind::ok && kind != ByteKind::label) {
      return Unexpected{error_for(kind)};
    }
  }
  return parse_ascii_name(mapped);
}

Expected<Host, HostError> make_ipv6_host(std::optional<IpAddress> address) {
  std::string name = address->to_string();
  return Host{HostKind::ipv6, std::move(name), std::move(*address)};
}

}  // namespace

std::string Host::display() const {
  if (kind == HostKind::ipv6) {
    std::string text;
    text.reserve(name.size() + 2);
    text += '[';
    text += name;
    text += ']';
    return text;
  }
  return name;
}

std::string_view to_string(HostError error) {
  switch (error) {
    case HostError::empty:
      return "empty host";
    case HostError::too_long:
      return "host name longer than 253 characters";
    case HostError::label_too_long:
      return "host name label longer than 63 characters";
    case HostError::empty_label:
      return "empty label in host name";
    case HostError::userinfo:
      return "user information ('@') in host";
    case HostError::path:
      return "path, query or fragment character in host";
    case HostError::percent_escape:
      return "percent escape in host";
    case HostError::nul:
      return "NUL byte in host";
    case HostError::whitespace:
      return "whitespace or control character in host";
    case HostError::bad_character:
      return "character not allowed in host";
    case HostError::bad_hyphen:
      return "host name label starts or ends with '-'";
    case HostError::bad_underscore:
      return "'_' in top-level domain";
    case HostError::bad_ipv4:
      return "host ends in a number but is not a valid IPv4 address";
    case HostError::bad_ipv6:
      return "invalid IPv6 address in brackets";
    case HostError::unbalanced_bracket:
      return "unbalanced '[' or ']' in host";
    case HostError::bad_idn:
      return "invalid internationalised domain name";
    case HostError::missing_port:
      return "missing port";
    case HostError::bad_port:
      return "port is not a number from 1 to 65535 without leading zeros";
  }
  return "invalid host";
}

Expected<Host, HostError> parse_host(std::string_view text) {
  if (text.empty()) {
    return Unexpected{HostError::empty};
  }
  // One pass over the bytes finds the first one that cannot be in a host; brackets and '%'
  // are allowed only as `[literal]` and inside it.
  const bool bracketed = text.front() == '[';
  std::size_t close = std::string_view::npos;
  bool has_colon = false;
  bool non_ascii = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (byte_kind(c)) {
      case ByteKind::label:
        break;
      case ByteKind::ok:
        has_colon = has_colon || c == ':';
        break;
      case ByteKind::non_ascii:
        non_ascii = true;
        break;
      case ByteKind::bracket:
        if (c == '[' && i == 0) {
          break;
        }
        if (c == ']' && bracketed && close == std::string_view::npos) {
          close = i;
          break;
        }
        return Unexpected{HostError::unbalanced_bracket};
      case ByteKind::percent:
        if (bracketed && close == std::string_view::npos) {
          break;  // a zone
        }
        return Unexpected{HostError::percent_escape};
      default:
        return Unexpected{error_for(byte_kind(c))};
    }
  }
  if (bracketed) {
    if (close == std::string_view::npos) {
      return Unexpected{HostError::unbalanced_bracket};
    }
    if (close != text.size() - 1) {
      return Unexpected{HostError::bad_character};  // e.g. a port: use parse_authority()
    }
    std::optional<IpAddress> address = parse_ipv6(text.substr(1, close - 1));
    if (!address) {
      return Unexpected{HostError::bad_ipv6};
    }
    return make_ipv6_host(std::move(address));
  }
  if (has_colon) {
    // Only an IPv6 literal holds ':'. Without brackets it cannot carry a zone, since '%' was
    // refused above.
    std::optional<IpAddress> address = non_ascii ? std::nullopt : parse_ipv6(text);
    if (!address) {
      return Unexpected{HostError::bad_character};
    }
    return make_ipv6_host(std::move(address));
  }
  return non_ascii ? parse_unicode_name(text) : parse_ascii_name(text);
}

Expected<Authority, HostError> parse_authority(std::string_view text) {
  if (text.empty()) {
    return Unexpected{HostError::empty};
  }
  // The port separator is the last ':', unless that is inside a bracketed literal.
  std::size_t colon = text.rfind(':');
  if (text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close != std::string_view::npos && colon != std::string_view::npos && colon < close) {
      colon = std::string_view::npos;
    }
  }
  if (colon == std::string_view::npos) {
    // Report what is wrong with the host first: it says more than "missing port".
    Expected<Host, HostError> host = parse_host(text);
    return Unexpected{host ? HostError::missing_port : host.error()};
  }
  const std::string_view host_text = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  Expected<Host, HostError> host = parse_host(host_text);
  if (!host) {
    return Unexpected{host.error()};
  }
  if (host->kind == HostKind::ipv6 && host_text.front() != '[') {
    // `::1:443` cannot be split reliably (is `443` the port or the last piece?), so an
    // unbracketed IPv6 literal is refused as if its ':' were a bad character.
    return Unexpected{HostError::bad_character};
  }
  if (port_text.empty()) {
    return Unexpected{HostError::missing_port};
  }
  // Plain decimal, no sign, no leading zero (which some parsers read as octal), 1..65535.
  if (port_text.size() > 5 || port_text.front() == '0') {
    return Unexpected{HostError::bad_port};
  }
  std::uint32_t port = 0;
  for (const char c : port_text) {
    if (c < '0' || c > '9') {
      return Unexpected{HostError::bad_port};
    }
    port = port * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (port > 65535) {
    return Unexpected{HostError::bad_port};
  }
  return Authority{std::move(*host), static_cast<std::uint16_t>(port)};
}

}  // namespace sandgate::rules
