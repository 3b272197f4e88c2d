// Where the proxy is, for sandgate-connect: from `--proxy`, else goose's SANDBOX_PROXY_PORT
// (always on 127.0.0.1), else the usual proxy URL variables HTTPS_PROXY, https_proxy, ALL_PROXY,
// all_proxy, in that order. An empty variable counts as unset.
//
// Accepted forms: `host:port`, `[v6]:port`, `http://host:port`, `http://[v6]:port`, each with an
// optional trailing slash and optional credentials before the host (`http://user:token@host:port`,
// percent-escapes decoded), which are sent as `Proxy-Authorization: Basic` (sandgate's
// SANDGATE_TOKEN). Refused with a message saying why: https:// (TLS to the proxy) and SOCKS
// schemes, paths, a missing port, an unbracketed IPv6 address, credentials without a password.
// Messages never show a password: it is written `***`.
//
// Pure functions on values (the environment is passed in); thread-safe. The exception is
// credentials_from_environment(), which may read a file.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rules/expected.hpp"

namespace sandgate::connect_proxy {

struct ProxyLocation {
  std::string host;  // a DNS name or an IP literal, without brackets
  std::uint16_t port = 0;
  std::string source;  // where it came from: "--proxy", "SANDBOX_PROXY_PORT", "HTTPS_PROXY"...
  // `user:password` from the address, percent-decoded, for Proxy-Authorization: Basic; empty:
  // none. A secret: display() and every message leave it out.
  std::string credentials;

  // `host:port`, with IPv6 in brackets: the form to print in messages.
  std::string display() const;
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// The real process environment.
std::optional<std::string> process_env(std::string_view name);

// Parses one proxy address in the forms above. `source` names where the text came from and is
// used in the error message, which is one sentence without a trailing newline.
Expected<ProxyLocation, std::string> parse_proxy_address(std::string_view text,
                                                         std::string_view source);

// The proxy to use: `flag` (the --proxy value) when given, else the environment as above. The
// error names every place looked at when none is set, or the setting that is malformed.
Expected<ProxyLocation, std::string> find_proxy(const std::optional<std::string>& flag,
                                                const EnvLookup& env);

// The credentials to send when the proxy address carries none: `sandgate:TOKEN` with TOKEN from
// SANDGATE_TOKEN, else from the first line of the file SANDGATE_TOKEN_FILE names; empty when
// neither is set. The error (an unreadable file, a token with spaces or controls) names the
// variable, never the token.
Expected<std::string, std::string> credentials_from_environment(const EnvLookup& env);

}  // namespace sandgate::connect_proxy
