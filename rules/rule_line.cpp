// The rules-file line grammar. See rule_line.hpp.
#include "rules/rule_line.hpp"

#include <algorithm>
#include <optional>

#include "rules/ascii.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::rules {
namespace {

constexpr std::string_view kNeedsDomain = "'*.' needs a domain after it";
constexpr std::string_view kBadStar = "'*' is only allowed as a whole leading label";
constexpr std::string_view kWildcardIp = "wildcard not allowed on an IP address";
constexpr std::string_view kNeedsPattern = "'re:' needs a pattern after it";

std::optional<std::string> fail(std::string message) { return message; }

std::string bad_port(std::string_view port) {
  // A pathological line may hold a huge "port"; the message only needs its start.
  constexpr std::size_t kShown = 24;
  std::string shown(port.substr(0, kShown));
  if (port.size() > kShown) {
    shown += "...";
  }
  return "bad port '" + shown + "' (1..65535, no leading zeros)";
}

// Parses `443` or `22,2222` into sorted, distinct ports. Plain decimal only: a leading zero or a
// sign would make `0443` and `443` look like different rules to a reader.
std::optional<std::string> parse_ports(std::string_view text, std::vector<std::uint16_t>& out) {
  out.clear();
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const bool digits =
        !item.empty() && item.size() <= 5 &&
        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || item.front() == '0') {
      return bad_port(item);
    }
    std::uint32_t value = 0;
    for (const char c : item) {
      value = value * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (value > 65535) {
      return bad_port(item);
    }
    out.push_back(static_cast<std::uint16_t>(value));
    if (comma == std::string_view::npos) {
      break;
    }
    text.remove_prefix(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return std::nullopt;
}

// Whether `text` has the shape digits(,digits)*: the port suffix of a `re:` entry. Values are
// checked afterwards by parse_ports(), so `re:x:0443` is an error rather than part of the pattern.
bool looks_like_ports(std::string_view text) {
  if (text.empty() || text.front() == ',' || text.back() == ',') {
    return false;
  }
  char previous = 0;
  for (const char c : text) {
    const bool ok = (c >= '0' && c <= '9') || (c == ',' && previous != ',');
    if (!ok) {
      return false;
    }
    previous = c;
  }
  return true;
}

std::optional<std::string> parse_pattern(std::string_view text, RuleEntry& entry,
                                         std::vector<std::uint16_t>& ports) {
  entry.kind = EntryKind::pattern;
  entry.text = text;
  std::string_view pattern = text.substr(3);  // after "re:"
  ports.clear();
  // The last `:digits` is a port list, so a pattern cannot end in one: `re:a:1` is pattern `a`
  // on port 1. A pattern that needs it can end in `(?::1)` or similar.
  const std::size_t colon = pattern.rfind(':');
  if (colon != std::string_view::npos && looks_like_ports(pattern.substr(colon + 1))) {
    if (auto error = parse_ports(pattern.substr(colon + 1), ports)) {
      return fail(std::move(*error));
    }
    pattern = pattern.substr(0, colon);
  }
  if (pattern.empty()) {
    return fail(std::string(kNeedsPattern));
  }
  entry.pattern = pattern;
  entry.ports = ports;
  return std::nullopt;
}

std::optional<std::string> parse_name(std::string_view text, RuleEntry& entry,
                                      std::vector<std::uint16_t>& ports) {
  std::string_view rest = text;
  bool wildcard = false;
  if (rest == "*") {
    return fail(std::string(kNeedsDomain));
  }
  if (rest.starts_with("*.")) {
    wildcard = true;
    rest.remove_prefix(2);
  }

  // Split off the port list. `[v6]:443` is bracketed; otherwise one colon separates a port, and
  // two or more mean an unbracketed IPv6 address, which then cannot carry a port.
  std::string_view host_text = rest;
  std::optional<std::string_view> port_text;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close != std::string_view::npos && close + 1 < rest.size() && rest[close + 1] == ':') {
      host_text = rest.substr(0, close + 1);
      port_text = rest.substr(close + 2);
    }
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    const std::size_t colon = rest.find(':');
    host_text = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  }

  if (wildcard && host_text.empty()) {
    return fail(std::string(kNeedsDomain));
  }
  if (host_text.find('*') != std::string_view::npos) {
    return fail(std::string(kBadStar));
  }
  auto host = parse_host(host_text);
  if (!host) {
    return fail(std::string(to_string(host.error())));
  }
  if (wildcard && host->is_ip()) {
    return fail(std::string(kWildcardIp));
  }

  entry.text = text;
  entry.pattern = {};
  entry.host = std::move(*host);
  // An IPv4 address written as IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is that very address, and is
  // stored as IPv4: destinations are matched in IPv4 form (rules/policy.cpp, match_list), and
  // deny messages print mapped addresses this way, so people copy them into lists like this.
  // (The deprecated IPv4-compatible form is not: `::1:443` is an IPv6 address people write.)
  if (entry.host.kind == HostKind::ipv6) {
    if (auto embedded = embedded_ipv4(entry.host.address);
        embedded && embedded->form == "IPv4-mapped") {
      entry.host = Host{HostKind::ipv4, embedded->address.to_string(), embedded->address};
    }
  }
  const std::string_view name = entry.host.name;
  if (name.empty() || name.size() > kMaxEntryName) {
    return fail(std::string(to_string(name.empty() ? HostError::empty : HostError::too_long)));
  }

  ports.clear();
  if (port_text) {
    if (auto error = parse_ports(*port_text, ports)) {
      return fail(std::move(*error));
    }
  }
  entry.ports = ports;
  entry.kind = entry.host.is_ip() ? EntryKind::address
               : wildcard         ? EntryKind::subdomains_only
                                  : EntryKind::name_and_subdomains;
  return std::nullopt;
}

}  // namespace

std::string_view entry_text(std::string_view line) {
  return trim_ascii_space(line.substr(0, line.find('#')));
}

std::string agent_message(std::string_view line) {
  const std::size_t hash = line.find('#');
  if (hash == std::string_view::npos || hash + 1 >= line.size() || line[hash + 1] != '!') {
    return {};
  }
  const std::string_view raw = trim_ascii_space(line.substr(hash + 2));
  std::string message;
  message.reserve(std::min(raw.size(), kMaxAgentMessage));
  for (const char ch : raw.substr(0, kMaxAgentMessage)) {
    const auto c = static_cast<unsigned char>(ch);
    message += c < 0x20 || c == 0x7f ? ' ' : c >= 0x80 ? '?' : ch;
  }
  return message;
}

std::optional<std::string> parse_entry(std::string_view text, RuleEntry& entry,
                                       std::vector<std::uint16_t>& ports) {
  if (text.starts_with("re:")) {
    return parse_pattern(text, entry, ports);
  }
  return parse_name(text, entry, ports);
}

Expected<RuleEntry, std::string> parse_entry(std::string_view text,
                                             std::vector<std::uint16_t>& ports) {
  RuleEntry entry;
  if (auto error = parse_entry(text, entry, ports)) {
    return Unexpected<std::string>{std::move(*error)};
  }
  return entry;
}

LoadIssue make_issue(std::string_view source, std::uint32_t line_number, std::string_view line,
                     std::string message) {
  return LoadIssue{std::string(source), line_number, std::string(entry_text(line)),
                   std::move(message)};
}

}  // namespace sandgate::rules
