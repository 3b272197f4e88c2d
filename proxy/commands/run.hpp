// `sandgate run [SETTINGS] [FLAGS] -- CMD [ARGS...]`: starts a Gate in-process on a free port and
// runs CMD confined so that the gate is its only way out
// (sandbox-profile/run/run_confined.hpp says how); when CMD exits, drains the gate and exits
// with CMD's status.
#pragma once

#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"
#include "sandbox-profile/run/run_confined.hpp"

namespace sandgate::commands {

// Runs CMD as above. `options` holds the flags and CMD; the sandbox's settings, the gate's files
// and the home are filled in here from `settings`. `sources` are what `settings` came from (the
// config file is watched and reloaded with them). Returns CMD's exit status, 128+N if it died of
// signal N, or sandbox::kRunFailed. Call from a single-threaded process: it forks.
int run_run(const settings::Settings& settings, const settings::Sources& sources,
            sandbox::RunOptions options);

}  // namespace sandgate::commands
