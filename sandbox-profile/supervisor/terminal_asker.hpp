// Asking the person at `run`'s terminal a question while the confined command runs: the
// terminal asker of --unknown=ask (the questions themselves are the gate's, proxy/ask/; this
// file knows nothing of them, only of prompts, keys and the terminal).
//
// The terminal is the user's controlling terminal, opened as /dev/tty, never the command's
// standard input (which may be a file, or the command's own pseudo-terminal). While the
// command's relay (pty_relay.hpp) runs, it owns the terminal: keys go to the command, its output
// to the screen. A question takes the terminal over from it for the time of one key: the relay
// is held (it stops reading keys and stops writing output, so nothing is lost and nothing is
// mixed into the prompt), the prompt is printed on a line of its own, one key is read, the
// terminal's modes are restored and the relay resumes. One question at a time, in the order
// asked; the queue is bounded.
//
// Threads: ask() and stop() from any thread (ask() never blocks: the gate's sessions call it);
// start() once, from the thread that made the asker; the questions are put and their callbacks
// run on the asker's own thread. stop() ends that thread (a prompt on screen is withdrawn) and
// the destructor stop()s.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace sandgate::sandbox {

// What a question takes the terminal over from (the command's relay). hold() returns once
// nothing but the holder reads keys from the terminal or writes to it; release() gives the
// terminal back. Both from the asker's thread; a relay that is not running holds at once.
class TerminalHolder {
 public:
  virtual ~TerminalHolder() = default;
  virtual void hold() = 0;
  virtual void release() = 0;
  // Whether the terminal, held, shows a full-screen program's screen (the alternate screen),
  // which the question is drawn over and the holder has repainted after release(); false: the
  // question is a line among the command's output. Between hold() and release().
  virtual bool full_screen() const { return false; }
};

// One question as the terminal shows it.
struct TerminalQuestion {
  // The prompt line without a newline: "allow api.example.dev:443? [o]nce / ... / [n]ever".
  std::string prompt;
  // The keys that answer it (lower case; their upper case counts too), each typed as a line of
  // its own (the key, then Enter; see TerminalAsker::read_key). Other keys are ignored.
  std::string keys;
  // Among `keys`, the answers that last beyond the run (always, never: a list file changes):
  // these take the capital letter only, so that a word typed for the command cannot give one.
  std::string lasting_keys;
  // Whether the question still waits for an answer (it may time out, or be answered elsewhere):
  // polled while the prompt is up, and before it is put. Asker's thread.
  std::function<bool()> pending;
  // Applies a key. Returns a sentence to show when the answer was not applied (the question is
  // then put again), or nothing. Asker's thread.
  std::function<std::optional<std::string>(char key)> answer;
};

class TerminalAsker {
 public:
  static constexpr std::size_t kMaxQueued = 64;

  // The user's controlling terminal, when there is one, `run` is in its foreground and nothing
  // but the asker and the command's relay can draw on it while a question is up; nothing
  // otherwise (then nobody can be asked on a terminal). When there is a terminal that is not
  // safe to ask on, `refused` (if given) says why.
  //
  // Safe means: each of run's output streams (standard output and error) is that terminal,
  // relayed by pty_relay.hpp and held during a question, or /dev/null. Anything else is a way
  // for the command's output to reach the screen unheld: a pipe to `tee` or `less` that writes
  // to the same terminal, a file another program follows, another terminal. There the command
  // could draw beside the question, rewrite its host after the mark, and have the user's key
  // answer for another host; the questions then go to the admin endpoint only (or get the ask
  // default), which shows each question by its host.
  static std::unique_ptr<TerminalAsker> open(std::string* refused = nullptr);

  ~TerminalAsker();  // stop()s, closes the terminal
  TerminalAsker(const TerminalAsker&) = delete;
  TerminalAsker& operator=(const TerminalAsker&) = delete;

  // What to take the terminal over from while asking (the command's relay); null: nothing.
  // Before start().
  void share_with(TerminalHolder* holder) { holder_ = holder; }
  // Starts the asker's thread, after saying on the terminal which mark the gate's questions
  // carry (see mark()).
  void start();
  // Four letters drawn at random for this run, shown before the command starts and in every
  // question: the command never sees the terminal's output, so a question it prints itself to
  // mislead the user cannot carry them.
  const std::string& mark() const { return mark_; }
  // Queues a question. False when the queue is full or the asker stopped (the question then
  // waits for another answer, or its timeout). Thread-safe; does not block.
  bool ask(TerminalQuestion question);
  // Ends the asker: a prompt on screen is withdrawn, the terminal's modes restored, queued
  // questions dropped. Idempotent; thread-safe, but not from the asker's own callbacks.
  void stop();

 private:
  explicit TerminalAsker(int tty);
  void serve();
  // Shows one question until it is answered, stops waiting or the asker stops.
  void put(TerminalQuestion& question);
  // Reads one answering key: a single plain key press, alone in its burst of input
  // (terminal_input.hpp); a terminal's reports, pasted text and escape sequences never answer,
  // whatever letters they hold. Nothing when the question stopped waiting or the asker stopped.
  std::optional<char> read_key(TerminalQuestion& question);
  void show(const std::string& text) const;

  int tty_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::string mark_;
  TerminalHolder* holder_ = nullptr;
  std::mutex mutex_;  // guards queue_ and stopping_
  std::condition_variable ready_;
  std::deque<TerminalQuestion> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sandgate::sandbox
