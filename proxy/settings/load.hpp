// Loading the settings from their three sources (flags, environment variables, the config file),
// walking the one table of settings (setting_table.hpp), and checking them across settings.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"

namespace sandgate::settings {

// Every setting, in the order --help lists them.
const std::vector<SettingInfo>& all_settings();

// The inputs to load from. `flags` holds the flags given, keyed by flag name ("--allow-ip"), with
// "true" for a boolean flag given without a value. `env` looks up an environment variable.
struct Sources {
  std::map<std::string, std::string, std::less<>> flags;
  std::function<std::optional<std::string>(std::string_view)> env;
  std::string home;  // for `~` and the default blocklist path; empty: $HOME or the passwd entry
};

// The real process environment.
std::optional<std::string> process_env(std::string_view name);

// Loads and checks every setting. On failure, the message names the source and the value.
Expected<Settings, std::string> load(const Sources& sources);

}  // namespace sandgate::settings
