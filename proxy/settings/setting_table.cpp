// The table of settings: every setting's names in each source, help, how its value is shown
// (the --help defaults are a default-built Settings shown through it, so no default is written
// twice) and how a value is applied. See setting_table.hpp. The rows are written by subject, in
// --help order: setting_rows_policy.cpp, setting_rows_launchdarkly.cpp, setting_rows_daemon.cpp;
// this file joins them and holds the helpers they share.
#include "proxy/settings/setting_table.hpp"

#include <cstdio>
#include <iterator>

namespace sandgate::settings::detail {

ApplyResult set_path(std::string& target, std::string_view value, const std::string& home) {
  if (value.find('\0') != std::string_view::npos) {
    return std::string("a path cannot contain a NUL byte");
  }
  target = expand_home(value, home);
  return std::nullopt;
}

std::string bool_text(bool value) { return value ? "true" : "false"; }

std::string or_text(const std::string& value, const char* unset) {
  return value.empty() ? std::string(unset) : value;
}

std::string secret_text(const std::string& value) { return value.empty() ? "(off)" : "(set)"; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

std::string ports_text(const std::vector<std::uint16_t>& ports, const char* none) {
  std::vector<std::string> items;
  for (auto port : ports) {
    items.push_back(std::to_string(port));
  }
  return items.empty() ? std::string(none) : join(items);
}

std::string seconds_text(std::chrono::milliseconds value) {
  const auto ms = value.count();
  std::string text = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03d", static_cast<int>(ms % 1000));
    text += fraction;
    while (text.back() == '0') {
      text.pop_back();
    }
  }
  return text;
}

namespace {

std::vector<Setting> make_table() {
  std::vector<Setting> settings;
  for (auto rows : {policy_rows, launchdarkly_rows, daemon_rows}) {
    std::vector<Setting> part = rows();
    settings.insert(settings.end(), std::make_move_iterator(part.begin()),
                    std::make_move_iterator(part.end()));
  }
  // The defaults --help shows: a default-built Settings, shown through each row.
  static std::vector<std::string> defaults;
  const Settings built;
  defaults.reserve(settings.size());
  for (auto& setting : settings) {
    defaults.push_back(setting.show(built));
    setting.info.default_text = defaults.back();
  }
  return settings;
}

}  // namespace

const std::vector<Setting>& table() {
  static const std::vector<Setting> settings = make_table();
  return settings;
}

}  // namespace sandgate::settings::detail
