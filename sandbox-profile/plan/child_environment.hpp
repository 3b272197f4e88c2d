// The environment of the confined command: the caller's, with every proxy variable pointing at
// the gate. goose set http(s)_proxy, no_proxy, SANDBOX_PROXY_PORT and GIT_SSH_COMMAND; sandgate
// also sets ALL_PROXY/all_proxy to socks5h://127.0.0.1:PORT (the gate's SOCKS5, for clients of
// every TCP protocol that understand only that variable; no token: `run`'s gate needs none) and
// NODE_USE_ENV_PROXY=1 (Node's built-in fetch ignores the variables without it) and
// JAVA_TOOL_OPTIONS (the JVM reads no proxy variable at all; see java_tool_options()).
//
// Environment variables only ask politely; on Linux and macOS `run` also confines the command
// so that the gate is its only way out. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox-profile/plan/sandbox_options.hpp"

namespace sandgate::sandbox {

// `inherited` (NAME=VALUE entries, e.g. from environ) with the gate's variables set for a gate
// on 127.0.0.1:`port` (HTTP proxy URLs, and a socks5h:// URL in ALL_PROXY/all_proxy);
// `connect_helper` is the absolute path of sandgate-connect (the ssh ProxyCommand). Variables the
// gate sets replace inherited ones, except JAVA_TOOL_OPTIONS, whose inherited options are kept in
// front of the gate's; sandgate's own SANDGATE_* variables (its token, admin token, secrets'
// entries) are left out; order is kept otherwise.
// With `ca_bundle` (the gate inspects some hosts: its CA with the system's roots), the variables
// that name a CA file for the common tools point at it: SSL_CERT_FILE (OpenSSL, Go, Ruby),
// REQUESTS_CA_BUNDLE (Python requests), CURL_CA_BUNDLE, GIT_SSL_CAINFO, NODE_EXTRA_CA_CERTS,
// PIP_CERT, AWS_CA_BUNDLE, CARGO_HTTP_CAINFO, DENO_CERT; with `java_trust_store` (the same
// certificates as PKCS12), JAVA_TOOL_OPTIONS names it as Java's trust store. Each of `masked`
// sets its variable to its sentinel, and its real value is replaced by the sentinel in every
// inherited variable that holds it.
std::vector<std::string> child_environment(const std::vector<std::string>& inherited,
                                           std::uint16_t port, const std::string& connect_helper,
                                           const std::string& ca_bundle = {},
                                           const std::string& java_trust_store = {},
                                           const std::vector<MaskedVariable>& masked = {});

// The JVM options that send Java's HTTP and HTTPS clients through the gate on 127.0.0.1:`port`
// (http.proxyHost/Port, https.proxyHost/Port, loopback exempt via http.nonProxyHosts), and
// java.net.preferIPv4Stack=true: a dual-stack socket connects to ::ffff:127.0.0.1, which
// Seatbelt's "localhost" does not match, so a JVM would be refused the gate on macOS. With
// `inherited` (the caller's JAVA_TOOL_OPTIONS, may be empty) in front: for a property given
// twice, the JVM keeps the last. The JVM prints "Picked up JAVA_TOOL_OPTIONS" on stderr.
// With `trust_store` (a PKCS12 file, inspect::write_java_trust_store), it is Java's trust store
// (javax.net.ssl.trustStore, its type and password); left out when its path holds white space
// or a quote, which the JVM would split it at.
std::string java_tool_options(const std::string& inherited, std::uint16_t port,
                              const std::string& trust_store = {});

// GIT_SSH_COMMAND's value: `ssh -o 'ProxyCommand=HELPER %h %p'`, with the helper's path quoted
// for the shell that runs ProxyCommand, its `%` doubled for ssh, and the whole option quoted
// again for the shell that git runs GIT_SSH_COMMAND with.
std::string git_ssh_command(const std::string& connect_helper);

// `text` as one word for a POSIX shell: bare if it is only safe characters, else in single
// quotes with each ' written '\''.
std::string shell_quote(std::string_view text);

}  // namespace sandgate::sandbox
