// `sandgate run`. See run_command.hpp.
//
// The order matters: everything that may fail is checked before CMD starts; fork() happens
// while the process is still single-threaded (the gate's threads start after it); the signals
// that are forwarded, and SIGCHLD, are blocked before fork() so that none is lost, and are
// taken synchronously with sigwaitinfo()/sigwait() in the main thread.
#include "sandbox-profile/run_command.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/reload/policy_reloader.hpp"
#include "proxy/server/server.hpp"
#include "proxy/settings/policy_loader.hpp"
#include "sandbox-profile/child_environment.hpp"
#include "sandbox-profile/fd_passing.hpp"
#include "sandbox-profile/profile.hpp"
#include "sandbox-profile/protected_paths.hpp"

#ifdef __linux__
#include <sys/prctl.h>

#include "sandbox-profile/linux_namespaces.hpp"
#include "sandbox-profile/port_forwarder.hpp"
#include "sandbox-profile/unix_sockets.hpp"
#endif
#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

extern char** environ;

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

// Signals passed on to CMD. SIGCHLD is taken too, to learn when CMD ends.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void say(const std::string& text) { std::cerr << "sandgate run: " << text << std::endl; }

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    out.emplace_back(*entry);
  }
  return out;
}

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

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

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
  int exec() {
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

// Waits for CMD to end, forwarding the signals `run` receives. A signal the terminal sent
// (Ctrl-C, Ctrl-\) went to CMD as well, since both are in its foreground process group: it is
// not sent twice.
int supervise(pid_t child, const sigset_t& set) {
  for (;;) {
    int number = 0;
    bool from_terminal = false;
#ifdef __linux__
    siginfo_t info{};
    number = ::sigwaitinfo(&set, &info);
    if (number < 0) {
      continue;  // EINTR
    }
    from_terminal = info.si_code == SI_KERNEL;
#else
    if (::sigwait(&set, &number) != 0) {
      continue;
    }
    // No siginfo here: a SIGINT or SIGQUIT while we are the terminal's foreground group came
    // from the terminal.
    from_terminal = (number == SIGINT || number == SIGQUIT) && ::isatty(STDIN_FILENO) &&
                    ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
#endif
    if (number == SIGCHLD) {
      int status = 0;
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) {
        return exit_status(status);
      }
      continue;
    }
    if (!from_terminal) {
      ::kill(child, number);
    }
  }
}

// The daemon's start-up, shared by every way of running: the log and the policy.
struct GateParts {
  std::unique_ptr<log::DecisionLog> log;
  settings::LoadedPolicy loaded;
};

std::optional<GateParts> prepare_gate(const settings::Settings& settings) {
  auto opened = log::DecisionLog::open(settings.log_format, settings.log_file, settings.log_level);
  if (!opened) {
    say(opened.error());
    return std::nullopt;
  }
  GateParts parts{std::move(*opened), {}};
  auto loaded = settings::load_policy(settings, settings::MissingDefaultBlocklist::create);
  if (!loaded) {
    parts.log->note("error", loaded.error());
    return std::nullopt;
  }
  for (const auto& note : loaded->notes) {
    parts.log->note("info", note);
  }
  for (const auto& issue : loaded->issues) {
    parts.log->note("warning", issue.source + ":" + std::to_string(issue.line) + ": skipped '" +
                                   issue.text + "': " + issue.message);
  }
  parts.loaded = std::move(*loaded);
  return parts;
}

// The gate serving on `listener` on threads of its own, with live reload of its files.
struct RunningGate {
  std::unique_ptr<server::Server> server;
  // After the server: stopped (its thread joined) before the server goes away.
  std::unique_ptr<launchdarkly::RemoteAllowlist> remote;
  std::unique_ptr<reload::PolicyReloader> reloader;
  std::thread thread;  // runs Server::run() until the drain is over
  std::uint16_t port = 0;

  RunningGate() = default;
  RunningGate(RunningGate&&) = default;
  ~RunningGate() { stop(); }

  // Drains the gate (CMD has ended: open connections may finish for up to the drain setting)
  // and stops watching files. When it returns the gate's socket is closed.
  void stop() {
    if (thread.joinable()) {
      server->begin_drain();
      thread.join();
    }
    if (remote) {
      remote->stop();
    }
    reloader.reset();
  }
};

std::optional<RunningGate> start_gate(const settings::Settings& settings,
                                      const settings::Sources& sources, GateParts& parts,
                                      int listener) {
  RunningGate running;
  running.server = std::make_unique<server::Server>(settings, *parts.log, parts.loaded.policy);
  auto endpoint = running.server->adopt_listener(listener);
  if (!endpoint) {
    say(endpoint.error());
    return std::nullopt;
  }
  running.port = endpoint->port();
  if (!settings.launchdarkly_client_id.empty()) {
    log::DecisionLog* log = parts.log.get();
    running.remote = std::make_unique<launchdarkly::RemoteAllowlist>(
        settings, [log](std::string_view level, std::string_view text) { log->note(level, text); });
    log->note("info", launchdarkly::describe_configuration(settings));
    if (!settings.ld_failover_given) {
      log->note("warning",
                "GOOSE_SANDBOX_LD_FAILOVER is not set: when LaunchDarkly cannot be reached, "
                "connections the local rules allow are allowed (fail open)");
    }
    running.remote->start();
    running.server->use_remote_allowlist(running.remote.get());
  }
  try {
    server::Server* gate = running.server.get();
    running.reloader = std::make_unique<reload::PolicyReloader>(
        settings, sources, *parts.log, parts.loaded.policy,
        [gate](std::shared_ptr<const rules::Policy> policy) { gate->publish(std::move(policy)); });
  } catch (const std::exception& error) {
    say(error.what());
    return std::nullopt;
  }
  running.reloader->start();
  if (!settings.admin.empty()) {
    parts.log->note("warning", "the admin endpoint is served by `sandgate serve` only");
  }
  // Signals are `run`'s to handle (they go to CMD); the gate only stops when CMD has ended.
  server::Server* gate = running.server.get();
  running.thread = std::thread([gate] { gate->run(false); });
  return running;
}

std::string connect_helper() {
  const std::string folder = executable_folder();
  const std::string helper = (folder.empty() ? std::string(".") : folder) + "/sandgate-connect";
  if (::access(helper.c_str(), X_OK) != 0) {
    say("warning: " + helper + " is missing: git over SSH (GIT_SSH_COMMAND) will fail");
  }
  return helper;
}

// A gate on the host's loopback, and CMD run with `wrap(port)` in front of it (sandbox-exec on
// macOS; nothing with --no-isolation, when `wrap` is empty).
using Wrapper = std::function<std::optional<std::vector<std::string>>(std::uint16_t port)>;

int run_on_host(const settings::Settings& settings, const settings::Sources& sources,
                const RunOptions& options, const Wrapper& wrap) {
  auto parts = prepare_gate(settings);
  if (!parts) {
    return kRunFailed;
  }
  auto listener = open_loopback_listener();
  if (!listener) {
    say("cannot listen on 127.0.0.1: " + listener.error());
    return kRunFailed;
  }
  SignalState previous;
  const sigset_t set = block_signals(previous);
  auto gate = start_gate(settings, sources, *parts, *listener);
  if (!gate) {
    return kRunFailed;
  }
  std::vector<std::string> command;
  if (wrap) {
    auto prefix = wrap(gate->port);
    if (!prefix) {
      gate->stop();
      return kRunFailed;
    }
    command = std::move(*prefix);
  }
  command.insert(command.end(), options.command.begin(), options.command.end());
  ExecImage image(std::move(command),
                  child_environment(current_environment(), gate->port, connect_helper()));

  const pid_t pid = ::fork();
  if (pid < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    gate->stop();
    return kRunFailed;
  }
  if (pid == 0) {
    restore_signals(previous);
    ::_exit(image.exec());
  }
  const int status = supervise(pid, set);
  gate->stop();
  return status;
}

#ifdef __linux__

// Unix sockets of container daemons (or, in strict mode, every listening one) that CMD must
// not reach, found before fork() while /proc/net/unix still shows the host's namespace.
std::vector<std::string> sockets_to_hide_now(const RunOptions& options, const std::string& home) {
  MaskInputs inputs;
  inputs.strict = options.flags.strict_unix_sockets;
  inputs.ssh_auth_sock = env_or_empty("SSH_AUTH_SOCK");
  if (!inputs.ssh_auth_sock.empty()) {
    inputs.ssh_auth_sock = resolved_path(inputs.ssh_auth_sock);
  }
  for (const auto& path : options.flags.allow_unix_sockets) {
    inputs.allowed.push_back(resolved_path(path));
  }
  std::ifstream file("/proc/net/unix");
  std::stringstream text;
  text << file.rdbuf();
  std::vector<std::string> candidates = listening_unix_sockets(text.str());
  for (const auto& path : well_known_container_sockets(home, ::geteuid())) {
    candidates.push_back(path);
  }
  // Per-user VM and container tools keep their sockets in folders of their own.
  for (const char* folder : {"/.colima", "/.lima", "/.docker", "/.rd", "/.orbstack"}) {
    std::error_code ec;
    fs::recursive_directory_iterator it(home + folder,
                                        fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() > 4) {
        it.disable_recursion_pending();
      }
      if (it->is_socket(ec)) {
        candidates.push_back(it->path().string());
      }
    }
  }
  for (auto& path : candidates) {
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode)) {
      inputs.sockets.push_back(resolved_path(path));
    }
  }
  return sockets_to_hide(inputs);
}

std::string describe_protection(const settings::Settings& settings, const NamespaceReport& report,
                                std::uint16_t port) {
  std::string text =
      "confined: user, network and mount namespaces with loopback only; the gate "
      "on 127.0.0.1:" +
      std::to_string(port) + " is the only way out\n";
  text += "sandgate run: ";
  if (report.landlock_abi > 0) {
    text += "writes denied by Landlock (ABI " + std::to_string(report.landlock_abi) + ") to " +
            std::to_string(report.landlock_paths) + " protected paths: the gate's configuration";
    text += settings.protect_files
                ? ", shell start-up files, ~/.ssh, ~/.gnupg, ~/.config/{fish,goose,autostart,"
                  "systemd}; no new entries directly in the folders above them (~, ~/.config)"
                : " only (GOOSE_SANDBOX_PROTECT_FILES=false)";
  } else {
    text += "NO write protection: " + report.landlock_note + " (protected paths stay writable)";
  }
  if (!report.hidden.empty()) {
    text += "\nsandgate run: unix sockets hidden:";
    for (const auto& path : report.hidden) {
      text += " " + path;
    }
  }
  return text;
}

// Forks the connector for inbound ports (see port_forwarder.hpp) from the confined child, inside
// its namespaces, so that it belongs to no one: a double fork leaves it to init, and it lives
// exactly as long as the channel to the gate. Returns the gate's end of the channel, or -1.
int start_connector() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return -1;
  }
  const pid_t middle = ::fork();
  if (middle == 0) {
    if (::fork() == 0) {
      // Keep only the channel (as descriptor 3) and the standard streams.
      ::dup2(pair[1], 3);
      ::close_range(4, ~0U, 0);
      ::fcntl(3, F_SETFD, FD_CLOEXEC);
      drop_privileges();
      run_connector(3);
    }
    ::_exit(0);
  }
  ::close(pair[1]);
  ::waitpid(middle, nullptr, 0);
  return pair[0];
}

// The start-up line for the forwarded ports; empty without any.
std::string describe_ports(const RunOptions& options) {
  std::string text;
  const auto list = [](const std::vector<std::uint16_t>& ports) {
    std::string out;
    for (auto port : ports) {
      out += (out.empty() ? "" : ", ") + std::to_string(port);
    }
    return out;
  };
  if (!options.flags.allow_localhost_ports.empty()) {
    text += "\nsandgate run: forwarded to the host's localhost: " +
            list(options.flags.allow_localhost_ports);
  }
  if (!options.flags.allow_inbound_ports.empty()) {
    text += "\nsandgate run: the host's localhost forwarded in to: " +
            list(options.flags.allow_inbound_ports);
  }
  return text;
}

// The child: confine itself, hand the listeners over, wait for the gate, exec CMD.
[[noreturn]] void confined_child(int channel, pid_t parent, const NamespacePlan& plan,
                                 const RunOptions& options, const std::string& helper,
                                 const SignalState& previous) {
  NamespaceReport report;
  auto listener = enter_namespaces(plan, report);
  if (!listener) {
    send_message(channel, "error " + listener.error());
    ::_exit(kRunFailed);
  }
  // If sandgate dies, so does CMD: it would have no way out anyway. (Set after unshare(), which
  // resets it.)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(kRunFailed);
  }
  sockaddr_in address{};
  socklen_t length = sizeof address;
  ::getsockname(*listener, reinterpret_cast<sockaddr*>(&address), &length);
  const std::uint16_t port = ntohs(address.sin_port);
  // --allow-localhost-port N: a listener on this namespace's 127.0.0.1:N for the gate to relay
  // to the host's; --allow-inbound-port: the connector.
  std::vector<std::pair<std::uint16_t, int>> outbound;
  for (auto forwarded : options.flags.allow_localhost_ports) {
    auto opened = open_loopback_listener(forwarded);
    if (!opened) {
      send_message(channel, "error --allow-localhost-port " + std::to_string(forwarded) + ": " +
                                opened.error());
      ::_exit(kRunFailed);
    }
    outbound.emplace_back(forwarded, *opened);
  }
  const int connector = options.flags.allow_inbound_ports.empty() ? -1 : start_connector();
  if (!options.flags.allow_inbound_ports.empty() && connector < 0) {
    send_message(channel, "error cannot start the connector for --allow-inbound-port");
    ::_exit(kRunFailed);
  }
  if (auto dropped = drop_privileges(); !dropped) {
    send_message(channel, "error " + dropped.error());
    ::_exit(kRunFailed);
  }
  bool sent = static_cast<bool>(send_message(channel, "ready\n" + report.serialize(), *listener));
  for (const auto& [forwarded, fd] : outbound) {
    sent = sent && send_message(channel, "outbound " + std::to_string(forwarded), fd);
    ::close(fd);
  }
  if (connector >= 0) {
    sent = sent && send_message(channel, "connector", connector);
    ::close(connector);
  }
  if (!sent) {
    ::_exit(kRunFailed);
  }
  ::close(*listener);
  auto go = receive_message(channel);
  if (!go || go->text != "go") {
    ::_exit(kRunFailed);  // the gate did not start; the parent has said why
  }
  ::close(channel);
  ExecImage image(options.command, child_environment(current_environment(), port, helper));
  restore_signals(previous);
  ::_exit(image.exec());
}

int run_isolated(const settings::Settings& settings, const settings::Sources& sources,
                 const RunOptions& options) {
  const std::string home = resolved_path(settings::home_directory());
  NamespacePlan plan;
  plan.uid = ::geteuid();
  plan.gid = ::getegid();
  plan.hide_sockets = sockets_to_hide_now(options, home);
  plan.protected_paths = protected_paths({.home = home,
                                          .protect_files = settings.protect_files,
                                          .platform = Platform::linux,
                                          .gate_files = gate_files(settings)});
  // ssh, gpg and login shells find their files through the passwd entry, not $HOME: when the two
  // differ, the account's own home is protected as well.
  if (const passwd* account = ::getpwuid(::geteuid());
      account != nullptr && account->pw_dir != nullptr && account->pw_dir[0] == '/') {
    const std::string account_home = resolved_path(account->pw_dir);
    if (account_home != home) {
      for (auto& p : protected_paths({.home = account_home,
                     .protect_files = settings.protect_files,
                     .platform = Platform::linux,
                     .gate_files = {}})) {
        plan.protected_paths.push_back(std::move(p));
      }
    }
  }
  const std::string helper = connect_helper();
  auto parts = prepare_gate(settings);
  if (!parts) {
    return kRunFailed;
  }

  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    say(std::string("socketpair: ") + std::strerror(errno));
    return kRunFailed;
  }
  SignalState previous;
  const sigset_t set = block_signals(previous);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    return kRunFailed;
  }
  if (pid == 0) {
    ::close(channel[0]);
    confined_child(channel[1], parent, plan, options, helper, previous);
  }
  ::close(channel[1]);
  const int to_child = channel[0];
  // Ends the child (it waits for "go" and exits when the channel closes) and reaps it.
  const auto abandon = [&]() {
    ::close(to_child);
    ::waitpid(pid, nullptr, 0);
    return kRunFailed;
  };

  auto message = receive_message(to_child);
  if (!message || message->closed) {
    say("the confined process ended before it was ready");
    return abandon();
  }
  if (message->text.starts_with("error ")) {
    say(message->text.substr(6));
    return abandon();
  }
  if (message->fd < 0) {
    say("the confined process sent no listening socket");
    return abandon();
  }
  const NamespaceReport report = NamespaceReport::parse(message->text);
  auto gate = start_gate(settings, sources, *parts, message->fd);
  if (!gate) {
    return abandon();
  }
  // The forwarded localhost ports, as the child sent them.
  PortForwarder forwarder;
  for (auto forwarded : options.flags.allow_localhost_ports) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "outbound " + std::to_string(forwarded)) {
      say("the confined process sent no listener for --allow-localhost-port " +
          std::to_string(forwarded));
      return abandon();
    }
    forwarder.forward_outbound(sent->fd, forwarded);
  }
  if (!options.flags.allow_inbound_ports.empty()) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "connector") {
      say("the confined process sent no connector for --allow-inbound-port");
      return abandon();
    }
    for (auto forwarded : options.flags.allow_inbound_ports) {
      if (auto listening = forwarder.forward_inbound(forwarded, sent->fd); !listening) {
        say(listening.error());
        forwarder.stop();
        return abandon();
      }
    }
  }
  say(describe_protection(settings, report, gate->port) + describe_ports(options));
  if (!send_message(to_child, "go")) {
    forwarder.stop();
    gate->stop();
    return abandon();
  }
  ::close(to_child);
  const int status = supervise(pid, set);
  forwarder.stop();
  gate->stop();
  return status;
}

#endif  // __linux__

#ifdef __APPLE__

constexpr const char* kSandboxExec = "/usr/bin/sandbox-exec";

// Writes the profile for a gate on `port` to a private temporary file; returns its path.
std::optional<std::string> write_profile(const settings::Settings& settings,
                                         const RunOptions& options, std::uint16_t port) {
  auto profile = generate_profile(profile_options(
      settings, options.flags, port, settings::home_directory(), env_or_empty("SSH_AUTH_SOCK")));
  if (!profile) {
    say(profile.error());
    return std::nullopt;
  }
  std::error_code ec;
  std::string path = (fs::temp_directory_path(ec) / "sandgate-profile-XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) {
    say("cannot write the profile to " + path + ": " + std::strerror(errno));
    return std::nullopt;
  }
  const bool ok =
      ::write(fd, profile->data(), profile->size()) == static_cast<ssize_t>(profile->size());
  ::close(fd);
  if (!ok) {
    say("cannot write the profile to " + path);
    ::unlink(path.c_str());
    return std::nullopt;
  }
  return path;
}

#endif  // __APPLE__

}  // namespace

int run_run(const settings::Settings& settings, const settings::Sources& sources,
            const RunOptions& options) {
  if (options.command.empty()) {
    say("no command given: sandgate run [SETTINGS] -- CMD [ARGS...]");
    return kRunFailed;
  }
  if (options.no_isolation) {
    say("WARNING: --no-isolation: the command is NOT confined. Only the proxy variables point it "
        "at the gate; anything that ignores them (curl --noproxy, raw sockets, most non-HTTP "
        "clients) reaches the network directly.");
    return run_on_host(settings, sources, options, {});
  }
#ifdef __linux__
  return run_isolated(settings, sources, options);
#elif defined(__APPLE__)
  // Never run unconfined by accident: check before anything starts.
  if (::access(kSandboxExec, X_OK) != 0) {
    say(std::string("sandbox-exec is not available (") + kSandboxExec +
        " is missing): not starting the command unconfined; --no-isolation runs it with the "
        "proxy variables only");
    return kRunFailed;
  }
  std::string profile_path;
  const int status = run_on_host(
      settings, sources, options,
      [&](std::uint16_t port) -> std::optional<std::vector<std::string>> {
        auto path = write_profile(settings, options, port);
        if (!path) {
          return std::nullopt;
        }
        profile_path = *path;
        say("confined by sandbox-exec with the profile " + profile_path +
            " (`sandgate profile` prints it); the gate on 127.0.0.1:" + std::to_string(port) +
            " is the only way out");
        return std::vector<std::string>{kSandboxExec, "-f", profile_path};
      });
  if (!profile_path.empty()) {
    ::unlink(profile_path.c_str());
  }
  return status;
#else
  say("confinement is implemented for Linux and macOS only; --no-isolation runs the command "
      "with the proxy variables only");
  return kRunFailed;
#endif
}

}  // namespace sandgate::sandbox
