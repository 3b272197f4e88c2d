// The confined command's pseudo-terminal. See pty_relay.hpp.
#include "sandbox-profile/supervisor/pty_relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "sandbox-profile/process/pseudo_terminal.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {
namespace {

// A pipe whose ends are closed on exec (pipe2 is not on macOS; `run` opens these before any
// thread of its own starts, so no fork can race the flag).
bool make_pipe(int ends[2], bool nonblocking) {
  if (::pipe(ends) != 0) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    ::fcntl(ends[i], F_SETFD, FD_CLOEXEC);
    if (nonblocking) {
      ::fcntl(ends[i], F_SETFL, ::fcntl(ends[i], F_GETFL) | O_NONBLOCK);
    }
  }
  return true;
}

// Writes all of `data` to `fd` (nowhere when fd < 0); false when `fd` is gone.
bool write_all(int fd, const char* data, std::size_t size) {
  while (fd >= 0 && size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

constexpr char kEscape = '\x1b';
constexpr char kCancel = '\x18';      // CAN: ends an escape sequence unfinished
constexpr char kSubstitute = '\x1a';  // SUB: likewise

bool ends_control_sequence(char c) { return c >= 0x40 && c <= 0x7e; }

}  // namespace

void ScreenModes::feed(const char* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    step(data[i]);
  }
}

void ScreenModes::step(char c) {
  // An escape starts a new sequence wherever it comes, and CAN or SUB end one, as in terminals.
  if (c == kEscape) {
    state_ = State::escape;
    return;
  }
  if (state_ != State::text && (c == kCancel || c == kSubstitute)) {
    state_ = State::text;
    return;
  }
  switch (state_) {
    case State::text:
      return;
    case State::escape:
      state_ = State::text;
      if (c == '[') {
        state_ = State::csi;
      } else if (c == '=') {
        keypad_ = Setting::set;
      } else if (c == '>') {
        keypad_ = Setting::reset;
      } else if (c == 'c') {
        *this = ScreenModes();  // RIS: the terminal as it started
      }
      return;
    case State::csi:
      if (c == '?') {
        parameters_.clear();
        state_ = State::private_csi;
      } else {
        state_ = ends_control_sequence(c) ? State::text : State::skip_csi;
      }
      return;
    case State::private_csi:
      if ((c >= '0' && c <= '9') || c == ';') {
        if (parameters_.size() >= kMostParameters) {
          state_ = State::skip_csi;  // no mode of ours is written so long
        } else {
          parameters_ += c;
        }
      } else if (c == 'h' || c == 'l') {
        apply_private_modes(c == 'h' ? Setting::set : Setting::reset);
        state_ = State::text;
      } else {
        state_ = ends_control_sequence(c) ? State::text : State::skip_csi;
      }
      return;
    case State::skip_csi:
      if (ends_control_sequence(c)) {
        state_ = State::text;
      }
      return;
  }
}

void ScreenModes::apply_private_modes(Setting setting) {
  // DECSET and DECRST take several modes at once: ESC[?1049;1h.
  std::size_t from = 0;
  while (from <= parameters_.size()) {
    std::size_t to = parameters_.find(';', from);
    to = to == std::string::npos ? parameters_.size() : to;
    const std::string_view mode(parameters_.data() + from, to - from);
    if (mode == "1049" || mode == "1047" || mode == "47") {
      alternate_screen_ = setting == Setting::set;
    } else if (mode == "1") {
      cursor_keys_ = setting;
    } else if (mode == "25") {
      cursor_shown_ = setting;
    } else if (mode == "7") {
      autowrap_ = setting;
    }
    from = to + 1;
  }
}

std::string ScreenModes::restore_sequence() const {
  std::string sequence;
  const auto private_mode = [&sequence](Setting setting, const char* mode) {
    if (setting != Setting::untouched) {
      sequence += std::string("\x1b[?") + mode + (setting == Setting::set ? "h" : "l");
    }
  };
  private_mode(cursor_keys_, "1");
  private_mode(autowrap_, "7");
  private_mode(cursor_shown_, "25");
  if (keypad_ != Setting::untouched) {
    sequence += keypad_ == Setting::set ? "\x1b=" : "\x1b>";
  }
  return sequence;
}

void RepaintRequest::start(int master, int terminal) {
  finish_if_due(true);
  winsize size{};
  if (::ioctl(master, TIOCGWINSZ, &size) != 0 || size.ws_row == 0) {
    return;  // no size known: the program draws for none
  }
  winsize changed = size;
  changed.ws_row = size.ws_row > 1 ? size.ws_row - 1 : size.ws_row + 1;
  if (::ioctl(master, TIOCSWINSZ, &changed) != 0) {
    return;
  }
  master_ = master;
  terminal_ = terminal;
  original_ = size;
  pending_ = true;
  const auto now = std::chrono::steady_clock::now();
  least_ = now + std::chrono::milliseconds(kLeastMs);
  latest_ = now + std::chrono::milliseconds(kLongestMs);
  due_ = latest_;
}

int RepaintRequest::wait_ms() const {
  if (!pending_) {
    return -1;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      due_ - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count()) + 1;
}

void RepaintRequest::saw_output() {
  if (pending_) {
    due_ = std::min(latest_, std::max(least_, std::chrono::steady_clock::now() +
                                                  std::chrono::milliseconds(kQuietMs)));
  }
}

void RepaintRequest::finish_if_due(bool now) {
  if (!pending_ || (!now && std::chrono::steady_clock::now() < due_)) {
    return;
  }
  pending_ = false;
  // The user's size, which a resize() meanwhile may have given the program already.
  winsize size{};
  if (::ioctl(terminal_, TIOCGWINSZ, &size) != 0 || size.ws_row == 0) {
    size = original_;
  }
  ::ioctl(master_, TIOCSWINSZ, &size);
}

bool PtyRelay::wanted() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::isatty(fd) == 1) {
      return true;
    }
  }
  return false;
}

Expected<std::unique_ptr<PtyRelay>, std::string> PtyRelay::prepare() {
  std::unique_ptr<PtyRelay> pty(new PtyRelay());
  for (int fd = 0; fd <= 2; ++fd) {
    if (::isatty(fd) == 1) {
      pty->streams_ |= 1U << fd;
      pty->terminal_ = pty->terminal_ < 0 ? fd : pty->terminal_;
    }
  }
  if (pty->terminal_ < 0) {
    return Unexpected{std::string("none of the standard streams is a terminal")};
  }
  pty->output_ = ::isatty(STDOUT_FILENO) == 1   ? STDOUT_FILENO
                 : ::isatty(STDERR_FILENO) == 1 ? STDERR_FILENO
                                                : -1;
  // Keys are read only from a terminal on standard input whose foreground `run` is (reading in
  // the background would stop `run` with SIGTTIN, and the keys belong to the foreground).
  pty->interactive_ = ::isatty(STDIN_FILENO) == 1 && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  if (!make_pipe(pty->stop_pipe_, false) || !make_pipe(pty->wake_pipe_, true)) {
    return Unexpected{errno_text("pipe")};
  }
  return pty;
}

Expected<PtyRelay::CommandSide, std::string> PtyRelay::open_here() {
  auto pair = open_pseudo_terminal();
  if (!pair) {
    return Unexpected{pair.error()};
  }
  char name[128];
  if (::ttyname_r(pair->second, name, sizeof name) != 0) {
    const std::string error = errno_text("ttyname");
    ::close(pair->first);
    ::close(pair->second);
    return Unexpected{error};
  }
  adopt(pair->first);
  return CommandSide{pair->second, name};
}

bool PtyRelay::attach(int slave, unsigned streams) {
  // A new session has no controlling terminal; the slave, never anyone's before, becomes its.
  if (::setsid() < 0 || ::ioctl(slave, TIOCSCTTY, 0) != 0) {
    return false;
  }
  for (int fd = 0; fd <= 2; ++fd) {
    if ((streams & (1U << fd)) != 0 && ::dup2(slave, fd) < 0) {
      return false;
    }
  }
  if (slave > 2) {
    ::close(slave);
  }
  return true;
}

void PtyRelay::adopt(int master) {
  master_ = master;
  // Terminal ioctls on a master act on its slave: the command's terminal gets the user's modes
  // and window size.
  termios modes{};
  if (::tcgetattr(terminal_, &modes) == 0) {
    if (!interactive_) {
      // The user's terminal stays in its own (cooked) mode and translates newlines itself.
      modes.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    }
    ::tcsetattr(master_, TCSANOW, &modes);
  }
  winsize size{};
  if (::ioctl(terminal_, TIOCGWINSZ, &size) == 0) {
    ::ioctl(master_, TIOCSWINSZ, &size);
  }
}

PtyRelay::~PtyRelay() {
  finish();
  for (int fd : {master_, stop_pipe_[0], stop_pipe_[1], wake_pipe_[0], wake_pipe_[1]}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void PtyRelay::start() {
  if (master_ < 0) {
    return;
  }
  if (interactive_ && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    termios raw = saved_;
    ::cfmakeraw(&raw);
    raw_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  {
    std::lock_guard lock(hold_mutex_);
    relaying_ = true;
  }
  thread_ = std::thread([this] {
    relay();
    std::lock_guard lock(hold_mutex_);
    relaying_ = false;
    held_changed_.notify_all();  // a hold() waiting on a relay that ended has the terminal
  });
}

void PtyRelay::hold() {
  std::unique_lock lock(hold_mutex_);
  if (!relaying_) {
    return;
  }
  hold_wanted_ = true;
  const char wake = 1;
  ssize_t ignored = ::write(wake_pipe_[1], &wake, 1);
  (void)ignored;
  held_changed_.wait(lock, [this] { return holding_ || !relaying_; });
}

void PtyRelay::release() {
  std::lock_guard lock(hold_mutex_);
  hold_wanted_ = false;
  const char wake = 1;
  ssize_t ignored = ::write(wake_pipe_[1], &wake, 1);
  (void)ignored;
}

void PtyRelay::resize() {
  winsize size{};
  if (master_ >= 0 && ::ioctl(terminal_, TIOCGWINSZ, &size) == 0) {
    ::ioctl(master_, TIOCSWINSZ, &size);  // the kernel sends SIGWINCH to the command
  }
}

void PtyRelay::finish() {
  if (thread_.joinable()) {
    const char stop = 1;
    ssize_t ignored = ::write(stop_pipe_[1], &stop, 1);
    (void)ignored;
    thread_.join();
  }
  if (raw_) {
    // TCSADRAIN: what the user typed meanwhile stays for their shell, as after any program.
    ::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
    raw_ = false;
  }
}

void PtyRelay::pass_output(const char* data, std::size_t size) {
  modes_.feed(data, size);
  repaint_.saw_output();
  write_all(output_, data, size);
}

void PtyRelay::relay_pending_input(char* buffer, std::size_t size, bool& input_open) {
  constexpr std::size_t kMostBeforeAQuestion = 64 * 1024;
  std::size_t relayed = 0;
  while (input_open && relayed < kMostBeforeAQuestion) {
    pollfd ready{STDIN_FILENO, POLLIN, 0};
    if (::poll(&ready, 1, 0) <= 0 || (ready.revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
      return;
    }
    const ssize_t got = ::read(STDIN_FILENO, buffer, size);
    if (got <= 0) {
      input_open = got < 0 && (errno == EINTR || errno == EAGAIN);
      return;
    }
    write_all(master_, buffer, static_cast<std::size_t>(got));
    relayed += static_cast<std::size_t>(got);
  }
}

void PtyRelay::after_question() {
  // What the command wrote meanwhile goes out first: the modes it set then count too.
  char buffer[16384];
  relay_pending_output(buffer, sizeof buffer);
  // The question's soft reset undid modes the program set once (cursor keys, a hidden cursor):
  // a program that relies on them does not set them again when it repaints.
  const std::string modes = modes_.restore_sequence();
  write_all(output_, modes.data(), modes.size());
  if (held_full_screen_ && modes_.alternate_screen()) {
    repaint_.start(master_, terminal_);
  }
}

void PtyRelay::relay_pending_output(char* buffer, std::size_t size) {
  constexpr std::size_t kMostBeforeAQuestion = 256 * 1024;
  std::size_t relayed = 0;
  while (relayed < kMostBeforeAQuestion) {
    pollfd ready{master_, POLLIN, 0};
    if (::poll(&ready, 1, 0) <= 0 || (ready.revents & POLLIN) == 0) {
      return;
    }
    const ssize_t got = ::read(master_, buffer, size);
    if (got <= 0) {
      return;
    }
    pass_output(buffer, static_cast<std::size_t>(got));
    relayed += static_cast<std::size_t>(got);
  }
}

bool PtyRelay::follow_hold(char* buffer, std::size_t size, bool& input_open) {
  bool hold_now = false;
  bool released = false;
  bool held = false;
  {
    std::lock_guard lock(hold_mutex_);
    hold_now = hold_wanted_ && !holding_;
    if (!hold_now && hold_wanted_ != holding_) {
      released = holding_;
      holding_ = hold_wanted_;
      held_changed_.notify_all();
    }
    held = holding_;
  }
  if (released) {
    after_question();
  }
  if (!hold_now) {
    return held;
  }
  // What the command wrote before the question goes out before it, so the question (and its
  // reset of the terminal's modes) follows the command's last bytes instead of being
  // overwritten or hidden by them afterwards; the keys typed before it reach the command.
  // Bounded: a command that writes without pause cannot hold the question back.
  relay_pending_output(buffer, size);
  relay_pending_input(buffer, size, input_open);
  repaint_.finish_if_due(true);  // the size the question is drawn for is the user's
  held_full_screen_ = modes_.alternate_screen();
  std::lock_guard lock(hold_mutex_);
  if (hold_wanted_ && !holding_) {
    holding_ = true;
    held_changed_.notify_all();
  }
  return holding_;
}

void PtyRelay::relay_last_output(char* buffer, std::size_t size) {
  const int flags = ::fcntl(master_, F_GETFL);
  ::fcntl(master_, F_SETFL, flags | O_NONBLOCK);
  for (;;) {
    const ssize_t got = ::read(master_, buffer, size);
    if (got <= 0) {
      return;
    }
    pass_output(buffer, static_cast<std::size_t>(got));
  }
}

void PtyRelay::relay() {
  char buffer[16384];
  bool input_open = interactive_;
  for (;;) {
    // A question holds the terminal: neither the command's output nor keys move meanwhile (the
    // command waits on a full terminal; the keys wait in the user's terminal).
    const bool held = follow_hold(buffer, sizeof buffer, input_open);
    pollfd fds[4] = {{held ? -1 : master_, POLLIN, 0},
                     {stop_pipe_[0], POLLIN, 0},
                     {input_open && !held ? STDIN_FILENO : -1, POLLIN, 0},
                     {wake_pipe_[0], POLLIN, 0}};
    const int polled = ::poll(fds, 4, held ? -1 : repaint_.wait_ms());
    if (!held) {
      repaint_.finish_if_due();
    }
    if (polled < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t got = ::read(master_, buffer, sizeof buffer);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        return;  // EIO (Linux) or end of file (XNU): every slave is closed, the command is gone
      }
      if (got > 0) {
        pass_output(buffer, static_cast<std::size_t>(got));
      }
    }
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t got = ::read(STDIN_FILENO, buffer, sizeof buffer);
      if (got > 0) {
        write_all(master_, buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        input_open = false;
      }
    }
    if ((fds[3].revents & POLLIN) != 0) {
      char drained[64];
      while (::read(wake_pipe_[0], drained, sizeof drained) > 0) {
      }
    }
    if ((fds[1].revents & POLLIN) != 0) {
      relay_last_output(buffer, sizeof buffer);  // the command has ended
      return;
    }
  }
}

}  // namespace sandgate::sandbox
