// Exec image, signals and supervision for `sandgate run`. See run_support.hpp.
#include "sandbox-profile/process/run_support.hpp"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "sandbox-profile/plan/protected_paths.hpp"
#include "sandbox-profile/plan/run_options.hpp"

#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

extern char** environ;

namespace sandgate::sandbox {

namespace fs = std::filesystem;

void say(const std::string& text) {
  std::cerr << "sandgate run: " << terminal_safe(text) << std::endl;
}

namespace {
char* arguments_start = nullptr;  // keep_process_arguments: argv[0]'s first byte
char* arguments_end = nullptr;    // one past the last argument's NUL
}  // namespace

void keep_process_arguments(int argc, char** argv) {
  if (argc <= 0 || argv == nullptr || argv[0] == nullptr) {
    return;
  }
  arguments_start = argv[0];
  arguments_end = argv[argc - 1] + std::strlen(argv[argc - 1]) + 1;
}

void blank_process_arguments() {
  // The kernel shows the bytes between the arguments' start and end as they are now: all NUL
  // but a name, so `ps` still shows what the process is.
  if (arguments_start == nullptr || arguments_end <= arguments_start) {
    return;
  }
  std::memset(arguments_start, 0, static_cast<std::size_t>(arguments_end - arguments_start));
  static constexpr char kName[] = "sandgate-init";
  if (static_cast<std::size_t>(arguments_end - arguments_start) > sizeof kName) {
    std::memcpy(arguments_start, kName, sizeof kName);
  }
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    out.emplace_back(*entry);
  }
  return out;
}

namespace {

// The folder of the running executable: sandgate-connect is installed next to it.
std::string executable_folder() {
#ifdef __APPLE__
  std::uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);
  std::string path(size, '\0');
  if (_NSGetExecutablePath(path.data(), &size) != 0) {
    return {};
  }
  path.resize(std::strlen(path.c_str()));
  std::error_code ec;
  auto real = fs::canonical(path, ec);
  return ec ? fs::path(path).parent_path().string() : real.parent_path().string();
#else
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
#endif
}

}  // namespace

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

int ExecImage::exec() {
  environ = envp_.data();
  ::execvp(argv_[0], argv_.data());
  const int error = errno;
  const char* reason = std::strerror(error);
  ssize_t ignored = ::write(STDERR_FILENO, failure_.data(), failure_.size());
  ignored = ::write(STDERR_FILENO, reason, std::strlen(reason));
  ignored = ::write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  return error == ENOENT ? 127 : 126;
}

// The signals `run` takes synchronously. SIGCHLD gets a handler that does nothing, so that it
// is never discarded as ignored (its default action) on any system. SIGPIPE is ignored: a client
// that disconnects while the gate writes must cost an error code, not the process.
sigset_t block_signals(SignalState& previous) {
  struct sigaction action {};
  action.sa_handler = [](int) {};
  action.sa_flags = SA_NOCLDSTOP;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGCHLD, &action, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &previous.pipe);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int signal : kForwarded) {
    sigaddset(&set, signal);
  }
  ::sigprocmask(SIG_BLOCK, &set, &previous.mask);
  return set;
}

RunSignals take_run_signals() {
  RunSignals signals;
  signals.forwarded = block_signals(signals.previous);
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  ::sigprocmask(SIG_BLOCK, &winch, nullptr);
  signals.waited = signals.forwarded;
  sigaddset(&signals.waited, SIGWINCH);
  return signals;
}

// Puts the child's signal state back as the caller of `sandgate run` left it.
// Async-signal-safe.
void restore_signals(const SignalState& previous) {
  ::signal(SIGCHLD, SIG_DFL);
  ::sigaction(SIGPIPE, &previous.pipe, nullptr);
  ::sigprocmask(SIG_SETMASK, &previous.mask, nullptr);
}

int exit_status(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return kRunFailed;
}

// Waits for CMD to end, passing on the signals `run` receives. CMD is in a session of its own: a
// signal the terminal sent (Ctrl-C while `run`'s terminal is not in raw mode) reached `run` only,
// so every signal is passed on.
int supervise(pid_t child, const sigset_t& set, const std::function<void()>& resize) {
  for (;;) {
    int number = 0;
    if (::sigwait(&set, &number) != 0) {
      continue;
    }
    if (number == SIGWINCH) {
      if (resize) {
        resize();
      }
      continue;
    }
    if (number == SIGCHLD) {
      int status = 0;
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) {
        return exit_status(status);
      }
      continue;
    }
    ::kill(child, number);
  }
}

std::string connect_helper() {
  const std::string folder = executable_folder();
  const std::string helper = (folder.empty() ? std::string(".") : folder) + "/sandgate-connect";
  if (::access(helper.c_str(), X_OK) != 0) {
    say("warning: " + helper + " is missing: git over SSH (GIT_SSH_COMMAND) will fail");
  }
  return helper;
}

bool is_folder(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool within_any(const std::string& path, const std::vector<std::string>& folders) {
  for (const auto& folder : folders) {
    if (is_within(path, folder)) {
      return true;
    }
  }
  return false;
}

}  // namespace sandgate::sandbox
