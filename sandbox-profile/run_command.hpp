// `sandgate run [SETTINGS] [FLAGS] -- CMD [ARGS...]`: starts the gate in-process on a free port,
// runs CMD confined so that the gate is its only way out, forwards signals to it, and when it
// exits drains the gate and exits with its status.
//   Linux:  CMD runs in new user, network, mount, pid and IPC namespaces whose only interface is
//           loopback, and the gate listens inside that namespace (see linux_namespaces.hpp), with
//           a fresh session keyring, in a session of its own (a relayed pseudo-terminal when run
//           is in a terminal's foreground: pty_relay.hpp) and no descriptor above 2; Landlock
//           allows writes only in the working folder, the home, the temporary folders and
//           --allow-write paths, minus the protected paths (landlock.hpp); /run, /tmp, ... are
//           private so that unix sockets are denied but the listed ones (private_view.hpp,
//           unix_sockets.hpp); a self-probe from inside must fail before CMD starts
//           (self_probe.hpp); --allow-localhost-port and --allow-inbound-port ports are
//           forwarded between the host's loopback and the namespace's (port_forwarder.hpp).
//   macOS:  CMD runs under sandbox-exec with the profile of profile.hpp (written to a temporary
//           file); if /usr/bin/sandbox-exec is missing, nothing is started.
//   --no-isolation: the proxy variables only, with a loud warning.
#pragma once

#include <string>
#include <vector>

#include "proxy/settings/settings.hpp"
#include "sandbox-profile/sandbox_flags.hpp"

namespace sandgate::sandbox {

struct RunOptions {
  SandboxFlags flags;
  bool no_isolation = false;
  std::vector<std::string> command;  // CMD and its arguments; not empty
};

// Exit status of `sandgate run` when it could not start CMD (as env(1) and timeout(1) do), so
// that it is not mistaken for CMD's own: 126 and 127 keep their shell meanings (found but not
// executable, not found).
inline constexpr int kRunFailed = 125;

// Runs CMD as above. Returns CMD's exit status, 128+N if it died of signal N, or kRunFailed.
// `sources` are what `settings` came from (the config file is watched and reloaded with them).
// Call from a single-threaded process: it forks.
int run_run(const settings::Settings& settings, const settings::Sources& sources,
            const RunOptions& options);

}  // namespace sandgate::sandbox
