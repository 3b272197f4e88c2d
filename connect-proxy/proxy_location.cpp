// Where the proxy is. See proxy_location.hpp.
#include "connect-proxy/proxy_location.hpp"

#include <arpa/inet.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>

namespace sandgate::connect_proxy {
namespace {

// The URL variables, in the order they are consulted after SANDBOX_PROXY_PORT.
constexpr std::array<std::string_view, 4> kUrlVariables = {"HTTPS_PROXY", "https_proxy",
                                                           "ALL_PROXY", "all_proxy"};

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// A decimal port 1..65535, digits only.
std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) {
    return std::nullopt;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

// A host name as a proxy URL may carry it: letters, digits, '-', '.', '_'.
bool plausible_name(std::string_view host) {
  if (host.empty() || host.size() > 253) {
    return false;
  }
  for (char c : host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
      return false;
    }
  }
  return true;
}

bool is_ipv6(const std::string& text) {
  in6_addr address{};
  return ::inet_pton(AF_INET6, text.c_str(), &address) == 1;
}

// "HTTPS_PROXY=\"x\"" or "--proxy \"x\"": how a message quotes the setting.
std::string quote_setting(std::string_view source, std::string_view text) {
  std::string out(source);
  out += source.starts_with("--") ? " \"" : "=\"";
  out += text;
  out += '"';
  return out;
}

}  // namespace

std::string ProxyLocation::display() const {
  if (host.find(':') != std::string::npos) {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

std::optional<std::string> process_env(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

Expected<ProxyLocation, std::string> parse_proxy_address(std::string_view text,
                                                         std::string_view source) {
  const std::string original(text);
  auto fail = [&](std::string_view why) {
    return Unexpected(quote_setting(source, original) +
                      " is not a usable proxy address: " + std::string(why));
  };
  text = trim(text);
  if (text.empty()) {
    return fail("it is empty");
  }

  // The scheme: only plain HTTP proxies speak CONNECT the way this helper does.
  if (auto colon_slashes = text.find("://"); colon_slashes != std::string_view::npos) {
    const std::string scheme = lower(text.substr(0, colon_slashes));
    if (scheme == "https") {
      return fail("https:// (TLS to the proxy) is not supported; use http://HOST:PORT");
    }
    if (scheme.starts_with("socks")) {
      return fail("SOCKS proxies are not supported; sandgate-connect speaks HTTP CONNECT");
    }
    if (scheme != "http") {
      return fail("unknown scheme '" + scheme + "://'; use http://HOST:PORT");
    }
    text.remove_prefix(colon_slashes + 3);
  }

  // One trailing slash is the usual way of writing the URL; anything after it is a path.
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    if (slash + 1 != text.size()) {
      return fail("a proxy URL has no path; use http://HOST:PORT");
    }
    text.remove_suffix(1);
  }
  if (text.find('@') != std::string_view::npos) {
    return fail("credentials in the proxy URL are not supported");
  }

  ProxyLocation location;
  location.source = std::string(source);
  std::string_view port_text;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      return fail("the IPv6 address has no closing ']'");
    }
    location.host = std::string(text.substr(1, close - 1));
    if (!is_ipv6(location.host)) {
      return fail("'" + location.host + "' is not an IPv6 address");
    }
    const auto rest = text.substr(close + 1);
    if (!rest.starts_with(':')) {
      return fail("it has no port; use http://[ADDRESS]:PORT");
    }
    port_text = rest.substr(1);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return fail("it has no port; use http://HOST:PORT");
    }
    location.host = std::string(text.substr(0, colon));
    if (location.host.find(':') != std::string::npos) {
      return fail("write an IPv6 address in brackets: http://[ADDRESS]:PORT");
    }
    if (!plausible_name(location.host)) {
      return fail("'" + location.host + "' is not a host name or IP address");
    }
    port_text = text.substr(colon + 1);
  }
  const auto port = parse_port(port_text);
  if (!port) {
    return fail("the port '" + std::string(port_text) + "' is not a number from 1 to 65535");
  }
  location.port = *port;
  return location;
}

Expected<ProxyLocation, std::string> find_proxy(const std::optional<std::string>& flag,
                                                const EnvLookup& env) {
  if (flag) {
    return parse_proxy_address(*flag, "--proxy");
  }
  auto present = [&](std::string_view name) -> std::optional<std::string> {
    auto value = env(name);
    if (!value || trim(*value).empty()) {
      return std::nullopt;
    }
    return value;
  };

  // goose's variable: a bare port on the loopback address.
  if (auto port_text = present("SANDBOX_PROXY_PORT")) {
    const auto port = parse_port(trim(*port_text));
    if (!port) {
      return Unexpected(quote_setting("SANDBOX_PROXY_PORT", *port_text) +
                        " is not a port number from 1 to 65535");
    }
    return ProxyLocation{"127.0.0.1", *port, "SANDBOX_PROXY_PORT"};
  }
  for (auto name : kUrlVariables) {
    if (auto url = present(name)) {
      return parse_proxy_address(*url, name);
    }
  }
  return Unexpected(std::string(
      "no proxy is configured: pass --proxy HOST:PORT, or set SANDBOX_PROXY_PORT, HTTPS_PROXY, "
      "https_proxy, ALL_PROXY or all_proxy"));
}

}  // namespace sandgate::connect_proxy
