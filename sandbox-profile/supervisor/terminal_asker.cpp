// The terminal asker. See terminal_asker.hpp.
#include "sandbox-profile/supervisor/terminal_asker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "rules/ascii.hpp"
#include "sandbox-profile/supervisor/terminal_input.hpp"

namespace sandgate::sandbox {
namespace {

// How often a prompt on screen checks that its question still waits (it may time out or be
// answered on the admin endpoint meanwhile).
constexpr int kPollMs = 200;

// How long the input must stay quiet after a key for the key to be a key press alone: a
// terminal writes a report or a paste at once, and a person's next key comes later (key repeat
// starts after a quarter of a second or more).
constexpr int kQuietMs = 50;
// How long a question is on screen before a key can answer it: what is typed before was meant
// for the command (a person typing on does not stop at once when the question appears, and a
// command can time its connection to the user's typing).
constexpr std::chrono::milliseconds kArmAfter{750};

// Drawn before each question, to undo what the command's output may have set to hide or garble
// it: a soft reset (DECSTR: display attributes, character sets, insert and origin modes, the
// scrolling region; the cursor stays where it is), the default colours and palette back
// (OSC 110, 111, 104: a command may set the foreground to the background), and again, for
// terminals without DECSTR, every SGR attribute off (ESC[8m conceals), the standard character
// set (SI, ESC ( B), the cursor shown, insert mode off.
constexpr std::string_view kPlainTerminal =
    "\x1b[!p\x1b]110\x07\x1b]111\x07\x1b]104\x07\x1b[0m\x0f\x1b(B\x1b[?25h\x1b[4l";

// `lines` one below the other, the last without a line's end (the key is typed after it).
std::string one_below_the_other(const std::vector<std::string>& lines) {
  std::string text;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    text += (i == 0 ? "" : "\r\n") + lines[i];
  }
  return text;
}

// A question over a full-screen program's screen takes its last rows, as many as the question
// needs with room for the answer's key (so that nothing scrolls the program's screen), the
// cursor saved before (ESC 7) and put back after (ESC 8), the rows erased after the answer.
// The program repaints its screen then (TerminalHolder::full_screen()).
class BottomRows {
  static constexpr std::string_view kSaveCursor = "\0337";     // DECSC (ESC 7)
  static constexpr std::string_view kRestoreCursor = "\0338";  // DECRC (ESC 8)
  static constexpr std::string_view kEraseBelow = "\x1b[J";    // the cursor's row and below

 public:
  // The rows for `lines` on the terminal `tty`; nothing when its size is unknown or too small
  // (the question is then a line among the program's output).
  static std::optional<BottomRows> fit(int tty, const std::vector<std::string>& lines) {
    winsize size{};
    if (::ioctl(tty, TIOCGWINSZ, &size) != 0 || size.ws_row == 0 || size.ws_col == 0) {
      return std::nullopt;
    }
    std::size_t rows = 0;
    for (const auto& line : lines) {
      rows += line.size() / size.ws_col + 1;  // bytes: at least the columns they take
    }
    if (rows >= size.ws_row) {
      return std::nullopt;
    }
    return BottomRows(static_cast<int>(size.ws_row - rows) + 1);
  }
  // The resets, then `lines`.
  std::string draw(const std::vector<std::string>& lines) const {
    // To the first row before the resets (a terminal that does not know one of them may print
    // its last letter: there, not over the program's screen) and after them (origin mode is
    // off then: the row is the screen's, whatever scrolling region the program set).
    std::string text = std::string(kSaveCursor) + go_to_first() + std::string(kPlainTerminal) +
                       go_to_first() + std::string(kEraseBelow);
    return text + one_below_the_other(lines);
  }
  std::string erase() const {
    return go_to_first() + "\x1b[0m" + std::string(kEraseBelow) + std::string(kRestoreCursor);
  }

 private:
  explicit BottomRows(int first) : first_(first) {}
  std::string go_to_first() const { return "\x1b[" + std::to_string(first_) + ";1H"; }
  int first_;  // 1-based
};

std::string random_mark() {
  constexpr std::string_view kLetters = "ACEFHJKLMNPRTUVWXY";  // no look-alikes (0/O, 1/I)
  unsigned char bytes[4] = {};
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    const auto seed = static_cast<unsigned>(::getpid()) ^ static_cast<unsigned>(::time(nullptr));
    std::memcpy(bytes, &seed, sizeof bytes);
  }
  std::string mark;
  for (unsigned char byte : bytes) {
    mark += kLetters[byte % kLetters.size()];
  }
  return mark;
}

// Why output written to `fd` could reach the screen without passing the relay (see open()); ""
// when it cannot: `fd` is closed, /dev/null, or the controlling terminal of run's session (a
// terminal whose session is run's; /dev/tty itself cannot be compared, it stands for any).
std::string unrelayed(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return {};  // closed: nothing is written there
  }
  struct stat null {};
  if (S_ISCHR(info.st_mode) && ::stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
      info.st_rdev == null.st_rdev) {
    return {};
  }
  if (::isatty(fd) == 1 && ::tcgetsid(fd) == ::getsid(0)) {
    return {};  // the terminal itself, which the relay carries
  }
  const char* what = S_ISFIFO(info.st_mode)   ? "a pipe"
                     : S_ISREG(info.st_mode)  ? "a file"
                     : S_ISSOCK(info.st_mode) ? "a socket"
                     : S_ISCHR(info.st_mode)  ? "another device"
                                              : "not the terminal";
  return std::string(fd == STDOUT_FILENO ? "standard output" : "standard error") + " is " + what;
}

}  // namespace

std::unique_ptr<TerminalAsker> TerminalAsker::open(std::string* refused) {
  // O_NOCTTY: `run` already has its controlling terminal; /dev/tty is it, whatever its
  // standard streams are.
  const int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) {
    return nullptr;
  }
  // Only the terminal's foreground may read keys from it (a background reader is stopped with
  // SIGTTIN), and the keys belong to whoever is in the foreground.
  if (::tcgetpgrp(tty) != ::getpgrp()) {
    ::close(tty);
    return nullptr;
  }
  std::string unsafe;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    if (const std::string why = unrelayed(fd); !why.empty()) {
      unsafe += (unsafe.empty() ? "" : "; ") + why;
    }
  }
  if (!unsafe.empty()) {
    ::close(tty);
    if (refused != nullptr) {
      *refused = unsafe;
    }
    return nullptr;
  }
  std::unique_ptr<TerminalAsker> asker(new TerminalAsker(tty));
  if (::pipe2(asker->stop_pipe_, O_CLOEXEC) != 0) {
    return nullptr;
  }
  return asker;
}

TerminalAsker::TerminalAsker(int tty) : tty_(tty), mark_(random_mark()) {}

TerminalAsker::~TerminalAsker() {
  stop();
  for (int fd : {tty_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void TerminalAsker::start() {
  show(std::string(kPlainTerminal) + "sandgate run: the gate's questions begin with \"sandgate [" +
       mark_ + "]\"; a question without that mark comes from the command, not from the gate\r\n");
  thread_ = std::thread([this] { serve(); });
}

bool TerminalAsker::ask(TerminalQuestion question) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= kMaxQueued) {
      return false;
    }
    queue_.push_back(std::move(question));
  }
  ready_.notify_one();
  return true;
}

void TerminalAsker::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    queue_.clear();
  }
  ready_.notify_one();
  // Wakes a prompt waiting for its key: the pipe stays readable from here on.
  const char stop = 1;
  ssize_t ignored = ::write(stop_pipe_[1], &stop, 1);
  (void)ignored;
  if (thread_.joinable()) {
    thread_.join();
  }
}

void TerminalAsker::serve() {
  for (;;) {
    TerminalQuestion question;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        return;
      }
      question = std::move(queue_.front());
      queue_.pop_front();
    }
    put(question);
  }
}

void TerminalAsker::put(TerminalQuestion& question) {
  std::string refusal;  // why the last answer was not applied, over a full-screen program
  for (;;) {
    if (!question.pending()) {
      return;  // answered elsewhere or timed out while it was queued
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_) {
        return;
      }
    }
    if (::tcgetpgrp(tty_) != ::getpgrp()) {
      // `run` was put in the background: asking now would stop it (SIGTTOU, SIGTTIN). Wait to
      // be in the foreground again, or for the question to end some other way.
      pollfd p{stop_pipe_[0], POLLIN, 0};
      ::poll(&p, 1, kPollMs);
      continue;
    }
    // 1. Take the terminal over: the relay stops reading keys and writing output.
    if (holder_ != nullptr) {
      holder_->hold();
    }
    // 2. One key at a time, unechoed (the relay has it so already when the keys are relayed).
    termios saved{};
    const bool have_modes = ::tcgetattr(tty_, &saved) == 0;
    if (have_modes) {
      termios raw = saved;
      ::cfmakeraw(&raw);
      ::tcsetattr(tty_, TCSANOW, &raw);
    }
    // Keys typed before the question was on screen were meant for the command, not for it.
    ::tcflush(tty_, TCIFLUSH);
    // 3. The prompt: over a full-screen program, on the screen's last rows, erased after the
    // answer; otherwise on a line of its own (the command may have left the cursor mid-line).
    std::vector<std::string> lines;
    if (!refusal.empty()) {
      lines.push_back("sandgate: " + refusal);
    }
    lines.push_back("sandgate [" + mark_ + "]: " + question.prompt + " ");
    const std::optional<BottomRows> rows =
        holder_ != nullptr && holder_->full_screen() ? BottomRows::fit(tty_, lines) : std::nullopt;
    if (rows) {
      show(rows->draw(lines));
    } else {
      show("\r\n" + std::string(kPlainTerminal) + one_below_the_other(lines));
    }
    const std::optional<char> key = read_key(question);
    refusal.clear();
    std::optional<std::string> refused;
    if (key) {
      if (!rows) {
        show("\r\n");
      }
      refused = question.answer(*key);
      if (rows) {
        show(rows->erase());
        refusal = refused.value_or("");  // shown above the question, asked again
      } else if (refused) {
        show("sandgate: " + *refused + "\r\n");
      }
    } else {
      show(rows ? rows->erase() : "(no longer asked)\r\n");
    }
    // 4. Give the terminal back as it was.
    if (have_modes) {
      ::tcsetattr(tty_, TCSADRAIN, &saved);
    }
    if (holder_ != nullptr) {
      holder_->release();
    }
    if (!key || !refused) {
      return;
    }
    // Not applied (no list file to write, say): the question waits still; ask it again.
  }
}

namespace {

// The answer line typed so far, and what each burst of input does to it (see read_key): one
// answer's key, then Enter, answers; anything else on the line spoils it, Backspace starts it
// again. `show` echoes the key, takes it back, and beeps.
class AnswerLine {
 public:
  AnswerLine(const TerminalQuestion& question, std::function<void(const std::string&)> show)
      : question_(question), show_(std::move(show)) {}

  // The answer, when `burst` completes one.
  std::optional<char> take(const TerminalInput::Burst& burst) {
    if (burst.erase) {
      start_over(false);
    } else if (burst.enter || burst.key_then_enter) {
      std::optional<char> answer = chosen_;
      if (burst.key_then_enter) {
        answer = chosen_ || spoiled_ ? std::nullopt : answer_for(*burst.key_then_enter);
      } else if (spoiled_) {
        answer.reset();
      }
      if (answer) {
        return answer;
      }
      start_over(true);
    } else if (burst.key && !chosen_ && !spoiled_ && answer_for(*burst.key)) {
      chosen_ = answer_for(*burst.key);
      show_(std::string(1, *burst.key));
    } else if (burst.key || burst.typed) {
      start_over(false);
      spoiled_ = true;
      show_("\a");
    }
    return std::nullopt;
  }

 private:
  // The answer `key` gives: one of the question's keys; the answers that last beyond the run
  // (always and never) by their capital letter only.
  std::optional<char> answer_for(char key) const {
    const char lower = rules::ascii_lower(key);
    if (question_.keys.find(lower) == std::string::npos) {
      return std::nullopt;
    }
    const bool lasting = question_.lasting_keys.find(lower) != std::string::npos;
    if (lasting && key == lower) {
      return std::nullopt;
    }
    return lower;
  }

  void start_over(bool beep) {
    if (chosen_) {
      show_("\b \b");  // take the shown key back
    }
    chosen_.reset();
    spoiled_ = false;
    if (beep) {
      show_("\a");
    }
  }

  const TerminalQuestion& question_;
  std::function<void(const std::string&)> show_;
  std::optional<char> chosen_;  // the line so far, when it is one answer's key
  bool spoiled_ = false;        // the line holds something that is not one answer's key
};

}  // namespace

// An answer is deliberate: typed once the question has been on screen for kArmAfter (keys typed
// before were meant for the command, and are dropped), as a line of its own: the answer's key,
// then Enter. A line that holds anything else (a word typed on for the command: "add tests"
// ends in an answer's letter) answers nothing when its Enter comes; Backspace starts the line
// again. The answers that last beyond the run take their capital letter only. What the
// terminal writes by itself (reports, pastes) is never part of a line (terminal_input.hpp).
std::optional<char> TerminalAsker::read_key(TerminalQuestion& question) {
  // The question's own reader: nothing read before it was asked counts.
  TerminalInput input;
  auto checked = std::chrono::steady_clock::now();
  const auto armed = checked + kArmAfter;
  AnswerLine line(question, [this](const std::string& text) { show(text); });
  for (;;) {
    // While a burst of input is open, wait only for the quiet moment that closes it.
    pollfd fds[2] = {{tty_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    const int ready = ::poll(fds, 2, input.in_burst() ? kQuietMs : kPollMs);
    if (ready < 0 && errno != EINTR) {
      return std::nullopt;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      return std::nullopt;  // stop()
    }
    if (ready == 0 && input.in_burst()) {
      const TerminalInput::Burst burst = input.quiet();
      // A burst typed before the question could be read was meant for the command: dropped.
      if (std::chrono::steady_clock::now() >= armed) {
        if (const std::optional<char> answer = line.take(burst)) {
          return answer;
        }
      }
    }
    // (Checked on time, not only when the input is idle: a stream that never goes quiet, a
    // held key or an endless paste, must not keep a question up that no longer waits.)
    if (const auto now = std::chrono::steady_clock::now();
        now - checked >= std::chrono::milliseconds(kPollMs)) {
      checked = now;
      if (!question.pending()) {
        return std::nullopt;
      }
    }
    if (ready <= 0) {
      continue;
    }
    char buffer[4096];
    const ssize_t got = ::read(tty_, buffer, sizeof buffer);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
      return std::nullopt;  // the terminal hung up
    }
    if (got > 0) {
      input.feed(std::string_view(buffer, static_cast<std::size_t>(got)));
    }
  }
}

void TerminalAsker::show(const std::string& text) const {
  const char* data = text.data();
  std::size_t size = text.size();
  while (size > 0) {
    const ssize_t written = ::write(tty_, data, size);
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;  // the terminal is gone: nothing to show it on
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

}  // namespace sandgate::sandbox
