// The `--secret` entry's syntax. See secret_spec.hpp.
#include "proxy/secrets/secret_spec.hpp"

#include <algorithm>

#include "proxy/secrets/known_credentials.hpp"
#include "rules/host.hpp"

namespace sandgate::secrets {

bool is_variable_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || (name[0] >= '0' && name[0] <= '9')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

namespace {

// One host of the list: a DNS name in normal form, or `*.` and one.
Expected<std::string, std::string> parse_bound_host(std::string_view text) {
  const bool wildcard = text.starts_with("*.");
  const std::string_view name = wildcard ? text.substr(2) : text;
  if (name.find('*') != std::string_view::npos) {
    return Unexpected{"'" + std::string(text) +
                      "': a wildcard is only `*.` before a name (`*.example.com`)"};
  }
  auto host = rules::parse_host(name);
  if (!host) {
    return Unexpected{"'" + std::string(text) +
                      "': " + std::string(rules::to_string(host.error()))};
  }
  if (host->is_ip()) {
    return Unexpected{"'" + std::string(text) +
                      "': a secret is bound to host names, not addresses (the gate fills it in "
                      "only where a certificate for the name was verified)"};
  }
  if (host->name.find('.') == std::string::npos) {
    return Unexpected{"'" + std::string(text) +
                      "': name a host with at least one dot (`*.com` or a single label would "
                      "send the secret to far more hosts than meant)"};
  }
  return wildcard ? "*." + host->name : host->name;
}

}  // namespace

Expected<SecretSpec, std::string> parse_secret_spec(std::string_view text) {
  SecretSpec spec;
  const std::size_t equals = std::min(text.find('='), text.size());
  spec.name = std::string(text.substr(0, equals));
  if (!is_variable_name(spec.name)) {
    return Unexpected{"'" + spec.name.substr(0, 64) +
                      "' cannot name an environment variable (letters, digits and '_', not "
                      "starting with a digit)"};
  }
  // NAME alone, or NAME==SOURCE: the hosts a known credential belongs to.
  std::string_view rest = equals < text.size() ? text.substr(equals + 1) : std::string_view();
  const std::size_t source_at = rest.find('=');
  std::string_view hosts = rest.substr(0, source_at);
  if (hosts.empty()) {
    const KnownCredential* known = known_credential(spec.name);
    if (known == nullptr) {
      return Unexpected{
          "secret " + spec.name +
          " names no host to send it to, and it is not one of the credentials whose "
          "hosts the gate knows (\"Known credentials\" in docs/secrets.md lists them): "
          "write NAME=HOST[,HOST...], or NAME=HOSTS=SOURCE (SOURCE @FILE, !COMMAND "
          "or $VARIABLE)"};
    }
    hosts = known->hosts;
  }
  std::size_t start = 0;
  while (start <= hosts.size()) {
    const std::size_t comma = std::min(hosts.find(',', start), hosts.size());
    const std::string_view item = hosts.substr(start, comma - start);
    if (item.empty()) {
      return Unexpected{"secret " + spec.name + ": an empty host in its list"};
    }
    auto host = parse_bound_host(item);
    if (!host) {
      return Unexpected{"secret " + spec.name + ": " + host.error()};
    }
    if (std::find(spec.hosts.begin(), spec.hosts.end(), *host) == spec.hosts.end()) {
      spec.hosts.push_back(std::move(*host));
    }
    start = comma + 1;
  }
  spec.from = spec.name;
  if (source_at != std::string_view::npos) {
    const std::string_view source = rest.substr(source_at + 1);
    if (source.size() < 2) {
      return Unexpected{"secret " + spec.name +
                        ": its source after the hosts is @FILE, !COMMAND or $VARIABLE"};
    }
    spec.from = std::string(source.substr(1));
    switch (source[0]) {
      case '@':
        spec.source = SecretSource::file;
        break;
      case '!':
        spec.source = SecretSource::command;
        break;
      case '$':
        spec.source = SecretSource::variable;
        if (!is_variable_name(spec.from)) {
          return Unexpected{"secret " + spec.name + ": '$" + spec.from.substr(0, 64) +
                            "' names no environment variable"};
        }
        break;
      default:
        return Unexpected{"secret " + spec.name +
                          ": its source after the hosts is @FILE, !COMMAND or $VARIABLE"};
    }
    if (spec.from.find('\0') != std::string::npos || spec.from.find('\n') != std::string::npos) {
      return Unexpected{"secret " + spec.name + ": its source holds a NUL or a line break"};
    }
  }
  return spec;
}

std::string secret_spec_text(const SecretSpec& spec) {
  std::string text = spec.name + "=";
  for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
    text += (i > 0 ? "," : "") + spec.hosts[i];
  }
  switch (spec.source) {
    case SecretSource::variable:
      if (spec.from != spec.name) {
        text += "=$" + spec.from;
      }
      break;
    case SecretSource::file:
      text += "=@" + spec.from;
      break;
    case SecretSource::command:
      text += "=!" + spec.from;
      break;
  }
  return text;
}

bool secret_bound_to(const SecretSpec& spec, std::string_view host) {
  return std::any_of(spec.hosts.begin(), spec.hosts.end(), [&](const std::string& bound) {
    if (bound.starts_with("*.")) {
      const std::string_view suffix = std::string_view(bound).substr(1);  // ".example.com"
      return host.size() > suffix.size() && host.ends_with(suffix);
    }
    return host == bound;
  });
}

std::vector<std::string> bound_hosts(const std::vector<SecretSpec>& specs) {
  std::vector<std::string> hosts;
  for (const auto& spec : specs) {
    for (const auto& host : spec.hosts) {
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
        hosts.push_back(host);
      }
    }
  }
  return hosts;
}

}  // namespace sandgate::secrets
