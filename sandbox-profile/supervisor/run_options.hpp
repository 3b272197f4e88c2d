// What a confined run is given: the command and its settings (RunOptions), and the gate it runs
// behind (GateHandle). Shared by the entry point (run_confined.hpp) and the platforms' parents.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandbox-profile/audit/git_audit.hpp"
#include "sandbox-profile/plan/capture_sockets.hpp"
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
  bool verbose = false;              // --verbose: how the command is confined, in full, at start
};

// What the command attempted on a hidden credential store (plan/credential_stores.hpp), as far
// as the platform sees it (Linux: sandbox-profile/linux/store_reads.hpp).
struct StoreAttempt {
  std::string path;
  bool listed = false;  // the folder itself was opened (a listing), not a file read
  std::uint64_t count = 0;
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
  // A line for the run's log, not the terminal: how the command is confined, in full.
  virtual void log_detail(const std::string& line) { (void)line; }
  // Whether the gate has questions for a person (--unknown=ask): then the confinement offers it
  // the user's terminal while CMD runs.
  virtual bool asks() const { return false; }
  // The terminal to ask on from now on (after start(); its thread started), or null when it is
  // gone (before it is stopped): the gate's questions go to it, and nobody is left to answer
  // them on it after null. From `run`'s main thread.
  virtual void ask_on(TerminalAsker* asker) { (void)asker; }
  // When CMD has ended: its attempts on the hidden credential stores (none may be seen), for the
  // run's summary; `complete` is false when the kernel dropped some (its queue overflowed).
  virtual void stores_attempted(std::vector<StoreAttempt> attempts, bool complete) {
    (void)attempts;
    (void)complete;
  }
  // When CMD has ended and its git folders and working folders were checked (Linux): what was
  // moved aside or put back, and what is only reported, for the run's summary.
  virtual void audited(GitAudit audit) { (void)audit; }
};

// Exit status of `sandgate run` when it could not start CMD (as env(1) and timeout(1) do), so
// that it is not mistaken for CMD's own: 126 and 127 keep their shell meanings (found but not
// executable, not found).
inline constexpr int kRunFailed = 125;
// The exit status when CMD cannot be found (a shell's): said at start when `run` can tell why.
inline constexpr int kCommandNotFound = 127;

}  // namespace sandgate::sandbox
