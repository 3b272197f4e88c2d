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
//           gate's port and the listed unix sockets; if /usr/bin/sandbox-exec is missing,
//           nothing is started.
//   --no-isolation: the proxy variables only, with a loud warning.
//
// The files: run_confined.cpp (this entry point, and the host-side variants), run_isolated.cpp
// (the Linux parent), confinement_plan.cpp (what the Linux confinement allows, decided before
// clone()), confined_init.cpp (the namespace's init: confine, self-probe, run CMD),
// git_quarantine.cpp (new .git entries moved aside after the run), run_support.cpp (exec,
// signals, supervision), terminal_asker.cpp (--unknown=ask's questions on the user's terminal,
// taken over from the pty relay for each).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandbox-profile/linux/capture_network.hpp"
#include "sandbox-profile/plan/sandbox_flags.hpp"
#include "sandbox-profile/plan/sandbox_options.hpp"
#include "sandbox-profile/supervisor/terminal_asker.hpp"

namespace sandgate::sandbox {

struct RunOptions {
  SandboxFlags flags;
  bool no_isolation = false;
  std::vector<std::string> command;  // CMD and its arguments; not empty
  SandboxSettings sandbox;           // the sandbox's settings
  GateView gate;                     // the gate's files and socket, which CMD must not change
  std::string home;                  // the user's home (as $HOME or the passwd entry give it)
};

// The gate a command runs behind, as the confinement drives it. Implemented by `sandgate run`
// over the daemon's Gate; every failure is said (on standard error or in the gate's log) by the
// implementation.
class GateHandle {
 public:
  virtual ~GateHandle() = default;
  // Opens the gate's log and loads its policy: no thread, no socket (the caller forks after).
  virtual bool open() = 0;
  // Serves on `listener` (bound and listening; taken over, also on failure) on threads of the
  // gate's own. Returns the port it serves on. Signals are not the gate's: they go to CMD.
  virtual std::optional<std::uint16_t> start(int listener) = 0;
  // Capture (Linux, SandboxSettings::capture): the capture listener and DNS sockets made in the
  // command's namespace, served from start() on. Called before start(); takes them over.
  virtual void serve_capture(CaptureSockets sockets) = 0;
  // Drains and stops the gate. Idempotent.
  virtual void stop() = 0;
  // Whether the gate has questions for a person (--unknown=ask): then the confinement offers it
  // the user's terminal while CMD runs.
  virtual bool asks() const { return false; }
  // The terminal to ask on from now on (after start(); its thread started), or null when it is
  // gone (before it is stopped): the gate's questions go to it, and nobody is left to answer
  // them on it after null. From `run`'s main thread.
  virtual void ask_on(TerminalAsker* asker) { (void)asker; }
};

// Exit status of `sandgate run` when it could not start CMD (as env(1) and timeout(1) do), so
// that it is not mistaken for CMD's own: 126 and 127 keep their shell meanings (found but not
// executable, not found).
inline constexpr int kRunFailed = 125;

// Runs CMD as above behind `gate`. Returns CMD's exit status, 128+N if it died of signal N, or
// kRunFailed. Call from a single-threaded process: it forks (the gate's threads start after).
int run_confined(const RunOptions& options, GateHandle& gate);

}  // namespace sandgate::sandbox
