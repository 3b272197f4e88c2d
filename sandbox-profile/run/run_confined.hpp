// Running a command confined so that a gate is its only way out: the entry point `sandgate run`
// calls with the gate it started (proxy/commands/run.cpp). It forwards signals to the command,
// and when the command exits stops the gate and returns its status.
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
//   macOS:  CMD runs under sandbox-exec with the deny-default profile of profile.hpp (passed
//           inline): writes only in its writable folders, an allow-list of Mach services, the
//           gate's port and the listed unix sockets; in a session of its own (a relayed
//           pseudo-terminal, the only terminal it may ioctl, when one of run's streams is a
//           terminal: pty_relay.hpp), with a private folder of the run as $TMPDIR, the only
//           place it may bind unix sockets (private_folder.hpp); if /usr/bin/sandbox-exec is
//           missing, nothing is started.
//   --no-isolation: the proxy variables only, with a loud warning. The same session and relayed
//           terminal as on macOS (it costs nothing and keeps TIOCSTI off the user's shell), but
//           this is no sandbox: the command may do anything the user may.
//
// The files: run_confined.cpp (this entry point, and the host-side variants), start_checks.cpp
// (what is refused or made before anything starts), run_isolated.cpp (the Linux parent);
// linux/confinement_plan.cpp (what the Linux confinement allows, decided before clone()),
// linux/confined_init.cpp (the namespace's init: confine, self-probe, run CMD),
// audit/git_quarantine.cpp (what the command left for git and for the tools that open the
// working folder, judged after the run; with git_index.cpp and no_follow.cpp),
// process/run_support.cpp (exec, signals, supervision), supervisor/terminal_asker.cpp
// (--unknown=ask's questions on the user's terminal, taken over from the pty relay for each).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sandbox-profile/plan/run_options.hpp"
#include "sandbox-profile/run/gate_handle.hpp"
#include "sandbox-profile/supervisor/private_folder.hpp"

namespace sandgate::sandbox {

// Runs CMD as above behind `gate`. Returns CMD's exit status, 128+N if it died of signal N, or
// kRunFailed. Call from a single-threaded process: it forks (the gate's threads start after).
int run_confined(const RunOptions& options, GateHandle& gate);

// What the host's side puts around CMD (macOS: sandbox-exec and its profile).
struct HostLaunch {
  std::vector<std::string> prefix;                               // the words in front of CMD
  std::vector<std::pair<std::string, std::string>> environment;  // set in CMD's environment
  std::optional<PrivateFolder> private_folder;  // kept until CMD has ended, then removed
};
// Makes the launch for a gate on 127.0.0.1:`port`, with `relayed_terminal` the command's
// terminal ("" when no stream is a terminal). Nothing: it said why, and nothing is started.
using HostWrapper = std::function<std::optional<HostLaunch>(std::uint16_t port,
                                                            const std::string& relayed_terminal)>;

// The host's side of a run (macOS, and --no-isolation with an empty `wrap`): the gate on the
// host's loopback, CMD in a session of its own with a relayed terminal when one of run's
// streams is a terminal, CMD run behind `wrap`'s launch and, when there is one (CMD is
// confined), --unknown=ask's questions on the user's terminal. Returns as run_confined() does; the
// same threading.
int run_on_host(const RunOptions& options, GateHandle& gate, const HostWrapper& wrap);

// sandbox-exec's launch for one run: a private folder made now under $TMPDIR (CMD's $TMPDIR),
// and the profile for `options` with that folder and the relayed terminal (add_run_places()),
// given inline to `sandbox_exec` (kSandboxExecPath; a test gives a stand-in that runs on Linux).
std::optional<HostLaunch> seatbelt_launch(const RunOptions& options, std::uint16_t port,
                                          const std::string& relayed_terminal,
                                          const std::string& sandbox_exec);

}  // namespace sandgate::sandbox
