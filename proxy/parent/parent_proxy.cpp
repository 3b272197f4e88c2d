#include "proxy/parent/parent_proxy.hpp"

#include <algorithm>
#include <charconv>

#include "rules/ascii.hpp"
#include "rules/base64.hpp"
#include "rules/http_lines.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::parent {
namespace {

using sandgate::Expected;
using sandgate::Unexpected;

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) {
    return std::nullopt;
  }
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

// Whether `address` lies in `network`/`prefix_length` (same family only).
bool in_network(const rules::IpAddress& address, const rules::IpAddress& network,
                unsigned prefix_length) {
  if (address.family != network.family) {
    return false;
  }
  for (unsigned bit = 0; bit < prefix_length; ++bit) {
    const unsigned mask = 0x80u >> (bit % 8);
    if ((address.bytes[bit / 8] & mask) != (network.bytes[bit / 8] & mask)) {
      return false;
    }
  }
  return true;
}

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address it is, as the blocklist
// stores it: `10.0.0.0/8` must exclude `[::ffff:10.1.2.3]` too, and `::ffff:10.0.0.0/104` the
// plain `10.1.2.3`. `prefix_length`, for a network, is carried along (less the 96 mapped bits).
rules::IpAddress unmapped(const rules::IpAddress& address, unsigned* prefix_length = nullptr) {
  if (address.is_v4() || (prefix_length != nullptr && *prefix_length < 96)) {
    return address;
  }
  const auto inner = rules::embedded_ipv4(address);
  if (!inner || inner->form != "IPv4-mapped") {
    return address;
  }
  if (prefix_length != nullptr) {
    *prefix_length -= 96;
  }
  return inner->address;
}

// `entry` without a trailing `:PORT`, and the port (0 if none). An IPv6 entry carries a port only
// in brackets (`[::1]:8080`); a bare IPv6 literal's colons are its own.
Expected<std::pair<std::string_view, std::uint16_t>, std::string> split_port(
    std::string_view entry) {
  if (entry.starts_with('[')) {
    const auto close = entry.find(']');
    if (close == std::string_view::npos) {
      return Unexpected<std::string>{std::string("'[' without ']'")};
    }
    const auto rest = entry.substr(close + 1);
    if (rest.empty()) {
      return std::pair{entry.substr(1, close - 1), std::uint16_t{0}};
    }
    if (!rest.starts_with(':')) {
      return Unexpected<std::string>{std::string("text after ']' that is not ':PORT'")};
    }
    const auto port = parse_port(rest.substr(1));
    if (!port) {
      return Unexpected<std::string>{std::string("a port must be 1..65535")};
    }
    return std::pair{entry.substr(1, close - 1), *port};
  }
  const auto colon = entry.rfind(':');
  if (colon == std::string_view::npos || entry.find(':') != colon) {
    return std::pair{entry, std::uint16_t{0}};  // no colon, or an IPv6 literal
  }
  const auto port = parse_port(entry.substr(colon + 1));
  if (!port) {
    return Unexpected<std::string>{std::string("a port must be 1..65535")};
  }
  return std::pair{entry.substr(0, colon), *port};
}

}  // namespace

std::string ParentAddress::display() const { return host.display() + ":" + std::to_string(port); }

Expected<ParentAddress, std::string> parse_parent_url(std::string_view text) {
  constexpr std::string_view kHttp = "http://";
  // User information first, whatever else is wrong: the messages below quote the text, and a
  // password must not reach the terminal or the log through a refusal.
  if (text.find('@') != std::string_view::npos) {
    return Unexpected<std::string>{std::string(
        "credentials in the parent proxy's URL would show in process lists and logs; put "
        "user:password in the parent proxy credentials file instead")};
  }
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) {
    return Unexpected<std::string>{"'" + std::string(text) +
                                   "' is not a URL; write http://HOST:PORT"};
  }
  const std::string scheme = rules::ascii_lower(text.substr(0, scheme_end));
  if (scheme == "https") {
    return Unexpected<std::string>{std::string(
        "an https:// parent proxy (TLS to the proxy itself) is not supported; use its "
        "http:// port: TLS to destinations still travels end to end inside the tunnel")};
  }
  if (scheme != "http") {
    return Unexpected<std::string>{"the parent proxy's scheme must be http://, not " + scheme +
                                   "://"};
  }
  std::string_view rest = text.substr(kHttp.size());
  if (rest.ends_with('/')) {
    rest.remove_suffix(1);
  }
  if (rest.find_first_of("/?#") != std::string_view::npos) {
    return Unexpected<std::string>{
        std::string("the parent proxy's URL must be http://HOST:PORT, no path")};
  }
  auto authority = rules::parse_authority(rest);
  if (!authority) {
    if (authority.error() == rules::HostError::missing_port) {
      return Unexpected<std::string>{
          std::string("the parent proxy's URL needs a port: http://HOST:PORT")};
    }
    return Unexpected<std::string>{"the parent proxy's address '" + std::string(rest) +
                                   "': " + std::string(rules::to_string(authority.error()))};
  }
  return ParentAddress{authority->host, authority->port};
}

Expected<Credentials, std::string> parse_credentials(std::string_view file_text) {
  std::string_view line = file_text.substr(0, file_text.find('\n'));
  if (line.ends_with('\r')) {
    line.remove_suffix(1);
  }
  if (line.empty()) {
    return Unexpected<std::string>{
        std::string("the first line of the parent proxy credentials file is empty; it should be "
                    "user:password")};
  }
  if (std::any_of(line.begin(), line.end(), is_control)) {
    return Unexpected<std::string>{
        std::string("the parent proxy credentials contain a control character")};
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) {
    return Unexpected<std::string>{std::string(
        "the parent proxy credentials file's first line has no ':'; it should be user:password")};
  }
  if (colon == 0) {
    return Unexpected<std::string>{
        std::string("the parent proxy credentials have an empty user name")};
  }
  return Credentials{std::string(line.substr(0, colon)), std::string(line.substr(colon + 1))};
}

Expected<ExcludeList, std::string> ExcludeList::parse(std::string_view text) {
  ExcludeList list;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto raw = rules::trim_ows(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (raw.empty()) {
      continue;  // "a,,b" and a trailing comma, as curl allows
    }
    const auto fail = [&raw](std::string_view why) {
      return Unexpected<std::string>{"parent proxy exclusion '" + std::string(raw) +
                                     "': " + std::string(why)};
    };
    Entry entry;
    if (raw == "*") {
      entry.everything = true;
      list.entries_.push_back(entry);
      continue;
    }
    auto split = split_port(raw);
    if (!split) {
      return fail(split.error());
    }
    auto [body, port] = *split;
    entry.port = port;
    if (const auto slash = body.find('/'); slash != std::string_view::npos) {
      auto host = rules::parse_host(body.substr(0, slash));
      const auto bits = body.substr(slash + 1);
      unsigned length = 0;
      const auto [end, error] = std::from_chars(bits.data(), bits.data() + bits.size(), length);
      if (!host || !host->is_ip() || error != std::errc() || end != bits.data() + bits.size() ||
          bits.empty() || length > (host->address.is_v4() ? 32u : 128u)) {
        return fail("a CIDR block is ADDRESS/BITS, e.g. 10.0.0.0/8 or fd00::/8");
      }
      entry.is_network = true;
      entry.prefix_length = length;
      entry.network = unmapped(host->address, &entry.prefix_length);
      list.entries_.push_back(entry);
      continue;
    }
    if (body.starts_with("*.")) {
      body.remove_prefix(2);
    } else if (body.starts_with('.')) {
      body.remove_prefix(1);
    }
    auto host = rules::parse_host(body);
    if (!host) {
      return fail(rules::to_string(host.error()));
    }
    if (host->is_ip()) {
      entry.is_network = true;
      entry.prefix_length = host->address.is_v4() ? 32 : 128;
      entry.network = unmapped(host->address, &entry.prefix_length);
    } else {
      entry.name = host->name;
    }
    list.entries_.push_back(entry);
  }
  return list;
}

bool ExcludeList::excludes(const rules::Host& host, std::uint16_t port) const {
  for (const auto& entry : entries_) {
    if (entry.port != 0 && entry.port != port) {
      continue;
    }
    if (entry.everything) {
      return true;
    }
    if (entry.is_network) {
      // The address as written or, when it is IPv4-mapped, as the IPv4 address it carries.
      if (host.is_ip() &&
          (in_network(host.address, entry.network, entry.prefix_length) ||
           in_network(unmapped(host.address), entry.network, entry.prefix_length))) {
        return true;
      }
      continue;
    }
    if (host.is_ip()) {
      continue;
    }
    const std::string_view name = host.name;
    if (name == entry.name || (name.size() > entry.name.size() && name.ends_with(entry.name) &&
                               name[name.size() - entry.name.size() - 1] == '.')) {
      return true;
    }
  }
  return false;
}

std::string proxy_authorization(const Credentials& credentials) {
  return "Basic " + rules::base64_encoded(credentials.user + ":" + credentials.password);
}

std::string connect_request(const rules::Host& host, std::uint16_t port,
                            const Credentials* credentials) {
  const std::string authority = host.display() + ":" + std::to_string(port);
  std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n";
  if (credentials != nullptr) {
    request += "Proxy-Authorization: " + proxy_authorization(*credentials) + "\r\n";
  }
  request += "\r\n";
  return request;
}

ReplyHead read_reply_head(std::span<const char> bytes) {
  ReplyHead head;
  const std::string_view text(bytes.data(), std::min(bytes.size(), kReplyHeadLimit + 1));
  const auto fail = [&head](std::string problem) {
    head.status = ReplyHead::Status::malformed;
    head.problem = std::move(problem);
    return head;
  };
  // The status line, checked as far as it has arrived so that garbage is refused at once.
  constexpr std::string_view kPrefix = "HTTP/1.";
  const std::size_t seen = std::min(text.size(), kPrefix.size());
  if (text.substr(0, seen) != kPrefix.substr(0, seen)) {
    return fail("the parent's reply does not start with HTTP/1.");
  }
  // Every line ends in CRLF, by the one rule every head reader of the gate follows.
  if (const rules::HeadScan scan = rules::scan_head(text, kReplyHeadLimit + 1);
      scan.status == rules::HeadScan::Status::malformed) {
    return fail("the parent's reply head: " + scan.problem);
  }
  std::size_t line_start = 0;
  bool status_line = true;
  while (true) {
    const auto newline = text.find('\n', line_start);
    if (newline == std::string_view::npos) {
      if (text.size() > kReplyHeadLimit) {
        return fail("the parent's reply head is over " + std::to_string(kReplyHeadLimit) +
                    " bytes");
      }
      return head;  // need more
    }
    std::string_view line = text.substr(line_start, newline - line_start);
    if (line.ends_with('\r')) {
      line.remove_suffix(1);
    }
    if (std::any_of(line.begin(), line.end(), [](char c) { return c == '\r' || c == '\0'; })) {
      return fail("a bare CR or NUL in the parent's reply head");
    }
    if (status_line) {
      // HTTP/1.x SP DIGIT DIGIT DIGIT SP reason (the reason may be empty, its space not)
      if (line.size() < 12 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
          !std::all_of(line.begin() + 9, line.begin() + 12,
                       [](char c) { return c >= '0' && c <= '9'; }) ||
          (line.size() > 12 && line[12] != ' ')) {
        return fail("the parent's status line is not 'HTTP/1.x NNN reason'");
      }
      head.code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
      if (head.code < 200 || head.code > 599) {
        return fail("the parent answered CONNECT with status " + std::to_string(head.code));
      }
      // The phrase is the parent's text, and it lands in the log's quoted `why="..."`, the
      // admin ring and the client's Proxy-Status: quotes and backslashes could forge a field
      // there, and a 16 KiB phrase would bloat all three. Printable ASCII, bounded.
      const std::string_view phrase = line.substr(std::min<std::size_t>(line.size(), 13));
      for (char c : phrase.substr(0, kReasonPhraseLimit)) {
        head.reason_phrase += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? c : '?';
      }
      if (phrase.size() > kReasonPhraseLimit) {
        head.reason_phrase += "...";
      }
      status_line = false;
    } else if (line.empty()) {
      head.status = ReplyHead::Status::complete;
      head.head_length = newline + 1;
      return head;
    } else {
      if (line.front() == ' ' || line.front() == '\t') {
        return fail("obsolete line folding in the parent's reply head");
      }
      const auto colon = line.find(':');
      if (colon == 0 || colon == std::string_view::npos ||
          line.substr(0, colon).find_first_of(" \t") != std::string_view::npos) {
        return fail("a field line without 'name:' in the parent's reply head");
      }
    }
    line_start = newline + 1;
    if (line_start > kReplyHeadLimit) {
      return fail("the parent's reply head is over " + std::to_string(kReplyHeadLimit) + " bytes");
    }
  }
}

}  // namespace sandgate::parent
