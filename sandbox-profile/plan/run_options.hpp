// What a confined run is: the command and its settings, platform-free (RunOptions), and the exit
// statuses `run` gives of its own. The first step of a run (plan/) and what every later one is
// handed: the platforms' confinements (linux/, macos/), the entry point (run/run_confined.hpp).
#pragma once

#include <string>
#include <vector>

#include "sandbox-profile/plan/sandbox_flags.hpp"
#include "sandbox-profile/plan/sandbox_options.hpp"

namespace sandgate::sandbox {

struct RunOptions {
  SandboxFlags flags;
  bool no_isolation = false;
  std::vector<std::string> command;  // CMD and its arguments; not empty
  SandboxSettings sandbox;           // the sandbox's settings
  GateView gate;                     // the gate's files and socket, which CMD must not change
  std::string home;                  // the user's home (as $HOME or the passwd entry give it)
  bool verbose = false;              // --verbose: how the command is confined, in full, at start
};

// Exit status of `sandgate run` when it could not start CMD (as env(1) and timeout(1) do), so
// that it is not mistaken for CMD's own: 126 and 127 keep their shell meanings (found but not
// executable, not found).
inline constexpr int kRunFailed = 125;
// The exit status when CMD cannot be found (a shell's): said at start when `run` can tell why.
inline constexpr int kCommandNotFound = 127;

}  // namespace sandgate::sandbox
