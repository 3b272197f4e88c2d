// Landlock (Linux 5.13+): the confined command's write allow-list.
//
// Landlock only grants: once a process restricts itself, a handled access is allowed where a
// rule grants it and denied everywhere else. `run` grants writes beneath a few roots (the
// working folder, the home, the temporary folders, what the user adds) and nowhere else, so
// system paths (/etc, /usr, /proc/sys, ...) are read-only to any user, root included. Inside a
// root, protected paths are carved out: the rules grant every write right on each entry
// *beside* the way to a protected path: for ~/.ssh, on every entry of ~ but .ssh. The price: no
// new entry can be created directly in a folder on the way (~, ~/.config); entries that exist
// there stay writable. Reads and execution are untouched. Where the kernel has ABI 6, the
// command is also scoped: it cannot reach abstract unix sockets or signal processes made
// outside its Landlock domain.
//
// Landlock follows inodes through the paths seen at start-up; a second mount of a protected
// inode under a granted root must be carved out too (private_view.hpp finds them), and a
// process restricted by Landlock can no longer mount anything (the kernel refuses mount(2),
// umount(2), pivot_root(2) and move_mount(2) to it), so none can be made later.
//
// Linux only; call in the confined child after its mounts are final (Landlock forbids changing
// them afterwards). Not thread-safe (restricts the calling thread; call while single-threaded).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// The Landlock ABI version the kernel offers; 0 when it has none or it is disabled.
int landlock_abi();

struct LandlockReport {
  int abi = 0;            // the version used
  std::size_t paths = 0;  // protected paths (with the targets of symbolic links among them)
  std::size_t rules = 0;  // grants added
  bool scoped = false;    // abstract unix sockets and signals scoped to the domain (ABI 6)
};

struct WritePolicy {
  std::vector<std::string> writable;  // absolute: writes granted on and beneath each
  std::vector<std::string> devices;   // device files (or /dev/pts) that may be opened to write
  std::vector<std::string> carved;    // absolute: no write on or beneath each, even in a root
  // Absolute: unix sockets may be bound (made) on and beneath each, and nowhere else. A socket
  // bound where the host can see it is a server the user's own tools may connect to (git's
  // credential cache, ssh's ControlMaster, git's fsmonitor), so only the run's private folders
  // and what the user names are given. Writes must be allowed there too.
  std::vector<std::string> sockets;
  std::vector<std::string> not_sockets;  // absolute: no socket on or beneath each (host folders
                                         // bound back inside a private socket root)
};

// Sets no_new_privs and restricts this process (and what it executes) so that it can write only
// beneath policy.writable (and bind unix sockets only beneath policy.sockets), never on or beneath
// policy.carved (nor on the symbolic links met resolving a carved path, nor where they lead), and
// open policy.devices for writing. A root that does not exist, or lies in a carved path, grants
// nothing. The error says which step failed and why; on error nothing has been restricted.
Expected<LandlockReport, std::string> restrict_writes(const WritePolicy& policy);

// The symbolic links met while resolving `path` (absolute), each as the absolute path of the
// link itself, in the order met; links inside link targets are followed too (at most 40).
// Protecting them keeps a command from re-pointing a link on the way to a protected file.
std::vector<std::string> links_on_the_way(const std::string& path);

}  // namespace sandgate::sandbox
