// `sandgate profile`: prints the Seatbelt profile that `sandgate run` uses on macOS, from the
// same settings and flags, so it can be inspected, diffed and given to other launchers
// (`sandbox-exec -p "$(cat PROFILE)" goosed agent`).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "proxy/settings/settings.hpp"
#include "sandbox-profile/sandbox_flags.hpp"

namespace sandgate::sandbox {

// Writes the profile to `out`. `proxy_port` is --proxy-port; unset: the port of the listen
// setting; a `unix:` listen setting needs none. Exit status: 0, or 2 (message on `err`) when
// there is neither a port nor a socket, or a path cannot be represented in SBPL. Reads the
// working folder, PATH and the file system (see profile_options()).
int run_profile(const settings::Settings& settings, const SandboxFlags& flags,
                std::optional<std::uint16_t> proxy_port, std::ostream& out, std::ostream& err);

}  // namespace sandgate::sandbox
