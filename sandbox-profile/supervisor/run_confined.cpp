// `sandgate run`'s confinement: the entry point, and the variants whose gate listens on the
// host's loopback (macOS under sandbox-exec, and --no-isolation). See run_confined.hpp.
//
// The order matters: everything that may fail is checked before CMD starts; fork() happens
// before the gate's threads start; the signals that are forwarded, and SIGCHLD, are blocked
// before fork() so that none is lost, and are taken synchronously with sigwait() in the main
// thread.
#include "sandbox-profile/supervisor/run_confined.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

#include "sandbox-profile/macos/profile.hpp"
#include "sandbox-profile/plan/child_environment.hpp"
#include "sandbox-profile/plan/sandbox_flags.hpp"
#include "sandbox-profile/supervisor/fd_passing.hpp"
#include "sandbox-profile/supervisor/run_support.hpp"

#ifdef __linux__
#include "sandbox-profile/linux/run_isolated.hpp"
#endif

namespace sandgate::sandbox {
namespace {

// A gate on the host's loopback, and CMD run with `wrap(port)` in front of it (sandbox-exec on
// macOS; nothing with --no-isolation, when `wrap` is empty).
using Wrapper = std::function<std::optional<std::vector<std::string>>(std::uint16_t port)>;

int run_on_host(const RunOptions& options, GateHandle& gate, const Wrapper& wrap) {
  if (!gate.open()) {
    return kRunFailed;
  }
  auto listener = open_loopback_listener();
  if (!listener) {
    say("cannot listen on 127.0.0.1: " + listener.error());
    return kRunFailed;
  }
  SignalState previous;
  const sigset_t set = block_signals(previous);
  const auto port = gate.start(*listener);
  if (!port) {
    return kRunFailed;
  }
  std::vector<std::string> command;
  if (wrap) {
    auto prefix = wrap(*port);
    if (!prefix) {
      gate.stop();
      return kRunFailed;
    }
    command = std::move(*prefix);
  }
  command.insert(command.end(), options.command.begin(), options.command.end());
  ExecImage image(
      std::move(command),
      child_environment(current_environment(), *port, connect_helper(), options.gate.ca_bundle,
                        options.gate.java_trust_store, options.gate.masked_variables));

  const pid_t pid = ::fork();
  if (pid < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    gate.stop();
    return kRunFailed;
  }
  if (pid == 0) {
    restore_signals(previous);
    ::_exit(image.exec());
  }
  const int status = supervise(pid, set);
  gate.stop();
  return status;
}

#ifdef __APPLE__
constexpr const char* kSandboxExec = kSandboxExecPath;
#endif

}  // namespace

int run_confined(const RunOptions& options, GateHandle& gate) {
  if (options.command.empty()) {
    say("no command given: sandgate run [SETTINGS] -- CMD [ARGS...]");
    return kRunFailed;
  }
  if (options.no_isolation) {
    say("WARNING: --no-isolation: the command is NOT confined. Only the proxy variables point it "
        "at the gate; anything that ignores them (curl --noproxy, raw sockets, most non-HTTP "
        "clients) reaches the network directly.");
    return run_on_host(options, gate, {});
  }
  if (auto refused = refuse_socket_streams(); !refused) {
    say(refused.error());
    return kRunFailed;
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
  if (::access(kSandboxExec, X_OK) != 0) {
    say(std::string("sandbox-exec is not available (") + kSandboxExec +
        " is missing): not starting the command unconfined; --no-isolation runs it with the "
        "proxy variables only");
    return kRunFailed;
  }
  // The profile goes to sandbox-exec inline (-p), never through a file a leftover process could
  // rewrite before sandbox-exec reads it.
  return run_on_host(
      options, gate, [&](std::uint16_t port) -> std::optional<std::vector<std::string>> {
        auto argv =
            sandbox_exec_argv(profile_options(options.sandbox, options.gate, options.flags, port,
                                              options.home, env_or_empty("SSH_AUTH_SOCK")));
        if (!argv) {
          say(argv.error());
          return std::nullopt;
        }
        say("confined by sandbox-exec (`sandgate profile` prints the profile); the gate on "
            "127.0.0.1:" +
            std::to_string(port) + " is the only way out");
        return *argv;
      });
#else
  say("confinement is implemented for Linux and macOS only; --no-isolation runs the command "
      "with the proxy variables only");
  return kRunFailed;
#endif
}

}  // namespace sandgate::sandbox
