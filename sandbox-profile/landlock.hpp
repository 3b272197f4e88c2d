// Landlock (Linux 5.13+): denying writes to the protected paths for the confined command.
//
// Landlock only grants: once a process restricts itself, a handled access is allowed where a
// rule grants it and denied everywhere else. To deny writes under a few paths and allow them
// everywhere else, the rules grant every write right on each entry *beside* the way to a
// protected path: for ~/.ssh, on every entry of / but /home, of /home but /home/ada, of
// /home/ada but .ssh. The price: no new entry can be created directly in a folder on the way
// (/, /home, ~, ~/.config); entries that exist there stay writable. Reads and execution are
// untouched.
//
// Linux only; call in the confined child after its mounts are final (Landlock forbids changing
// them afterwards). Not thread-safe (restricts the calling thread; call while single-threaded).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "rules/expected.hpp"
#include "sandbox-profile/protected_paths.hpp"

namespace sandgate::sandbox {

// The Landlock ABI version the kernel offers; 0 when it has none or it is disabled.
int landlock_abi();

struct LandlockReport {
  int abi = 0;            // the version used
  std::size_t paths = 0;  // protected paths (with the targets of symbolic links among them)
  std::size_t rules = 0;  // grants added
};

// Sets no_new_privs and restricts this process (and what it executes) so that the protected
// paths cannot be written, created, removed, renamed or linked. The error says which step
// failed and why; on error nothing has been restricted.
Expected<LandlockReport, std::string> deny_writes(const std::vector<ProtectedPath>& paths);

}  // namespace sandgate::sandbox
