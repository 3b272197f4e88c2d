// Questions on the user's terminal. See terminal_questions.hpp.
#include "sandbox-profile/run/terminal_questions.hpp"

#include <string>

#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {

TerminalQuestions::TerminalQuestions(GateHandle& gate, PtyRelay* pty) : gate_(gate) {
  if (!gate.asks()) {
    return;
  }
  std::string not_asked;
  asker_ = TerminalAsker::open(&not_asked);
  if (!not_asked.empty()) {
    say("questions are not asked on this terminal: " + not_asked +
        ", which reaches the screen without passing the relay that holds the command's "
        "output while a question is up (the command could draw beside a question and change "
        "what your key answers); they go to the admin endpoint (`sandgate pending`, "
        "`sandgate decide`) or get the ask default");
  }
  if (asker_) {
    asker_->share_with(pty);
    asker_->start();
    gate.ask_on(asker_.get());
  }
}

void TerminalQuestions::stop() {
  if (asker_) {
    gate_.ask_on(nullptr);
    asker_->stop();
    asker_.reset();
  }
}

}  // namespace sandgate::sandbox
