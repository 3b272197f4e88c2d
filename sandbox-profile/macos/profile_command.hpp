// `sandgate profile`: prints the Seatbelt profile that `sandgate run` uses on macOS, from the
// same settings and flags, so it can be inspected, diffed and given to other launchers
// (`sandbox-exec -p "$(cat PROFILE)" goosed agent`).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "sandbox-profile/plan/sandbox_flags.hpp"
#include "sandbox-profile/plan/sandbox_options.hpp"

namespace sandgate::sandbox {

struct ProfileRequest {
  SandboxSettings sandbox;
  GateView gate;
  SandboxFlags flags;
  // The gate's port the profile allows: --proxy-port, else the listen setting's; 0 when neither
  // gives one (then the gate must be on a unix socket).
  std::uint16_t proxy_port = 0;
  std::string listen_text;  // the listen setting as given, for the message when there is no port
  std::string home;         // the user's home, as the environment gives it
};

// Writes the profile to `out`. Exit status: 0, or 2 (message on `err`) when there is neither a
// port nor a socket, or a path cannot be represented in SBPL. Reads the working folder, PATH,
// TMPDIR, SSH_AUTH_SOCK, the passwd entry, the terminals on 0-2 and the file system (see
// profile_options()).
int run_profile(const ProfileRequest& request, std::ostream& out, std::ostream& err);

}  // namespace sandgate::sandbox
