// --unknown=ask's questions on the user's terminal while a confined command runs (both platforms'
// runs: run_isolated.cpp, run_confined.cpp), taken over from the terminal's relay for each one
// (supervisor/terminal_asker.hpp). `run`'s main thread.
#pragma once

#include <memory>

#include "sandbox-profile/run/gate_handle.hpp"
#include "sandbox-profile/supervisor/pty_relay.hpp"
#include "sandbox-profile/supervisor/terminal_asker.hpp"

namespace sandgate::sandbox {

class TerminalQuestions {
 public:
  // When the gate asks (GateHandle::asks()): opens the user's terminal for questions, sharing it
  // with `pty` (may be null), and hands it to the gate. A terminal that cannot hold a question
  // apart from the command's output is said, and not used: questions then go to the admin
  // endpoint or get the ask default.
  TerminalQuestions(GateHandle& gate, PtyRelay* pty);
  ~TerminalQuestions() { stop(); }
  TerminalQuestions(const TerminalQuestions&) = delete;
  TerminalQuestions& operator=(const TerminalQuestions&) = delete;

  // Takes the terminal back from the gate and ends the asker. Before the relay finishes: the
  // terminal's modes are restored in the reverse order they were set. Idempotent.
  void stop();

 private:
  GateHandle& gate_;
  std::unique_ptr<TerminalAsker> asker_;
};

}  // namespace sandgate::sandbox
