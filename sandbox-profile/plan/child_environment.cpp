// The confined command's environment. See child_environment.hpp.
#include "sandbox-profile/plan/child_environment.hpp"

#include <algorithm>
#include <utility>

namespace sandgate::sandbox {

std::string shell_quote(std::string_view text) {
  const bool safe = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '.' || c == '_' || c == '-' || c == '+' || c == ':' || c == ',' || c == '@' ||
           c == '%' || c == '=';
  });
  if (safe) {
    return std::string(text);
  }
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string git_ssh_command(const std::string& connect_helper) {
  // ssh expands %-tokens in ProxyCommand, so a literal % in the path is written %%.
  std::string helper;
  for (char c : shell_quote(connect_helper)) {
    helper += c;
    if (c == '%') {
      helper += '%';
    }
  }
  return "ssh -o " + shell_quote("ProxyCommand=" + helper + " %h %p");
}

std::string java_tool_options(const std::string& inherited, std::uint16_t port,
                              const std::string& trust_store) {
  // The JVM splits the variable on white space; none of these values contains any.
  const std::string p = std::to_string(port);
  std::string out = inherited;
  if (!out.empty()) {
    out += ' ';
  }
  out += "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + p +
         " -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + p +
         " -Dhttp.nonProxyHosts=localhost|127.*|[::1] -Djava.net.preferIPv4Stack=true";
  if (!trust_store.empty() && trust_store.find_first_of(" \t\n\r'\"") == std::string::npos) {
    // The password only guards the file's integrity: it holds public certificates.
    out += " -Djavax.net.ssl.trustStore=" + trust_store +
           " -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit";
  }
  return out;
}

std::vector<std::string> child_environment(const std::vector<std::string>& inherited,
                                           std::uint16_t port, const std::string& connect_helper,
                                           const std::string& ca_bundle,
                                           const std::string& java_trust_store,
                                           const std::vector<MaskedVariable>& masked) {
  const std::string proxy = "http://127.0.0.1:" + std::to_string(port);
  // ALL_PROXY is what clients use for protocols with no variable of their own (git://, ssh
  // through nc -X 5, many Go and Rust tools); the gate speaks SOCKS5 on the same port, and
  // socks5h leaves name resolution to the gate, so that the policy sees the name. Clients that
  // prefer the HTTP variables keep using those.
  const std::string socks = "socks5h://127.0.0.1:" + std::to_string(port);
  const std::string loopback = "localhost,127.0.0.1,::1";
  std::string java_inherited;
  for (const auto& entry : inherited) {
    if (entry.starts_with("JAVA_TOOL_OPTIONS=")) {
      java_inherited = entry.substr(std::string_view("JAVA_TOOL_OPTIONS=").size());
    }
  }
  std::vector<std::pair<std::string, std::string>> gate = {
      {"http_proxy", proxy},
      {"https_proxy", proxy},
      {"HTTP_PROXY", proxy},
      {"HTTPS_PROXY", proxy},
      {"ALL_PROXY", socks},
      {"all_proxy", socks},
      {"NO_PROXY", loopback},
      {"no_proxy", loopback},
      {"NODE_USE_ENV_PROXY", "1"},
      {"SANDBOX_PROXY_PORT", std::to_string(port)},
      {"GIT_SSH_COMMAND", git_ssh_command(connect_helper)},
      {"JAVA_TOOL_OPTIONS", java_tool_options(java_inherited, port, java_trust_store)},
  };
  if (!ca_bundle.empty()) {
    for (const char* name :
         {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
          "NODE_EXTRA_CA_CERTS", "PIP_CERT", "AWS_CA_BUNDLE", "CARGO_HTTP_CAINFO", "DENO_CERT"}) {
      gate.emplace_back(name, ca_bundle);
    }
  }
  for (const auto& variable : masked) {
    gate.emplace_back(variable.name, variable.sentinel);
  }
  std::vector<std::string> out;
  out.reserve(inherited.size() + gate.size());
  for (const auto& entry : inherited) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    const bool replaced = std::any_of(gate.begin(), gate.end(),
                                      [&](const auto& variable) { return variable.first == name; });
    // sandgate's own variables (a token, an admin token, the secrets' entries) are the gate's,
    // not the command's.
    if (replaced || name.starts_with("SANDGATE_")) {
      continue;
    }
    std::string kept = entry;
    for (const auto& variable : masked) {
      for (std::size_t at = kept.find(variable.value, name.size()); at != std::string::npos;
           at = kept.find(variable.value, at + variable.sentinel.size())) {
        kept.replace(at, variable.value.size(), variable.sentinel);
      }
    }
    out.push_back(std::move(kept));
  }
  for (const auto& [name, value] : gate) {
    out.push_back(name + "=" + value);
  }
  return out;
}

}  // namespace sandgate::sandbox
