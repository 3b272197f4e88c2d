// `sandgate run`: the gate side. See run.hpp.
#include "proxy/commands/run.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>

#include "proxy/commands/run_summary.hpp"
#include "proxy/commands/sandbox_view.hpp"
#include "proxy/gate/gate.hpp"

namespace sandgate::commands {
namespace {

void say(const std::string& text) { std::cerr << "sandgate run: " << text << std::endl; }

// Who answers on the terminal, for the log and the list files' comments: the user running
// `run` (the passwd entry's name, else $USER, else the uid).
std::string user_name() {
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr && entry->pw_name != nullptr) {
    return entry->pw_name;
  }
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    return user;
  }
  return "uid " + std::to_string(::getuid());
}

// The terminal the board's listener hands questions to. The listener is called on the gate's
// session threads and may still hold a copy after ask_on(nullptr): it reaches the asker only
// through this slot, under its lock, so a question never reaches an asker that is gone.
struct AskerSlot {
  std::mutex mutex;
  sandbox::TerminalAsker* asker = nullptr;  // guarded by mutex
};

// One question of the board as the terminal puts it. Its answer takes the same path as
// POST /decide (QuestionBoard::answer), from the asker's thread.
sandbox::TerminalQuestion terminal_question(ask::QuestionBoard& board,
                                            const ask::PendingQuestion& question,
                                            const std::string& by) {
  sandbox::TerminalQuestion out;
  const std::string target = question.host + ":" + std::to_string(question.port);
  out.prompt = "allow " + target + "? [o]nce / [s]ession / [a]lways / [d]eny / [n]ever";
  out.keys = "osadn";  // the first letters, as ask::parse_answer reads them
  const std::uint64_t id = question.id;
  out.pending = [&board, id] {
    for (const auto& waiting : board.pending()) {
      if (waiting.id == id) {
        return true;
      }
    }
    return false;
  };
  const std::string host = question.host;
  const std::uint16_t port = question.port;
  out.answer = [&board, host, port, by](char key) -> std::optional<std::string> {
    const auto answer = ask::parse_answer(std::string_view(&key, 1));
    if (!answer) {
      return std::string("not an answer");
    }
    auto applied = board.answer(host, port, *answer, by);
    if (!applied) {
      return applied.error();
    }
    return std::nullopt;
  };
  return out;
}

// The Gate as the confinement drives it: opened before the fork, started on the listener the
// confinement hands over, stopped when CMD has ended.
class RunGate final : public sandbox::GateHandle {
 public:
  RunGate(const settings::Settings& settings, const settings::Sources& sources)
      : settings_(settings), sources_(sources) {}

  bool open() override {
    gate::GateOptions options{settings_, sources_, settings::MissingDefaultBlocklist::create};
    options.without_token = true;  // see GateOptions::without_token
    auto opened = gate::Gate::open(std::move(options));
    if (!opened) {
      report(opened.error());
      return false;
    }
    gate_ = std::move(*opened);
    return true;
  }

  void serve_capture(sandbox::CaptureSockets sockets) override { capture_ = std::move(sockets); }

  std::optional<std::uint16_t> start(int listener) override {
    if (auto error = gate_->start(listener)) {
      capture_.close_all();
      report(*error);
      return std::nullopt;
    }
    // The capture's sockets, before the workers start serving (see serve_capture).
    if (!capture_.tcp.empty()) {
      if (auto adopted = gate_->server().adopt_capture(std::move(capture_)); !adopted) {
        gate_->log().note("error", adopted.error());
        say(adopted.error());
        return std::nullopt;
      }
    }
    // Signals are `run`'s to handle (they go to CMD): the gate runs without a handler of its own.
    gate_->start_thread();
    return gate_->port();
  }

  void stop() override {
    if (gate_) {
      gate_->stop();
    }
  }

  bool asks() const override { return settings_.policy.unknown == rules::UnknownMode::ask; }

  void ask_on(sandbox::TerminalAsker* asker) override {
    if (!gate_ || !asks()) {
      return;
    }
    ask::QuestionBoard& board = gate_->questions();
    if (asker != nullptr && !asking_) {
      {
        std::lock_guard lock(slot_->mutex);
        slot_->asker = asker;
      }
      // Questions the terminal cannot take (its queue is full) wait for another answer or
      // their timeout, as on the admin endpoint.
      board.set_listener([slot = slot_, &board, by = user_name() + " via the terminal"](
                             const ask::PendingQuestion& question) {
        std::lock_guard lock(slot->mutex);
        if (slot->asker != nullptr) {
          slot->asker->ask(terminal_question(board, question, by));
        }
      });
      board.add_answerer();
      asking_ = true;
      gate_->log().note("info", "ask: questions are asked on the terminal of " + user_name());
    } else if (asker == nullptr && asking_) {
      board.set_listener({});
      {
        std::lock_guard lock(slot_->mutex);
        slot_->asker = nullptr;
      }
      board.remove_answerer();
      asking_ = false;
    }
  }

  // What the gate refused while it ran (all of it, aggregated; see log::DenialTally); empty
  // when it never opened.
  log::DenialCounts denials() const {
    return gate_ ? gate_->log().denials().counts() : log::DenialCounts{};
  }

 private:
  static void report(const gate::GateError& error) {
    if (!error.logged) {
      say(error.message);
    }
  }

  const settings::Settings& settings_;
  const settings::Sources& sources_;
  std::unique_ptr<gate::Gate> gate_;
  sandbox::CaptureSockets capture_;  // handed over before start()
  std::shared_ptr<AskerSlot> slot_ = std::make_shared<AskerSlot>();
  bool asking_ = false;  // the terminal is one of the board's answerers
};

}  // namespace

int run_run(const settings::Settings& settings, const settings::Sources& sources,
            sandbox::RunOptions options) {
  options.sandbox = settings.sandbox;
  options.gate = gate_view(settings);
  options.home = settings::home_directory();
  RunGate gate(settings, sources);
  const int status = sandbox::run_confined(options, gate);
  // The command has exited and the gate has stopped (its log still open): tell the person what
  // was refused, on run's standard error, after anything the command printed. Nothing when
  // nothing was.
  std::cerr << render_run_summary(gate.denials(), settings) << std::flush;
  return status;
}

}  // namespace sandgate::commands
