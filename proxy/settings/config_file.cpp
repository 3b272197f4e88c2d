// The TOML config file. See config_file.hpp.
#include "proxy/settings/config_file.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "proxy/settings/setting_table.hpp"

namespace sandgate::settings {
namespace {

// Converts a TOML value to the text form every source shares; arrays become comma lists (or
// lines, for a setting whose items hold commas: `secrets`).
std::optional<std::string> toml_to_text(const toml::node& node, char separator = ',') {
  if (auto v = node.as_string()) {
    return v->get();
  }
  if (auto v = node.as_boolean()) {
    return v->get() ? "true" : "false";
  }
  if (auto v = node.as_integer()) {
    return std::to_string(v->get());
  }
  if (auto array = node.as_array()) {
    std::string joined;
    for (const auto& item : *array) {
      auto text = toml_to_text(item);
      if (!text || item.is_array()) {
        return std::nullopt;
      }
      if (!joined.empty()) {
        joined += separator;
      }
      joined += *text;
    }
    return joined;
  }
  return std::nullopt;
}

}  // namespace

Expected<ConfigFile, std::string> read_config_file(const std::string& config_path) {
  toml::table file;
  std::error_code ec;
  if (std::filesystem::is_directory(config_path, ec)) {
    return Unexpected{config_path + ": is a folder, not a config file"};
  }
  if (!std::filesystem::exists(config_path, ec)) {
    return Unexpected{config_path + ": no such config file"};
  }
  try {
    file = toml::parse_file(config_path);
  } catch (const toml::parse_error& error) {
    std::ostringstream message;
    message << config_path;
    if (error.source().begin) {
      message << ":" << error.source().begin.line << ":" << error.source().begin.column;
    }
    message << ": " << error.description();
    return Unexpected{message.str()};
  }
  // Unknown keys are errors: a misspelt setting silently ignored is a policy not applied.
  for (const auto& [key, node] : file) {
    const bool known =
        std::any_of(detail::table().begin(), detail::table().end(),
                    [&key](const detail::Setting& s) { return s.info.key == key.str(); });
    if (!known) {
      return Unexpected{config_path + ":" + std::to_string(node.source().begin.line) +
                        ": unknown setting '" + std::string(key.str()) + "'"};
    }
  }

  ConfigFile out;
  for (const auto& [key, node] : file) {
    out.emplace(std::string(key.str()),
                ConfigEntry{toml_to_text(node, key.str() == "secrets" ? '\n' : ','),
                            static_cast<std::size_t>(node.source().begin.line)});
  }
  return out;
}

}  // namespace sandgate::settings
