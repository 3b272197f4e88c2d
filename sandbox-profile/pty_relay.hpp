// The terminal of a confined command on Linux. The command runs in a session of its own, so it
// has no controlling terminal of the user's: it cannot push keystrokes into the user's shell
// with TIOCSTI (the kernel allows TIOCSTI only on one's own controlling terminal), nor take the
// terminal's foreground. When `run` is started in the foreground of a terminal, the command gets
// a pseudo-terminal instead, opened here: its slave becomes the command's controlling terminal
// (and its standard streams where `run`'s were the terminal), and `run` relays bytes between
// the user's terminal, put in raw mode, and the master, with the window size. Keystrokes the
// command pushes into its own terminal reach only itself.
//
// Linux only. open() runs before clone(); start(), resize() and finish() in `run`'s main
// thread; the relay runs on a thread of its own until finish().
#pragma once

#include <termios.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

class PtyRelay {
 public:
  // A pseudo-terminal like the user's (modes and window size copied from standard input), or
  // an error naming the call that failed.
  static Expected<std::unique_ptr<PtyRelay>, std::string> open();

  // True when standard input is a terminal whose foreground `run` is: a relay is wanted.
  static bool wanted();

  ~PtyRelay();  // finish()es
  PtyRelay(const PtyRelay&) = delete;
  PtyRelay& operator=(const PtyRelay&) = delete;

  // The slave, for the command (close-on-exec); -1 after close_slave().
  int slave() const { return slave_; }
  // Which of descriptors 0, 1 and 2 were the terminal (bit N for descriptor N): the command gets
  // the slave in their place.
  unsigned terminal_streams() const { return streams_; }
  // The parent's copy, closed once the command's process holds its own.
  void close_slave();

  // Puts the user's terminal in raw mode and starts relaying.
  void start();
  // Copies the user's window size to the command's terminal (on SIGWINCH).
  void resize();
  // Relays what the command wrote last, stops, and restores the user's terminal. Idempotent.
  void finish();

 private:
  PtyRelay() = default;
  void relay();

  int master_ = -1;
  int slave_ = -1;
  int output_ = -1;  // where the command's output goes: the terminal among 1 and 2, or nowhere
  unsigned streams_ = 0;
  int stop_pipe_[2] = {-1, -1};
  bool raw_ = false;
  termios saved_{};
  std::thread thread_;
};

}  // namespace sandgate::sandbox
