// Loading sandgate's settings: the table (setting_table.cpp) walked once per source in
// precedence order (flag, variable, config file), then the checks across settings. See load.hpp.
#include "proxy/settings/load.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "proxy/settings/config_file.hpp"
#include "proxy/settings/setting_table.hpp"
#include "rules/host.hpp"

namespace sandgate::settings {

using detail::expand_home;

std::optional<std::string> process_env(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

const std::vector<SettingInfo>& all_settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> out;
    for (const auto& setting : detail::table()) {
      out.push_back(setting.info);
    }
    return out;
  }();
  return infos;
}

namespace {

// A variable from the sources' environment; an empty one counts as unset, as most tools treat
// `VAR= cmd`.
std::optional<std::string> env_value(const Sources& sources, std::string_view name) {
  if (!sources.env) {
    return std::nullopt;
  }
  auto value = sources.env(name);
  if (value && value->empty()) {
    return std::nullopt;
  }
  return value;
}

// The config file's path: --config, else SANDGATE_CONFIG; empty when neither names one.
std::string config_path_of(const Sources& sources, const std::string& home) {
  if (auto flag = sources.flags.find("--config"); flag != sources.flags.end()) {
    return expand_home(flag->second, home);
  }
  if (auto var = env_value(sources, "SANDGATE_CONFIG")) {
    return expand_home(*var, home);
  }
  return {};
}

// How an error names a setting's value, after `separator`: the value itself, described, except
// where it is a secret. A LaunchDarkly server-side or mobile key given by mistake is a
// credential: never echoed. The client and admin tokens are secrets whatever they look like:
// errors name their source only. So is a parent proxy URL with user information (refused for
// exactly that reason).
std::string shown_value(const SettingInfo& info, std::string_view separator, std::string_view v) {
  const bool secret_key =
      info.key == "launchdarkly_client_id" && (v.starts_with("sdk-") || v.starts_with("mob-"));
  const bool hidden = info.key == "token" || info.key == "admin_token" ||
                      (info.key == "parent_proxy" && v.find('@') != v.npos);
  return hidden ? std::string() : std::string(separator) + detail::describe_value(v, secret_key);
}

// One setting from the first source that gives it (flag, variable, config file), applied to
// `settings`; the built-in default stands when none does. An error names where the value came
// from.
std::optional<std::string> apply_from_sources(const detail::Setting& setting,
                                              const Sources& sources, const ConfigFile& file,
                                              const std::string& config_path,
                                              const std::string& home, Settings& settings) {
  const auto& info = setting.info;
  std::string value;
  std::string origin;
  if (auto flag = sources.flags.find(info.flag); flag != sources.flags.end()) {
    value = flag->second;
    origin = std::string(info.flag) + shown_value(info, "=", value);
  } else if (auto var = env_value(sources, info.env)) {
    value = *var;
    origin = std::string(info.env) + shown_value(info, "=", value);
  } else if (auto entry = file.find(info.key); entry != file.end()) {
    origin = config_path + ":" + std::to_string(entry->second.line) + ": " + std::string(info.key);
    if (!entry->second.text) {
      return origin + ": expected a string, number, boolean or array of them";
    }
    value = *entry->second.text;
    origin += shown_value(info, " = ", value);
  } else {
    return std::nullopt;  // the built-in default stands
  }
  if (auto error = setting.apply(settings, value, home)) {
    return origin + ": " + *error;
  }
  return std::nullopt;
}

bool is_loopback_address(const std::string& address) {
  in_addr v4{};
  in6_addr v6{};
  return (inet_pton(AF_INET, address.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
         (inet_pton(AF_INET6, address.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
}

// The checks across settings, each given alone being valid: the first combination refused.
std::optional<std::string> cross_setting_error(const Settings& settings) {
  if (settings.listen.unix_socket() != nullptr && !settings.port_file.empty()) {
    // The port file's content is a port number by contract; a unix socket has none, and its
    // address is the path the caller chose.
    return "the port file (--port-file, SANDGATE_PORT_FILE or port_file) holds a TCP "
           "port, and the gate listens on " +
           settings.listen.text() + ", which has none; drop the port file";
  }
  if (!settings.admin_token.empty() && settings.admin_token == settings.token) {
    // The agent holds the proxy token (its proxy variables carry it); an admin token equal to it
    // would let the agent answer its own questions, which is what the admin token is there to
    // prevent.
    return std::string(
        "the admin token (--admin-token, --admin-token-file or their variables) equals the "
        "proxy token (--token, --token-file or their variables): the agent holds the proxy "
        "token, so the admin token must be a different secret");
  }
  if (const TcpEndpoint* tcp = settings.listen.tcp();
      tcp && !settings.allow_remote_clients && !is_loopback_address(tcp->address)) {
    return "listen address " + settings.listen.text() +
           " is not loopback: anyone who can reach it could use the gate; give "
           "--allow-remote-clients (SANDGATE_ALLOW_REMOTE_CLIENTS=true) to allow it";
  }
  if (!settings.parent_proxy &&
      (settings.parent_credentials || !settings.parent_exclude_text.empty())) {
    // Credentials or exclusions without a parent would be silently unused: a typo in the
    // parent's variable name, most likely.
    return std::string(
        "parent proxy credentials or exclusions are set (--parent-proxy-credentials, "
        "--parent-proxy-exclude or their variables) but no parent proxy (--parent-proxy, "
        "SANDGATE_PARENT_PROXY or parent_proxy)");
  }
  return std::nullopt;
}

}  // namespace

Expected<Settings, std::string> load(const Sources& sources) {
  const std::string home = sources.home.empty() ? home_directory() : sources.home;
  Settings settings;
  const std::string default_blocklist = expand_home(settings.blocklist_path, home);
  settings.blocklist_path = default_blocklist;

  const std::string config_path = config_path_of(sources, home);
  ConfigFile file;
  if (!config_path.empty()) {
    auto read = read_config_file(config_path);
    if (!read) {
      return Unexpected{read.error()};
    }
    file = std::move(*read);
    settings.config_path = config_path;
  }
  for (const auto& setting : detail::table()) {
    if (auto error = apply_from_sources(setting, sources, file, config_path, home, settings)) {
      return Unexpected{*error};
    }
  }

  // Naming the default path explicitly (as the example config does) keeps its first-run
  // behaviour: created from the template when absent.
  settings.blocklist_is_default = settings.blocklist_path == default_blocklist;
  if (auto error = cross_setting_error(settings)) {
    return Unexpected{*error};
  }
  if (settings.threads == 0) {
    const UsableCpus cpus = usable_cpus();
    settings.threads = cpus.count;
    settings.threads_note = cpus.why;
  } else {
    settings.threads_note = "as set";
  }
  return settings;
}

}  // namespace sandgate::settings
