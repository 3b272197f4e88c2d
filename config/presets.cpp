// Look-ups over the embedded presets. See embedded_defaults.hpp.
#include "config/embedded_defaults.hpp"

namespace sandgate::defaults {

std::optional<Preset> find_preset(std::string_view name) {
  for (const Preset& preset : presets()) {
    if (preset.name == name) {
      return preset;
    }
  }
  return std::nullopt;
}

std::string preset_names() {
  std::string names;
  for (const Preset& preset : presets()) {
    names += names.empty() ? "" : ", ";
    names += preset.name;
  }
  return names.empty() ? std::string("(none)") : names;
}

std::string preset_source(std::string_view name) { return "preset:" + std::string(name); }

}  // namespace sandgate::defaults
