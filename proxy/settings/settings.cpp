// The settings' own values: the service URI, booleans, the home folder. Loading them is
// load.cpp.
#include "proxy/settings/settings.hpp"

#include <arpa/inet.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "rules/host.hpp"

namespace sandgate::settings {

std::string ServiceUri::text() const {
  std::string out = tls ? "https://" : "http://";
  out += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != (tls ? 443 : 80)) {
    out += ":" + std::to_string(port);
  }
  return out + prefix;
}

Expected<ServiceUri, std::string> parse_service_uri(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  ServiceUri uri;
  std::string_view rest;
  if (text.starts_with("https://")) {
    rest = text.substr(8);
  } else if (text.starts_with("http://")) {
    uri.tls = false;
    uri.port = 80;
    rest = text.substr(7);
  } else {
    return Unexpected{quoted + " is not an https:// (or loopback http://) address"};
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return Unexpected{quoted + ": user information in the address is not supported"};
  }
  if (path.find_first_of("?#") != std::string_view::npos ||
      std::any_of(path.begin(), path.end(),
                  [](unsigned char c) { return c <= 0x20 || c >= 0x7f || c == '%'; })) {
    return Unexpected{quoted +
                      ": the path may hold only plain characters (no query, fragment, "
                      "escapes or spaces)"};
  }
  while (path.ends_with('/')) {
    path.remove_suffix(1);
  }
  uri.prefix = std::string(path);
  auto parsed = rules::parse_authority(authority.find(':') == std::string_view::npos &&
                                               !authority.starts_with('[')
                                           ? std::string(authority) + ":" + std::to_string(uri.port)
                                           : std::string(authority));
  if (!parsed) {
    return Unexpected{quoted + ": " + std::string(rules::to_string(parsed.error()))};
  }
  uri.port = parsed->port;
  uri.host = parsed->host.name;
  if (!uri.tls) {
    const bool loopback = uri.host == "localhost" || uri.host.ends_with(".localhost") ||
                          (parsed->host.is_ip() &&
                           rules::classify(parsed->host.address) == rules::AddressClass::loopback);
    if (!loopback) {
      return Unexpected{quoted + ": plain http is allowed only to a loopback address; use https"};
    }
  }
  return uri;
}

std::string home_directory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  if (const passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_dir != nullptr) {
    return entry->pw_dir;
  }
  return "/";
}

}  // namespace sandgate::settings
