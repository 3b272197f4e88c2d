// `sandgate serve` (and `sandgate` alone): run the gate until SIGTERM or SIGINT.
#pragma once

#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"

namespace sandgate::commands {

// Exit status: 0 after a clean drain; 2 for a configuration or start-up error. `sources` are
// what `settings` were loaded from: the config file is re-read with them on change.
int run_serve(const settings::Settings& settings, const settings::Sources& sources);

}  // namespace sandgate::commands
