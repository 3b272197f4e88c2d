// The real `sandgate` executable as a child process, for end-to-end tests that need what only
// the process has (signal handling, the log file, the admin listener as `serve` wires it).
// It runs with a controlled environment: HOME is the test's folder and every GOOSE_*,
// SANDGATE_* and LAUNCHDARKLY_* variable of the caller is removed. Started with posix_spawn, so
// it is safe in a test process that already has threads.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace sandgate::testing {

// The whole file, or "" when it cannot be read.
inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The caller's environment without the variables that configure sandgate, with HOME=home.
inline std::vector<std::string> gate_environment(const std::string& home) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("GOOSE_") || entry.starts_with("SANDGATE_") ||
        entry.starts_with("LAUNCHDARKLY_") || entry.starts_with("HOME=")) {
      continue;
    }
    environment.emplace_back(entry);
  }
  environment.push_back("HOME=" + home);
  return environment;
}

// Spawns argv[0] with `environment`; stdin is /dev/null, stdout `stdout_fd` (or /dev/null when
// negative), stderr appended to `stderr_path`. Returns the pid, or -1 (errno-style in `error`).
inline pid_t spawn_process(const std::vector<std::string>& args,
                           const std::vector<std::string>& environment, int stdout_fd,
                           const std::string& stderr_path, std::string& error) {
  std::vector<std::string> argv_text = args;
  std::vector<std::string> envp_text = environment;
  std::vector<char*> argv;
  for (auto& a : argv_text) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : envp_text) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (stdout_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0600);
  pid_t pid = -1;
  // posix_spawnp: tools such as prometheus are found on PATH.
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = "cannot start " + args[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

// Sends `signal_number` and waits up to `grace` for the exit; then SIGKILL. Returns the wait
// status, or -1 when the process was already reaped.
inline int stop_process(pid_t pid, int signal_number, std::chrono::milliseconds grace) {
  if (pid <= 0) {
    return -1;
  }
  ::kill(pid, signal_number);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      return status;
    }
    if (done < 0) {
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return status;
}

// `sandgate serve ARGS...` running until stop() or destruction (SIGTERM, then SIGKILL).
class GateProcess {
 public:
  // `folder` is HOME and holds `stderr.txt`. Waits up to 10 s for the listening line.
  GateProcess(const std::string& executable, const std::vector<std::string>& args,
              const std::string& folder)
      : stderr_path_(folder + "/stderr.txt") {
    int fds[2];
    if (::pipe(fds) != 0) {
      error_ = std::string("pipe: ") + std::strerror(errno);
      return;
    }
    // Neither end may leak into other children; the child's copy is made by dup2.
    ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    std::vector<std::string> argv = {executable, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = spawn_process(argv, gate_environment(folder), fds[1], stderr_path_, error_);
    ::close(fds[1]);
    stdout_fd_ = fds[0];
    if (pid_ > 0) {
      read_listening_line();
    }
  }
  ~GateProcess() {
    stop();
    if (stdout_fd_ >= 0) {
      ::close(stdout_fd_);
    }
  }
  GateProcess(const GateProcess&) = delete;
  GateProcess& operator=(const GateProcess&) = delete;

  // Whether the gate printed `sandgate listening on ADDR:PORT`; otherwise error() says why.
  bool ready() const { return port_ != 0; }
  const std::string& error() const { return error_; }
  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const { return read_text_file(stderr_path_); }

  void signal(int number) const { ::kill(pid_, number); }
  // "running", or how the process ended ("killed by signal 11", "exit 2"); reaps it if it did.
  std::string state() {
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, WNOHANG) != pid_) {
      return pid_ > 0 ? "running" : "stopped";
    }
    pid_ = -1;
    return WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                               : "exit " + std::to_string(WEXITSTATUS(status));
  }
  // SIGTERM (a drain) and the wait status; idempotent.
  int stop() {
    const int status = stop_process(pid_, SIGTERM, std::chrono::seconds(15));
    pid_ = -1;
    return status;
  }

 private:
  void read_listening_line() {
    const std::string_view prefix = "sandgate listening on ";
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (out.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{stdout_fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        error_ = "no listening line within 10 s; stderr: " + stderr_text();
        return;
      }
      char buffer[256];
      const ssize_t n = ::read(stdout_fd_, buffer, sizeof buffer);
      if (n <= 0) {
        error_ = "sandgate exited before listening; stderr: " + stderr_text();
        return;
      }
      out.append(buffer, static_cast<std::size_t>(n));
    }
    const auto colon = out.rfind(':');
    if (!out.starts_with(prefix) || colon == std::string::npos) {
      error_ = "unexpected first line: " + out;
      return;
    }
    port_ = static_cast<std::uint16_t>(std::stoul(out.substr(colon + 1)));
  }

  std::string stderr_path_;
  std::string error_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::uint16_t port_ = 0;
};

// The admin port from the note `admin endpoint on http://127.0.0.1:PORT/metrics` in a log.
inline std::optional<std::uint16_t> admin_port_from_log(const std::string& log) {
  const std::string_view marker = "admin endpoint on http://";
  const auto at = log.find(marker);
  if (at == std::string::npos) {
    return std::nullopt;
  }
  const auto end = log.find("/metrics", at);
  const auto colon = log.rfind(':', end);
  if (end == std::string::npos || colon == std::string::npos || colon < at) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(std::stoul(log.substr(colon + 1, end - colon - 1)));
}

}  // namespace sandgate::testing
