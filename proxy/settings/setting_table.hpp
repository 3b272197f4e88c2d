// Internal to proxy/settings/: the table of settings (one row per setting: its names in each
// source, help, how to show its value, how to apply a value), and the value parsers the rows
// use. settings.cpp walks the table once per source in precedence order.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/settings/settings.hpp"

namespace sandgate::settings::detail {

using ApplyResult = std::optional<std::string>;  // an error sentence, or nothing when fine
// Applies a value to the settings; a leading `~` in a path expands to `home` (the user's, or the
// one the sources name).
using Apply = ApplyResult (*)(Settings&, std::string_view value, const std::string& home);
// The value a Settings holds for the row, as --help shows a default ("(off)" for an empty one).
using Show = std::string (*)(const Settings&);

struct Setting {
  SettingInfo info;  // info.default_text is filled from `show` applied to a default Settings
  Apply apply;
  Show show;
};

// Every setting, in --help order (the README's settings reference follows it).
const std::vector<Setting>& table();

// The rows by subject, in --help order; table() joins them.
std::vector<Setting> policy_rows();        // setting_rows_policy.cpp: policy, report-only, ask
std::vector<Setting> launchdarkly_rows();  // setting_rows_launchdarkly.cpp
std::vector<Setting> daemon_rows();        // setting_rows_daemon.cpp: profile, daemon, parent

// ---- what the rows share (setting_table.cpp) ----
// Sets `target` to the path `value`, a leading `~` expanded to `home`.
ApplyResult set_path(std::string& target, std::string_view value, const std::string& home);
std::string bool_text(bool value);
// `value`, or `unset` when it is empty.
std::string or_text(const std::string& value, const char* unset);
// A secret is shown as set or not, never itself.
std::string secret_text(const std::string& value);
// The items, comma-separated.
std::string join(const std::vector<std::string>& items);
std::string ports_text(const std::vector<std::uint16_t>& ports, const char* none);
// Seconds, with up to three decimals when not whole ("5", "0.5", "1.25"), as the setting is
// written.
std::string seconds_text(std::chrono::milliseconds value);

// ---- value parsers (value_parsers.cpp) ----
// Splits on commas, trimming each item; empty items are errors (a doubled comma is a typo).
Expected<std::vector<std::string_view>, std::string> split_list(std::string_view text);
// A decimal number in [min, max] (no sign, no spaces).
std::optional<std::uint64_t> parse_number(std::string_view text, std::uint64_t min,
                                          std::uint64_t max);
// "5", "0.5", "1.25": seconds with up to three decimals, as milliseconds.
std::optional<std::uint64_t> parse_decimal_seconds_ms(std::string_view text);
ApplyResult set_bool(bool& target, std::string_view value);
ApplyResult set_ports(std::vector<std::uint16_t>& target, std::string_view value);
ApplyResult set_seconds(std::chrono::seconds& target, std::string_view value, unsigned max);
// `~` and `~/...` against `home`.
std::string expand_home(std::string_view path, const std::string& home);
// A value quoted for an error message: control characters as '?', a secret cut to its start.
std::string describe_value(std::string_view value, bool secret = false);

}  // namespace sandgate::settings::detail
