// The terminal of a confined command. The command runs in a session of its own, so it has no
// controlling terminal of the user's: it cannot push keystrokes into the user's shell with
// TIOCSTI (Linux and XNU allow TIOCSTI only on one's own controlling terminal), nor take the
// terminal's foreground. Whenever one of `run`'s standard streams is a terminal, the command gets
// a pseudo-terminal instead: its slave becomes the command's controlling terminal and its
// standard streams where `run`'s were the terminal, so the command never holds a descriptor of
// the user's terminal (it could read keys from it or change its modes). `run` relays the
// command's output to the user's terminal and, when it is in the terminal's foreground with the
// terminal on standard input, the keys back, with the user's terminal in raw mode (restored at
// the end) and the window size. Keystrokes the command pushes into its own terminal reach only
// itself.
//
// Where the pair is opened: on Linux inside the confinement, from a devpts instance of its own
// (the user's other terminals, /dev/pts/N, are not there): open_pseudo_terminal() there
// (process/pseudo_terminal.hpp), adopt() here. On the host's side (macOS under sandbox-exec,
// and --no-isolation) by `run` itself before fork(): open_here(), then attach() in the child;
// the Seatbelt profile allows ioctl only on that slave (ProfileOptions::terminals_relayed).
//
// A question on the terminal (terminal_asker.hpp) takes the terminal over with hold(): the
// relay first passes on what the command's terminal already holds (the question comes after the
// command's last bytes) and the keys already typed (they were meant for the command), then
// stops reading keys and relaying output until release(), so that the prompt is not mixed with
// the command's output and its answer does not reach the command.
//
// Full-screen programs (editors, agents' terminal interfaces) draw on the alternate screen: a
// question drawn there covers part of the program's screen, which the program does not know.
// The relay follows the modes the command's output sets (ScreenModes); after a question on the
// alternate screen it gives back the modes the question's resets undid and has the program
// repaint its whole screen: it changes the command's window size by one row and back, and the
// kernel sends SIGWINCH each time (RepaintRequest). A line-oriented program is left alone: the
// question was a line of its own among its output.
//
// POSIX (Linux and macOS). prepare() and open_here() run before fork()/clone(), the pair is
// opened inside, attach() in the child, adopt(), start(), resize() and finish() in `run`'s main
// thread; the relay runs on a thread of its own until finish(); hold() and release() on the asker's
// thread.
#pragma once

#include <sys/ioctl.h>
#include <termios.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "rules/expected.hpp"
#include "sandbox-profile/supervisor/terminal_asker.hpp"

namespace sandgate::sandbox {

// The terminal modes the command's output has set, followed across its output's chunks with
// a bounded state (an escape sequence longer than kMostParameters is not one of these, and is
// skipped): the alternate screen (private modes 1049, 1047, 47), and the modes a question's
// soft reset undoes that a program sets once and relies on (application cursor keys 1, cursor
// shown 25, autowrap 7, application keypad ESC = / ESC >). ESC c (a full reset) forgets them.
// One thread (the relay's).
class ScreenModes {
 public:
  // Follows `size` bytes of the command's output.
  void feed(const char* data, std::size_t size);
  // Whether the terminal shows the alternate screen (a full-screen program's).
  bool alternate_screen() const { return alternate_screen_; }
  // The sequences that set again the modes the command set (other than the screen), to undo a
  // soft reset drawn since; "" when it set none.
  std::string restore_sequence() const;

 private:
  static constexpr std::size_t kMostParameters = 32;
  enum class Setting { untouched, set, reset };
  void apply_private_modes(Setting setting);  // of the private CSI just read
  void step(char c);

  enum class State { text, escape, csi, private_csi, skip_csi } state_ = State::text;
  std::string parameters_;  // of the private CSI being read, at most kMostParameters
  bool alternate_screen_ = false;
  Setting cursor_keys_ = Setting::untouched;
  Setting cursor_shown_ = Setting::untouched;
  Setting autowrap_ = Setting::untouched;
  Setting keypad_ = Setting::untouched;
};

// A request that a full-screen program repaint its whole screen: the command's window gets one
// row fewer (or more, on a one-row terminal), then its size back. Each change sends SIGWINCH to
// the command's foreground; the size comes back only once the program has drawn for the changed
// one and gone quiet (kQuietMs, and not before kLeastMs), or after kLongestMs, so that it does
// not read the same size twice (its two signals as one) and skip its repaint. The program repaints
// everything, since its screen changed size. The relay's thread.
class RepaintRequest {
 public:
  static constexpr int kLeastMs = 100;
  static constexpr int kQuietMs = 60;
  static constexpr int kLongestMs = 600;
  // Changes the size of `master`'s terminal; the size it comes back to is `terminal`'s (the
  // user's, which may change meanwhile), or the current one when that cannot be read.
  void start(int master, int terminal);
  // Milliseconds until the size must come back (for poll), -1 when nothing waits.
  int wait_ms() const;
  // The program wrote: it is drawing for the changed size.
  void saw_output();
  // Gives the size back when it is time (or now, when `now` is true).
  void finish_if_due(bool now = false);

 private:
  int master_ = -1;
  int terminal_ = -1;
  winsize original_{};
  bool pending_ = false;
  std::chrono::steady_clock::time_point due_{};
  std::chrono::steady_clock::time_point least_{};
  std::chrono::steady_clock::time_point latest_{};
};

class PtyRelay final : public TerminalHolder {
 public:
  // A relay for the standard streams that are terminals, before clone(): which ones, where
  // output goes, whether keys are read. The pty itself is opened inside
  // (process/pseudo_terminal.hpp) and its master handed over with adopt().
  static Expected<std::unique_ptr<PtyRelay>, std::string> prepare();

  // Takes the master (opened inside) and gives its slave the user's modes and window size.
  void adopt(int master);

  // The command's side of a pair opened here (open_here()).
  struct CommandSide {
    int slave = -1;    // close-on-exec; the child attach()es it, the parent closes it after fork()
    std::string name;  // its path, e.g. /dev/pts/4 or /dev/ttys007
  };
  // Opens a pair in this process and adopt()s its master: the host's side (no confinement of
  // its own to open it in). The error names the call that failed.
  Expected<CommandSide, std::string> open_here();

  // In the child, after fork() and before exec: a session of its own whose controlling terminal
  // is `slave`, on the standard streams that were terminals (`streams`, terminal_streams()).
  // Async-signal-safe; false (errno set) when the terminal cannot be made controlling.
  static bool attach(int slave, unsigned streams);

  // True when standard input is a terminal whose foreground `run` is: a relay is wanted.
  static bool wanted();

  ~PtyRelay() override;  // finish()es
  PtyRelay(const PtyRelay&) = delete;
  PtyRelay& operator=(const PtyRelay&) = delete;

  // Which of descriptors 0, 1 and 2 were the terminal (bit N for descriptor N): the command gets
  // the slave in their place.
  unsigned terminal_streams() const { return streams_; }

  // Puts the user's terminal in raw mode (when keys are read) and starts relaying.
  void start();
  // Copies the user's window size to the command's terminal (on SIGWINCH).
  void resize();
  // Relays what the command wrote last, stops, and restores the user's terminal. Idempotent.
  void finish();

  // Stops relaying keys and output (the terminal is the caller's) until release(). Returns
  // once the relay's thread has stopped, at once when it is not running. Thread-safe.
  void hold() override;
  void release() override;
  // Whether the screen held is a full-screen program's (the alternate screen): the question is
  // then drawn over it, and release() has the program repaint. Between hold() and release().
  bool full_screen() const override { return held_full_screen_; }

 private:
  PtyRelay() = default;
  // Relays what the command's terminal holds now (at most 256 KiB), without waiting for more.
  void relay_pending_output(char* buffer, std::size_t size);
  // Passes the keys the user's terminal holds now to the command (at most 64 KiB).
  void relay_pending_input(char* buffer, std::size_t size, bool& input_open);
  // Writes the command's output to the user's terminal, following its modes.
  void pass_output(const char* data, std::size_t size);
  // Back from a question: the modes its resets undid, and a repaint when it was drawn over a
  // full-screen program.
  void after_question();
  void relay();
  // The relay's side of hold() and release(): takes a hold asked for (after relaying what waits
  // in both directions) or a release (then after_question()). Whether the terminal is held now.
  bool follow_hold(char* buffer, std::size_t size, bool& input_open);
  // The command ended: relays what it left in its terminal, without waiting for more.
  void relay_last_output(char* buffer, std::size_t size);

  int master_ = -1;
  int terminal_ = -1;         // the first of 0, 1, 2 that is the user's terminal
  bool interactive_ = false;  // standard input is the terminal and `run` is in its foreground
  int output_ = -1;  // where the command's output goes: the terminal among 1 and 2, or nowhere
  unsigned streams_ = 0;
  int stop_pipe_[2] = {-1, -1};
  int wake_pipe_[2] = {-1, -1};  // hold() and release() wake the relay's poll (non-blocking)
  std::mutex hold_mutex_;        // guards the three below
  std::condition_variable held_changed_;
  bool relaying_ = false;     // the relay's thread runs
  bool hold_wanted_ = false;  // hold() asked, release() not yet
  bool holding_ = false;      // the relay's thread has stopped relaying for hold()
  bool raw_ = false;
  ScreenModes modes_;                           // the relay's thread
  RepaintRequest repaint_;                      // the relay's thread
  std::atomic<bool> held_full_screen_ = false;  // set by the relay's thread before holding_
  termios saved_{};
  std::thread thread_;
};

}  // namespace sandgate::sandbox
