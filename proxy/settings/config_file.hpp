// Internal to proxy/settings/: reading the TOML config file into the text form every source
// shares (arrays become comma lists), with the line each key is on.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "rules/expected.hpp"

namespace sandgate::settings {

struct ConfigEntry {
  std::optional<std::string> text;  // none: a value of a type no setting takes (a table, a date)
  std::size_t line = 0;
};
using ConfigFile = std::map<std::string, ConfigEntry, std::less<>>;

// Reads and parses `path`. Errors name the file (and line and column for a syntax error); a key
// that is no setting is an error naming its line: a misspelt setting silently ignored is a
// policy not applied.
Expected<ConfigFile, std::string> read_config_file(const std::string& path);

}  // namespace sandgate::settings
