// The value parsers the settings table uses, and the endpoint types' parsers. See
// setting_table.hpp and endpoint.hpp.
#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "proxy/settings/endpoint.hpp"
#include "proxy/settings/setting_table.hpp"
#include "rules/ascii.hpp"

namespace sandgate::settings {
namespace detail {

// Splits on commas, trimming each item; empty items are errors (a doubled comma is a typo).
Expected<std::vector<std::string_view>, std::string> split_list(std::string_view text) {
  std::vector<std::string_view> items;
  if (rules::trim_ascii_space(text).empty()) {
    return items;
  }
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    auto item = rules::trim_ascii_space(
        text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (item.empty()) {
      return Unexpected{std::string("empty item in a comma-separated list")};
    }
    items.push_back(item);
    if (comma == std::string_view::npos) {
      return items;
    }
    start = comma + 1;
  }
}

std::optional<std::uint64_t> parse_number(std::string_view text, std::uint64_t min,
                                          std::uint64_t max) {
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  if (value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

// "5", "0.5", "1.25": seconds with up to three decimals, as milliseconds.
std::optional<std::uint64_t> parse_decimal_seconds_ms(std::string_view text) {
  auto dot = text.find('.');
  auto whole = text.substr(0, dot);
  std::string_view fraction =
      dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (whole.empty() ||
      (dot != std::string_view::npos && (fraction.empty() || fraction.size() > 3))) {
    return std::nullopt;
  }
  auto seconds = parse_number(whole, 0, 1'000'000);
  if (!seconds) {
    return std::nullopt;
  }
  std::uint64_t ms = *seconds * 1000;
  if (!fraction.empty()) {
    auto digits = parse_number(fraction, 0, 999);
    if (!digits) {
      return std::nullopt;
    }
    ms += *digits * (fraction.size() == 1 ? 100 : fraction.size() == 2 ? 10 : 1);
  }
  return ms;
}

namespace {
constexpr std::string_view kBoolHelp = "expected a boolean (true/false, 1/0, yes/no, on/off)";

}  // namespace

ApplyResult set_bool(bool& target, std::string_view value) {
  auto parsed = parse_bool(value);
  if (!parsed) {
    return std::string(kBoolHelp);
  }
  target = *parsed;
  return std::nullopt;
}

ApplyResult set_ports(std::vector<std::uint16_t>& target, std::string_view value) {
  auto items = split_list(value);
  if (!items) {
    return items.error();
  }
  target.clear();
  for (auto item : *items) {
    auto port = parse_number(item, 1, 65535);
    if (!port || (item.size() > 1 && item[0] == '0')) {
      return "'" + std::string(item) + "' is not a port (1..65535)";
    }
    target.push_back(static_cast<std::uint16_t>(*port));
  }
  return std::nullopt;
}

ApplyResult set_seconds(std::chrono::seconds& target, std::string_view value, unsigned max) {
  auto seconds = parse_number(value, 0, max);
  if (!seconds) {
    return "expected a whole number of seconds, 0.." + std::to_string(max);
  }
  target = std::chrono::seconds(static_cast<long>(*seconds));
  return std::nullopt;
}

std::string expand_home(std::string_view path, const std::string& home) {
  if (path == "~") {
    return home;
  }
  if (path.starts_with("~/")) {
    return home + std::string(path.substr(1));
  }
  return std::string(path);
}

std::string describe_value(std::string_view value, bool secret) {
  if (secret && value.size() > 8) {
    // A LaunchDarkly SDK or mobile key given by mistake is a credential: show only its start.
    return "'" + std::string(value.substr(0, 8)) + "...'";
  }
  std::string out = "'";
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace detail

Expected<TcpEndpoint, std::string> parse_tcp_endpoint(std::string_view text, bool port_required,
                                                      std::uint16_t min_port,
                                                      std::uint16_t default_port) {
  std::string_view address = text;
  std::string_view port;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos) {
      return Unexpected{"'" + std::string(text) + "': '[' without ']'"};
    }
    address = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        return Unexpected{"'" + std::string(text) + "': expected ':PORT' after ']'"};
      }
      port = rest.substr(1);
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, std::string(address).c_str(), &v6) != 1) {
      return Unexpected{"'" + std::string(address) + "' is not an IPv6 address"};
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      address = text.substr(0, colon);
      port = text.substr(colon + 1);
    }
    in_addr v4{};
    if (inet_pton(AF_INET, std::string(address).c_str(), &v4) != 1) {
      return Unexpected{"'" + std::string(address) +
                        "' is not an IPv4 address in dotted form (write IPv6 as [ADDR]:PORT)"};
    }
  }
  if (port.empty() && (port_required || text.ends_with(':'))) {
    return Unexpected{"'" + std::string(text) + "' needs a port (ADDR:PORT)"};
  }
  TcpEndpoint endpoint{std::string(address), default_port};
  if (!port.empty()) {
    auto number = detail::parse_number(port, min_port, 65535);
    if (!number || (port.size() > 1 && port[0] == '0')) {
      return Unexpected{"'" + std::string(port) + "' is not a port (" + std::to_string(min_port) +
                        "..65535)"};
    }
    endpoint.port = static_cast<std::uint16_t>(*number);
  }
  return endpoint;
}

Expected<ListenAddress, std::string> parse_listen_address(std::string_view text) {
  if (text.starts_with("unix:")) {
    const std::string_view path = text.substr(5);
    if (path.empty()) {
      return Unexpected{
          std::string("'unix:' needs a socket path, e.g. unix:/run/user/1000/sandgate.sock")};
    }
    if (path.find('\0') != std::string_view::npos) {
      return Unexpected{std::string("a path cannot contain a NUL byte")};
    }
    if (!path.starts_with('/')) {
      return Unexpected{"'unix:" + std::string(path) + "' needs an absolute socket path"};
    }
    constexpr std::size_t max = sizeof(sockaddr_un::sun_path) - 1;
    if (path.size() > max) {
      return Unexpected{"'unix:" + std::string(path) + "' is too long for a unix socket (at most " +
                        std::to_string(max) + " bytes)"};
    }
    return ListenAddress{UnixPath{std::string(path)}};
  }
  auto endpoint = parse_tcp_endpoint(text, true, 0);
  if (!endpoint) {
    return Unexpected{endpoint.error()};
  }
  return ListenAddress{std::move(*endpoint)};
}

std::optional<bool> parse_bool(std::string_view text) {
  auto value = rules::ascii_lower(rules::trim_ascii_space(text));
  if (value == "true" || value == "1" || value == "yes" || value == "on") {
    return true;
  }
  if (value == "false" || value == "0" || value == "no" || value == "off") {
    return false;
  }
  return std::nullopt;
}

}  // namespace sandgate::settings
