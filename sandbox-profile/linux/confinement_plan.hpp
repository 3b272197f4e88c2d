// What the Linux confinement of a command allows, decided before clone() from the run's options,
// the environment and the file system: the private view (which folders are private, what is
// bound back, what is hidden), what may be written (mounts and Landlock) and what is carved out
// of it (the protected paths), and what the self-probe tries. Also the start-up lines that say
// so. Internal to `sandgate run`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rules/expected.hpp"
#include "sandbox-profile/linux/linux_namespaces.hpp"
#include "sandbox-profile/plan/git_config_targets.hpp"
#include "sandbox-profile/plan/run_options.hpp"

namespace sandgate::sandbox {

// Everything the confined child needs to know, decided before clone().
struct Confinement {
  NamespacePlan plan;
  std::string working_folder;
  std::string runtime_dir;
  std::vector<std::string> reachable_sockets;  // bound back in
  std::vector<std::string> writable;           // for the start-up message
  std::vector<std::string> shared_caches;      // the home's caches kept across runs (bound back)
  std::vector<std::string> fresh_caches;       // the run's own caches: empty at start, then gone
  std::vector<std::string> hidden_stores;      // credential stores hidden, for the same
  std::vector<std::string> linked_stores;      // hidden files with another name (hard links)
  std::vector<std::string> probe_no_write;     // what the self-probe tries to write
  std::string probe_no_socket;                 // where the self-probe tries to bind a socket
  std::vector<std::string> git_dirs;           // the enclosing repository's git folders
  std::vector<std::string> scanned;            // searched for new `.git` entries after the run
  GitConfigTargets git_targets;  // what the repository's configuration names outside its folders
  std::string host_pty;          // a host terminal the self-probe tries to open
  unsigned long long host_pty_device = 0;
};

// The Linux confinement for `options`, with the user's `home` (resolved): the private view, the
// sockets, the write allow-list and what is carved out of it. The error is why `run` must not
// start. May create ~/.cache, Go's VCS cache in a shared module cache and the repository's
// missing hooks folder (so they are covered or protected rather than creatable later).
Expected<Confinement, std::string> plan_confinement(const RunOptions& options,
                                                    const std::string& home);

// The lines that say in full how the command is confined (after the self-probe passed), each
// without the "sandgate run: " its saying adds: what --verbose prints at start and the run's log
// always holds.
std::vector<std::string> describe_protection(const SandboxSettings& sandbox,
                                             const Confinement& confinement,
                                             const NamespaceReport& report, std::uint16_t port,
                                             bool pty);

// Why `command` (CMD as given, found on `search_path` like a shell would) cannot be found inside:
// it lies under a folder that is private and empty there (/tmp, /run, ...) and not bound back.
// Empty when it is in view, or not found at all (the shell's own message says so then).
std::string command_out_of_view(const Confinement& confinement, const std::string& command,
                                const std::string& search_path);

// The one line said at start without --verbose: the way out, where the command may write, and
// where the rest is.
std::string summarize_protection(const Confinement& confinement, const NamespaceReport& report,
                                 std::uint16_t port);

// The lines for the forwarded ports (as describe_protection's); none without any.
std::vector<std::string> describe_ports(const RunOptions& options);

}  // namespace sandgate::sandbox
