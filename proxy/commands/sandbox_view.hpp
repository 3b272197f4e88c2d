// What the confinement code (sandbox-profile/) is told about the gate, from the settings: the
// gate's files and socket, and the port of its listen setting. `run` and `profile` share it.
#pragma once

#include <cstdint>

#include "proxy/settings/settings.hpp"
#include "sandbox-profile/plan/sandbox_options.hpp"

namespace sandgate::commands {

// The gate's files as configured (blocklist, allowlist, config file, log file) and its unix
// socket (listen unix:PATH), if any.
sandbox::GateView gate_view(const settings::Settings& settings);

// The inspection CA's folder the settings name (ca_dir, or the default under the home).
std::string inspect_ca_folder(const settings::Settings& settings);

// The port of the listen setting (0 if it names port 0 or is a unix socket).
std::uint16_t listen_port(const settings::Settings& settings);

}  // namespace sandgate::commands
