// Where the proxy is. See proxy_location.hpp.
#include "connect-proxy/proxy_location.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "rules/ascii.hpp"

namespace sandgate::connect_proxy {
namespace {

// The URL variables, in the order they are consulted after SANDBOX_PROXY_PORT.
constexpr std::array<std::string_view, 4> kUrlVariables = {"HTTPS_PROXY", "https_proxy",
                                                           "ALL_PROXY", "all_proxy"};

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

// `text` with %XX escapes decoded (RFC 3986 section 2.1); nothing when an escape is broken or
// the result holds a control character (it goes into a header field).
std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      unsigned value = 0;
      if (i + 2 >= text.size()) {
        return std::nullopt;
      }
      auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
      if (ec != std::errc() || end != text.data() + i + 3) {
        return std::nullopt;
      }
      c = static_cast<char>(value);
      i += 2;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return std::nullopt;
    }
    out += c;
  }
  return out;
}

// The address as messages may show it: a password in it replaced by `***`.
std::string without_password(std::string_view text) {
  const auto at = text.rfind('@');
  if (at == std::string_view::npos) {
    return std::string(text);
  }
  const auto scheme = text.find("://");
  const std::size_t start = scheme == std::string_view::npos || scheme > at ? 0 : scheme + 3;
  const auto colon = text.substr(start, at - start).find(':');
  if (colon == std::string_view::npos) {
    return std::string(text);
  }
  return std::string(text.substr(0, start + colon + 1)) + "***" + std::string(text.substr(at));
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
  const std::string original = without_password(text);
  auto fail = [&](std::string_view why) {
    return Unexpected(quote_setting(source, original) +
                      " is not a usable proxy address: " + std::string(why));
  };
  text = rules::trim_ascii_space(text);
  if (text.empty()) {
    return fail("it is empty");
  }

  // The scheme: only plain HTTP proxies speak CONNECT the way this helper does.
  if (auto colon_slashes = text.find("://"); colon_slashes != std::string_view::npos) {
    const std::string scheme = rules::ascii_lower(text.substr(0, colon_slashes));
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
  ProxyLocation location;
  location.source = std::string(source);
  // Credentials: everything before the last '@' (a password may hold a raw '@' or ':').
  if (const auto at = text.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = text.substr(0, at);
    text.remove_prefix(at + 1);
    const auto colon = userinfo.find(':');
    if (colon == std::string_view::npos || colon + 1 == userinfo.size()) {
      return fail("the credentials need a password: http://USER:TOKEN@HOST:PORT");
    }
    const auto user = percent_decode(userinfo.substr(0, colon));
    const auto password = percent_decode(userinfo.substr(colon + 1));
    if (!user || !password || user->find(':') != std::string::npos) {
      return fail(
          "the credentials have a broken %-escape, a control character, or a ':' in "
          "the user name");
    }
    location.credentials = *user + ":" + *password;
  }
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
    if (!value || rules::trim_ascii_space(*value).empty()) {
      return std::nullopt;
    }
    return value;
  };

  // goose's variable: a bare port on the loopback address.
  if (auto port_text = present("SANDBOX_PROXY_PORT")) {
    const auto port = parse_port(rules::trim_ascii_space(*port_text));
    if (!port) {
      return Unexpected(quote_setting("SANDBOX_PROXY_PORT", *port_text) +
                        " is not a port number from 1 to 65535");
    }
    return ProxyLocation{"127.0.0.1", *port, "SANDBOX_PROXY_PORT", {}};
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

namespace sandgate::connect_proxy {

Expected<std::string, std::string> credentials_from_environment(const EnvLookup& env) {
  auto usable = [](std::string_view token) {
    return !token.empty() && std::all_of(token.begin(), token.end(),
                                         [](unsigned char c) { return c > 0x20 && c < 0x7f; });
  };
  if (auto token = env("SANDGATE_TOKEN"); token && !token->empty()) {
    if (!usable(*token)) {
      return Unexpected(std::string(
          "SANDGATE_TOKEN holds a space or a control character; a sandgate token has none"));
    }
    return "sandgate:" + *token;
  }
  if (auto path = env("SANDGATE_TOKEN_FILE"); path && !path->empty()) {
    errno = 0;
    std::ifstream in(*path);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return Unexpected("cannot read the token file SANDGATE_TOKEN_FILE=\"" + *path + "\"" +
                        (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()));
    }
    if (line.ends_with('\r')) {
      line.pop_back();
    }
    if (!usable(line)) {
      return Unexpected("the first line of SANDGATE_TOKEN_FILE=\"" + *path +
                        "\" is empty or holds a space or a control character; it should hold "
                        "the token alone");
    }
    return "sandgate:" + line;
  }
  return std::string();
}

}  // namespace sandgate::connect_proxy
