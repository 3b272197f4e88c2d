// What every way of running CMD shares: saying, building its exec image before fork(), the
// signal state `run` takes over and gives back, waiting for CMD while forwarding signals to it,
// and file checks that follow no link. Internal to `sandgate run`.
#pragma once

#include "rules/expected.hpp"

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::sandbox {

// Signals passed on to CMD. SIGCHLD is taken too, to learn when CMD ends.
inline constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// `text` with every control character, DEL and byte outside ASCII written as \xHH. (Inline: the
// run summary's text, built without the sandbox's library, uses it too.)
inline std::string terminal_safe(std::string_view text) {
  // Paths the command named end up in these lines (the audit's warnings): a control character, a
  // DEL or a byte outside ASCII is written as \xHH, so that no name can move the cursor, erase a
  // line or hide what follows.
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// Writes "sandgate run: TEXT" (terminal_safe) to standard error.
void say(const std::string& text);

// sandgate's own command line, kept by main() (`--token X`, `--secret` entries and their
// commands are on it): blank_process_arguments() overwrites it in a process the command can see
// (the namespace's init, whose /proc/1/cmdline would show it otherwise).
void keep_process_arguments(int argc, char** argv);
void blank_process_arguments();

// This process's environment, as NAME=VALUE strings.
std::vector<std::string> current_environment();

// The variable's value, or empty.
std::string env_or_empty(const char* name);

// "WHAT: " and strerror(errno): a failed call's sentence.
std::string errno_text(const std::string& what);

// sandgate-connect next to the running executable (warns when it is missing).
std::string connect_helper();

// A command line and an environment as execve() wants them, built before fork(): after a fork
// in a process that has threads, the child may only make async-signal-safe calls.
class ExecImage {
 public:
  ExecImage(std::vector<std::string> command, std::vector<std::string> env)
      : command_(std::move(command)), env_(std::move(env)) {
    for (auto& s : command_) {
      argv_.push_back(s.data());
    }
    argv_.push_back(nullptr);
    for (auto& s : env_) {
      envp_.push_back(s.data());
    }
    envp_.push_back(nullptr);
    failure_ = "sandgate run: cannot run '" + command_.front() + "': ";
  }

  // Executes CMD, searching PATH as a shell does. Only returns on failure, having said why, with
  // the status to exit with (127 not found, 126 found but not executable). Async-signal-safe.
  int exec();

 private:
  std::vector<std::string> command_;
  std::vector<std::string> env_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
  std::string failure_;
};

// The signal state `run` changes, kept to give CMD the one `run` was started with.
struct SignalState {
  sigset_t mask;
  struct sigaction pipe;
};

// The signals `run` takes synchronously, blocked (and SIGPIPE ignored); returns the set to wait
// for. `previous` is what to give CMD back.
sigset_t block_signals(SignalState& previous);

// The signals `run` takes while CMD runs: block_signals()'s, and SIGWINCH, blocked too, for the
// relayed terminal's window size.
struct RunSignals {
  SignalState previous;  // what to give CMD back
  sigset_t forwarded;    // block_signals()'s set: passed on to CMD (the namespace's init waits
                         // for these; the relay gives CMD its window size itself)
  sigset_t waited;       // `forwarded` and SIGWINCH: what `run` waits for
};
RunSignals take_run_signals();

// Puts the child's signal state back as the caller of `sandgate run` left it.
// Async-signal-safe.
void restore_signals(const SignalState& previous);

// A wait status as an exit status: the code, 128+N for signal N, else kRunFailed.
int exit_status(int status);

// Waits for CMD, which runs in a session of its own (nothing the terminal sends reaches it
// directly), to end: passes on every signal of `set` that `run` receives, and on SIGWINCH (when
// in `set`) the window size to `resize` (may be empty). Returns CMD's exit status.
int supervise(pid_t child, const sigset_t& set, const std::function<void()>& resize);

// File system checks that do not follow a final symbolic link.
bool is_folder(const std::string& path);
bool exists(const std::string& path);
// True when `path` is one of `folders` or lies below one.
bool within_any(const std::string& path, const std::vector<std::string>& folders);

}  // namespace sandgate::sandbox
