// Defaults built into the executable from the files in config/.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sandgate::defaults {

// The text of config/blocked.txt: the blocklist written on first run when none exists.
std::string_view blocklist_template();

// A ready-made allowlist, config/presets/NAME.txt, selected with `--allowlist preset:NAME`.
struct Preset {
  std::string_view name;  // "dev"
  std::string_view text;  // the file's bytes
};

// Every bundled preset, in name order. Static storage; thread-safe.
std::span<const Preset> presets();

// The preset called `name`; nothing when there is none.
std::optional<Preset> find_preset(std::string_view name);

// "dev, ..." : the known names, for an error about an unknown one.
std::string preset_names();

// The label a preset's rules carry as their file (`preset:dev`), so that a decision's rule
// reads `preset:dev:12 github.com:443,22`.
std::string preset_source(std::string_view name);

}  // namespace sandgate::defaults
