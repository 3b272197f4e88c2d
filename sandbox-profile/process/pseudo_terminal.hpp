// A pseudo-terminal pair for a confined command's terminal (supervisor/pty_relay.hpp relays it):
// opened inside the confinement on Linux (linux/confined_init.cpp, from the namespace's own
// devpts instance), by `run` itself on the host's side (PtyRelay::open_here()).
#pragma once

#include <string>
#include <utility>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// Opens a pseudo-terminal pair (master, slave; close-on-exec) from /dev/ptmx, in this process's
// devpts instance. The error names the call that failed.
Expected<std::pair<int, int>, std::string> open_pseudo_terminal();

}  // namespace sandgate::sandbox
