// `sandgate run`'s confinement: the entry point, and the variants whose gate listens on the
// host's loopback (macOS under sandbox-exec, and --no-isolation). See run_confined.hpp.
//
// The order matters: everything that may fail is checked before CMD starts; fork() happens
// before the gate's threads start; the signals that are forwarded, and SIGCHLD, are blocked
// before fork() so that none is lost, and are taken synchronously with sigwait() in the main
// thread.
#include "sandbox-profile/run/run_confined.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

#include "sandbox-profile/macos/profile.hpp"
#include "sandbox-profile/macos/profile_options.hpp"
#include "sandbox-profile/plan/child_environment.hpp"
#include "sandbox-profile/plan/resolved_path.hpp"
#include "sandbox-profile/process/fd_passing.hpp"
#include "sandbox-profile/process/run_support.hpp"
#include "sandbox-profile/run/start_checks.hpp"
#include "sandbox-profile/run/terminal_questions.hpp"
#include "sandbox-profile/supervisor/pty_relay.hpp"

#ifdef __linux__
#include "sandbox-profile/run/run_isolated.hpp"
#endif

namespace sandgate::sandbox {
namespace {

// `environment` (NAME=VALUE entries) with `name` set to `value`, in place of any entry it had.
void set_variable(std::vector<std::string>& environment, const std::string& name,
                  const std::string& value) {
  const std::string prefix = name + "=";
  std::erase_if(environment, [&](const std::string& entry) { return entry.starts_with(prefix); });
  environment.push_back(prefix + value);
}

// The command's terminal on the host's side: a pseudo-terminal of its own whenever one of run's
// streams is a terminal, opened before the gate's threads start (the slave is closed on exec
// until the child attach()es it). Empty when no stream is a terminal.
struct HostTerminal {
  std::unique_ptr<PtyRelay> pty;
  PtyRelay::CommandSide side;

  void close_slave() {
    if (side.slave >= 0) {
      ::close(side.slave);
      side.slave = -1;
    }
  }
};

Expected<HostTerminal, std::string> open_host_terminal() {
  HostTerminal terminal;
  if (!PtyRelay::wanted()) {
    return terminal;
  }
  auto prepared = PtyRelay::prepare();
  auto opened =
      prepared
          ? (*prepared)->open_here()
          : Expected<PtyRelay::CommandSide, std::string>(Unexpected{std::string(prepared.error())});
  if (!opened) {
    return Unexpected{opened.error()};
  }
  terminal.pty = std::move(*prepared);
  terminal.side = std::move(*opened);
  return terminal;
}

// CMD's environment: the proxy variables for the gate on `port`, and `launch`'s.
std::vector<std::string> host_environment(const RunOptions& options, std::uint16_t port,
                                          const HostLaunch& launch) {
  std::vector<std::string> environment =
      child_environment(current_environment(), port, connect_helper(), options.gate.ca_bundle,
                        options.gate.java_trust_store, options.gate.masked_variables);
  for (const auto& [name, value] : launch.environment) {
    set_variable(environment, name, value);
  }
  return environment;
}

// Forks CMD: the child gets back the signal state `run` was started with, a session of its own
// with no controlling terminal but the relayed one, if any (never the user's, which TIOCSTI
// would type into), then execs `image`. The child's pid, or -1 (errno set).
pid_t fork_command(ExecImage& image, const HostTerminal& terminal, const SignalState& previous) {
  const unsigned streams = terminal.pty ? terminal.pty->terminal_streams() : 0;
  const pid_t pid = ::fork();
  if (pid != 0) {
    return pid;
  }
  restore_signals(previous);
  if (terminal.side.slave >= 0 ? !PtyRelay::attach(terminal.side.slave, streams) : ::setsid() < 0) {
    static constexpr char kFailed[] = "sandgate run: cannot give the command its terminal\n";
    ssize_t ignored = ::write(STDERR_FILENO, kFailed, sizeof kFailed - 1);
    (void)ignored;
    ::_exit(kRunFailed);
  }
  ::_exit(image.exec());
}

// While CMD runs: its terminal relayed, and when it is confined (`ask_on_terminal`) the gate's
// questions on the user's terminal; unconfined (--no-isolation) it could open the user's
// terminal by its name and draw beside a question, so they go to the admin endpoint there.
// Returns CMD's exit status.
int supervise_on_host(pid_t pid, PtyRelay* pty, GateHandle& gate, bool ask_on_terminal,
                      const sigset_t& waited) {
  if (pty != nullptr) {
    pty->start();
  }
  std::optional<TerminalQuestions> questions;
  if (ask_on_terminal) {
    questions.emplace(gate, pty);
  }
  const int status = supervise(pid, waited, [pty] {
    if (pty != nullptr) {
      pty->resize();
    }
  });
  questions.reset();
  if (pty != nullptr) {
    pty->finish();
  }
  return status;
}

}  // namespace

int run_on_host(const RunOptions& options, GateHandle& gate, const HostWrapper& wrap) {
  if (!gate.open()) {
    return kRunFailed;
  }
  auto listener = open_loopback_listener();
  if (!listener) {
    say("cannot listen on 127.0.0.1: " + listener.error());
    return kRunFailed;
  }
  auto terminal = open_host_terminal();
  if (!terminal) {
    say("cannot relay the terminal: " + terminal.error());
    ::close(*listener);
    return kRunFailed;
  }
  const RunSignals signals = take_run_signals();
  const auto port = gate.start(*listener);
  if (!port) {
    terminal->close_slave();
    return kRunFailed;
  }
  HostLaunch launch;
  if (wrap) {
    auto made = wrap(*port, terminal->side.name);
    if (!made) {
      terminal->close_slave();
      gate.stop();
      return kRunFailed;
    }
    launch = std::move(*made);
  }
  std::vector<std::string> command = launch.prefix;
  command.insert(command.end(), options.command.begin(), options.command.end());
  ExecImage image(std::move(command), host_environment(options, *port, launch));
  const pid_t pid = fork_command(image, *terminal, signals.previous);
  if (pid < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    terminal->close_slave();
    gate.stop();
    return kRunFailed;
  }
  terminal->close_slave();
  const int status =
      supervise_on_host(pid, terminal->pty.get(), gate, static_cast<bool>(wrap), signals.waited);
  gate.stop();
  return status;
}

std::optional<HostLaunch> seatbelt_launch(const RunOptions& options, std::uint16_t port,
                                          const std::string& relayed_terminal,
                                          const std::string& sandbox_exec) {
  auto folder = PrivateFolder::make(env_or_empty("TMPDIR"));
  if (!folder) {
    say(folder.error());
    return std::nullopt;
  }
  ProfileOptions profile = profile_options(options.sandbox, options.gate, options.flags, port,
                                           options.home, env_or_empty("SSH_AUTH_SOCK"));
  add_run_places(profile, RunPlaces{relayed_terminal, folder->path()});
  // The profile goes to sandbox-exec inline (-p), never through a file a leftover process could
  // rewrite before sandbox-exec reads it.
  auto argv = sandbox_exec_argv(profile);
  if (!argv) {
    say(argv.error());
    return std::nullopt;
  }
  argv->front() = sandbox_exec;
  say("confined by sandbox-exec (`sandgate profile` prints the profile); the gate on "
      "127.0.0.1:" +
      std::to_string(port) + " is the only way out; " +
      (relayed_terminal.empty() ? std::string("no terminal")
                                : "a terminal of its own (relayed), not yours") +
      "; its $TMPDIR " + folder->path() + " (removed at the end)");
  HostLaunch launch;
  launch.prefix = std::move(*argv);
  launch.environment = {{"TMPDIR", folder->path()}};
  launch.private_folder.emplace(std::move(*folder));
  return launch;
}

int run_confined(const RunOptions& options, GateHandle& gate) {
  if (options.command.empty()) {
    say("no command given: sandgate run [SETTINGS] -- CMD [ARGS...]");
    return kRunFailed;
  }
  if (options.no_isolation) {
    say("WARNING: --no-isolation: the command is NOT confined. Only the proxy variables point it "
        "at the gate; anything that ignores them (curl --noproxy, raw sockets, most non-HTTP "
        "clients) reaches the network directly, and it may read and write whatever you may. (It "
        "runs on a terminal of its own, relayed, as confined commands do.)");
    return run_on_host(options, gate, {});
  }
  if (auto refused = refuse_socket_streams(); !refused) {
    say(refused.error());
    return kRunFailed;
  }
  std::error_code cwd_error;
  if (auto made = make_missing_write_folders(options.flags.allow_writes, options.home,
                                             std::filesystem::current_path(cwd_error).string());
      !made) {
    say(made.error());
    return kRunFailed;
  } else if (!made->empty()) {
    std::string list;
    for (const auto& folder : *made) {
      list += (list.empty() ? "" : ", ") + folder;
    }
    say("made for --allow-write (it did not exist): " + list);
  }
  {
    std::error_code ec;
    std::vector<std::string> allow_writes;
    for (const auto& path : options.flags.allow_writes) {
      allow_writes.push_back(resolved_path(path));
    }
    if (auto refused =
            refuse_home_as_working_folder(resolved_path(std::filesystem::current_path(ec).string()),
                                          resolved_path(options.home), allow_writes);
        !refused) {
      say(refused.error());
      return kRunFailed;
    }
  }
#ifdef __linux__
  return run_isolated(options, gate);
#elif defined(__APPLE__)
  // Never run unconfined by accident: check before anything starts.
  if (::access(kSandboxExecPath, X_OK) != 0) {
    say(std::string("sandbox-exec is not available (") + kSandboxExecPath +
        " is missing): not starting the command unconfined; --no-isolation runs it with the "
        "proxy variables only");
    return kRunFailed;
  }
  return run_on_host(options, gate, [&](std::uint16_t port, const std::string& terminal) {
    return seatbelt_launch(options, port, terminal, kSandboxExecPath);
  });
#else
  say("confinement is implemented for Linux and macOS only; --no-isolation runs the command "
      "with the proxy variables only");
  return kRunFailed;
#endif
}

}  // namespace sandgate::sandbox
