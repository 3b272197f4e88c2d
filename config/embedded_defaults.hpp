// Defaults built into the executable from the files in config/.
#pragma once

#include <string_view>

namespace sandgate::defaults {

// The text of config/blocked.txt: the blocklist written on first run when none exists.
std::string_view blocklist_template();

}  // namespace sandgate::defaults
