// The Seatbelt profile's options for a run or for `sandgate profile`: the run's platform-free
// plan (the sandbox's settings, the gate's files and socket, the flags) in the profile's terms,
// with what this process and the file system say.
#pragma once

#include <cstdint>
#include <string>

#include "sandbox-profile/macos/profile.hpp"
#include "sandbox-profile/plan/sandbox_flags.hpp"
#include "sandbox-profile/plan/sandbox_options.hpp"

namespace sandgate::sandbox {

// The profile's options for a gate on `proxy_port` (0: only on the gate's unix socket), from the
// sandbox's settings (the three toggles), the gate's files and socket, the flags, `home` and
// `ssh_auth_sock` (both as the environment gives them; resolved here), and what this process and
// the file system say: the working folder and its git repository, PATH, sandgate's executables,
// the resolved spellings of protected paths behind symbolic links, the passwd entry's home,
// $TMPDIR, the home's caches that exist, the inherited terminals. An
// --allow-unix-socket path that is a folder allows every socket below it.
ProfileOptions profile_options(const SandboxSettings& sandbox, const GateView& gate,
                               const SandboxFlags& flags, std::uint16_t proxy_port,
                               const std::string& home, const std::string& ssh_auth_sock);

// What `run` made for one run on the host's side (macOS under sandbox-exec) that its profile
// names.
struct RunPlaces {
  std::string relayed_terminal;  // the slave of the pty `run` relays (pty_relay.hpp); "": none
  std::string private_folder;    // the run's private folder (private_folder.hpp); "": none
};

// `options` for that run: a relayed terminal is the command's only terminal (the user's are not
// among `terminals` any more) and may be ioctl'd (terminals_relayed), and unix sockets may be
// bound in the private folder only.
void add_run_places(ProfileOptions& options, const RunPlaces& places);

}  // namespace sandgate::sandbox
