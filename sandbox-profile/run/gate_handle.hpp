// The gate a confined command runs behind, as the run drives it (run_confined.hpp): opened before
// the command's confinement is made, started on the listener the confinement hands over, told
// what the supervision and the audit found, stopped when the command ends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandbox-profile/audit/git_audit.hpp"
#include "sandbox-profile/plan/credential_stores.hpp"
#include "sandbox-profile/process/capture_sockets.hpp"
#include "sandbox-profile/supervisor/terminal_asker.hpp"

namespace sandgate::sandbox {

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

}  // namespace sandgate::sandbox
