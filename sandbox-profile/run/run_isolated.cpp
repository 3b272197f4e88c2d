// `sandgate run` on Linux, the parent's side. See run_isolated.hpp.
//
// The order matters: everything that may fail is checked before CMD starts; clone() happens
// before the gate's threads start; the signals that are forwarded, and SIGCHLD, are blocked
// before it so that none is lost, and are taken synchronously with sigwaitinfo() in this thread.
#include "sandbox-profile/run/run_isolated.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "sandbox-profile/audit/git_quarantine.hpp"
#include "sandbox-profile/linux/confined_init.hpp"
#include "sandbox-profile/linux/confinement_plan.hpp"
#include "sandbox-profile/linux/linux_namespaces.hpp"
#include "sandbox-profile/linux/store_reads.hpp"
#include "sandbox-profile/linux/store_watch.hpp"
#include "sandbox-profile/linux/unix_connect_guard.hpp"
#include "sandbox-profile/process/fd_passing.hpp"
#include "sandbox-profile/process/run_support.hpp"
#include "sandbox-profile/supervisor/port_forwarder.hpp"
#include "sandbox-profile/supervisor/pty_relay.hpp"

namespace sandgate::sandbox {
namespace {

// Waits for the namespace's init to end, passing on every signal `run` receives (init and CMD
// are in sessions of their own: nothing the terminal sends reaches them directly) and the
// window size of the user's terminal.
int supervise_confined(pid_t child, const sigset_t& set, PtyRelay* pty) {
  for (;;) {
    siginfo_t info{};
    const int number = ::sigwaitinfo(&set, &info);
    if (number < 0) {
      continue;  // EINTR
    }
    if (number == SIGWINCH) {
      if (pty != nullptr) {
        pty->resize();
      }
      continue;
    }
    if (number == SIGCHLD) {
      int status = 0;
      if (::waitpid(child, &status, WNOHANG) == child) {
        return exit_status(status);
      }
      continue;
    }
    ::kill(child, number);
  }
}

// A listening unix socket of the host's, made after the confinement is built, where the command
// can see it (the home's cache folder, bound in; else the runtime folder or /tmp, which are
// private inside): the self-probe must not reach it. Returns its descriptor and path, or -1.
std::pair<int, std::string> probe_socket(const std::string& home, const std::string& runtime_dir) {
  const std::string folder = is_folder(home + "/.cache")                      ? home + "/.cache"
                             : !runtime_dir.empty() && is_folder(runtime_dir) ? runtime_dir
                                                                              : "/tmp";
  const std::string path = folder + "/sandgate-probe-" + std::to_string(::getpid()) + ".sock";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return {-1, ""};
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ::unlink(path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 1) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    return {-1, ""};
  }
  ::chmod(path.c_str(), 0666);
  return {fd, path};
}

// The capture's sockets as confined_init sends them: "capture tcp|dns-udp|dns-tcp" with a
// descriptor each, then "capture done". At most two of each (IPv4 and IPv6).
Expected<CaptureSockets, std::string> receive_capture(int channel) {
  CaptureSockets sockets;
  for (int count = 0; count <= 6; ++count) {
    auto sent = receive_message(channel);
    if (!sent || sent->closed) {
      break;
    }
    if (sent->text == "capture done" && sent->fd < 0) {
      if (sockets.tcp.empty() || sockets.dns_udp.empty() || sockets.dns_tcp.empty()) {
        break;
      }
      return sockets;
    }
    std::vector<int>* list = sent->text == "capture tcp"       ? &sockets.tcp
                             : sent->text == "capture dns-udp" ? &sockets.dns_udp
                             : sent->text == "capture dns-tcp" ? &sockets.dns_tcp
                                                               : nullptr;
    if (list == nullptr || sent->fd < 0) {
      if (sent->fd >= 0) {
        ::close(sent->fd);
      }
      break;
    }
    list->push_back(sent->fd);
  }
  sockets.close_all();
  return Unexpected{std::string("the confined process sent no capture sockets")};
}

}  // namespace

int run_isolated(const RunOptions& options, GateHandle& gate) {
  const std::string home = resolved_path(options.home);
  auto confinement = plan_confinement(options, home);
  if (!confinement) {
    say(confinement.error());
    return kRunFailed;
  }
  if (const std::string hidden =
          command_out_of_view(*confinement, options.command.front(), env_or_empty("PATH"));
      !hidden.empty()) {
    say(hidden);
    return kCommandNotFound;
  }
  const std::string helper = connect_helper();
  if (!gate.open()) {
    return kRunFailed;
  }
  std::unique_ptr<PtyRelay> pty;
  if (PtyRelay::wanted()) {
    auto prepared = PtyRelay::prepare();
    if (!prepared) {
      say("cannot relay the terminal: " + prepared.error());
      return kRunFailed;
    }
    pty = std::move(*prepared);
  }
  // The `.git` entries and git folder entries before the command runs: new ones are moved aside
  // after it.
  const GitSnapshot git_before =
      snapshot_git(confinement->scanned, confinement->git_dirs, confinement->git_targets);
  for (const auto& [folder, stopped] : git_before.incomplete) {
    say("warning: " + folder + " is too large to check whole (stopped at " + stopped +
        "): what the command leaves there beyond that point will not be judged after the run");
  }

  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    say(std::string("socketpair: ") + std::strerror(errno));
    return kRunFailed;
  }
  SignalState previous;
  sigset_t set = block_signals(previous);
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  ::sigprocmask(SIG_BLOCK, &winch, nullptr);
  const sigset_t init_set = set;  // init does not take SIGWINCH: the pty sends it to CMD
  sigaddset(&set, SIGWINCH);
  auto cloned = clone_confined();
  if (!cloned) {
    say(cloned.error());
    return kRunFailed;
  }
  const pid_t pid = *cloned;
  if (pid == 0) {
    ::close(channel[0]);
    confined_init(channel[1], *confinement, options, helper, previous, init_set,
                  pty ? pty->terminal_streams() : 0);
  }
  ::close(channel[1]);
  const int to_child = channel[0];
  // From now on a hidden credential store replaced outside ends the run (store_watch.hpp).
  StoreWatch store_watch(confinement->hidden_stores, pid);
  // The command's attempts on the hidden stores, counted from the child's watch (store_reads.hpp).
  std::unique_ptr<StoreReadWatch> store_reads;
  // Ends the child (it waits for the next message and exits when the channel closes) and
  // reaps it.
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
  const int listener_fd = message->fd;
  // The watch over the hidden credential stores, read when the command has ended.
  if (!report.reads.watched.empty()) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "reads") {
      ::close(listener_fd);
      say("the confined process sent no watch over the credential stores");
      return abandon();
    }
    store_reads = std::make_unique<StoreReadWatch>(sent->fd, report.reads.watched,
                                                   confinement->plan.view.secret_shown);
  }
  // The unix-socket supervisor, before anything inside may connect (the self-probe does).
  std::unique_ptr<UnixConnectGuard> guard;
  if (confinement->plan.supervise_unix_sockets) {
    auto sent = receive_message(to_child);
    auto diag = sent ? receive_message(to_child) : sent;
    if (!sent || sent->fd < 0 || sent->text != "guard" || !diag || diag->fd < 0 ||
        diag->text != "diag") {
      ::close(listener_fd);
      say("the confined process sent no system-call listener");
      return abandon();
    }
    guard = std::make_unique<UnixConnectGuard>(sent->fd, diag->fd, confinement->reachable_sockets);
  }
  if (pty) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "pty") {
      ::close(listener_fd);
      say("the confined process sent no terminal");
      return abandon();
    }
    pty->adopt(sent->fd);
  }
  if (options.sandbox.capture) {
    auto capture = receive_capture(to_child);
    if (!capture) {
      ::close(listener_fd);
      say(capture.error());
      return abandon();
    }
    gate.serve_capture(std::move(*capture));
  }
  const auto port = gate.start(listener_fd);
  if (!port) {
    return abandon();
  }
  // The forwarded localhost ports, as the child sent them.
  PortForwarder forwarder;
  const auto give_up = [&]() {
    forwarder.stop();
    gate.stop();
    return abandon();
  };
  for (auto forwarded : options.flags.allow_localhost_ports) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "outbound " + std::to_string(forwarded)) {
      say("the confined process sent no listener for --allow-localhost-port " +
          std::to_string(forwarded));
      return give_up();
    }
    forwarder.forward_outbound(sent->fd, forwarded);
  }
  if (!options.flags.allow_inbound_ports.empty()) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "connector") {
      say("the confined process sent no connector for --allow-inbound-port");
      return give_up();
    }
    for (auto forwarded : options.flags.allow_inbound_ports) {
      if (auto listening = forwarder.forward_inbound(forwarded, sent->fd); !listening) {
        say(listening.error());
        return give_up();
      }
    }
  }
  // The self-probe, against a host socket made now, after the confinement (as a daemon's
  // restart would make one).
  auto [probe_fd, probe_path] = probe_socket(home, confinement->runtime_dir);
  const bool asked = static_cast<bool>(send_message(to_child, "probe " + probe_path));
  auto verdict = asked ? receive_message(to_child)
                       : Expected<Message, std::string>(Unexpected{std::string("not asked")});
  if (probe_fd >= 0) {
    ::close(probe_fd);
    ::unlink(probe_path.c_str());
  }
  if (!verdict || verdict->closed) {
    say("the confined process ended during the self-probe");
    return give_up();
  }
  if (verdict->text != "probe-ok") {
    const auto newline = verdict->text.find('\n');
    std::string escapes = newline == std::string::npos ? "" : verdict->text.substr(newline + 1);
    while (!escapes.empty() && escapes.back() == '\n') {
      escapes.pop_back();
    }
    for (auto& c : escapes) {
      c = c == '\n' ? ';' : c;
    }
    say("refusing to start the command: the self-probe got out of the confinement: " + escapes);
    return give_up();
  }
  // The full account goes to the run's log; the terminal gets one line (and every warning)
  // unless --verbose asks for all of it.
  std::vector<std::string> details =
      describe_protection(options.sandbox, *confinement, report, *port, pty != nullptr);
  for (auto& line : describe_ports(options)) {
    details.push_back(std::move(line));
  }
  for (const auto& line : details) {
    gate.log_detail(line);
  }
  if (!options.verbose) {
    say(summarize_protection(*confinement, report, *port));
  }
  for (const auto& line : details) {
    if (options.verbose || line.starts_with("warning:")) {
      say(line);
    }
  }
  if (pty) {
    pty->start();
  }
  // --unknown=ask: questions go to the user's terminal (not CMD's standard input), taken over
  // from the relay for each one. Ended before the relay: the terminal's modes are restored in
  // the reverse order they were set.
  std::string not_asked;
  std::unique_ptr<TerminalAsker> asker = gate.asks() ? TerminalAsker::open(&not_asked) : nullptr;
  if (!not_asked.empty()) {
    say("questions are not asked on this terminal: " + not_asked +
        ", which reaches the screen without passing the relay that holds the command's output "
        "while a question is up (the command could draw beside a question and change what your "
        "key answers); they go to the admin endpoint (`sandgate pending`, `sandgate decide`) "
        "or get the ask default");
  }
  if (asker) {
    asker->share_with(pty.get());
    asker->start();
    gate.ask_on(asker.get());
  }
  const auto stop_asking = [&]() {
    if (asker) {
      gate.ask_on(nullptr);
      asker->stop();
    }
    if (pty) {
      pty->finish();
    }
  };
  if (!send_message(to_child, "go")) {
    stop_asking();
    return give_up();
  }
  ::close(to_child);
  const int status = supervise_confined(pid, set, pty.get());
  stop_asking();
  forwarder.stop();
  gate.stop();
  gate.audited(quarantine_new_git_entries(git_before, confinement->scanned, confinement->git_dirs));
  if (store_reads) {
    StoreAttempts attempts = store_reads->finish();
    gate.stores_attempted(std::move(attempts.attempts), attempts.complete);
  }
  if (const std::string replaced = store_watch.replaced(); !replaced.empty()) {
    say("the command was stopped: the hidden credential store " + replaced +
        " was replaced outside during the run, which would have shown the new one inside; run "
        "it again to hide it (or --allow-read it)");
    return kRunFailed;
  }
  return status;
}

}  // namespace sandgate::sandbox
