// The namespace's init. See confined_init.hpp.
#include "sandbox-profile/linux/confined_init.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "sandbox-profile/linux/capture_network.hpp"
#include "sandbox-profile/linux/inbound_connector.hpp"
#include "sandbox-profile/linux/landlock.hpp"
#include "sandbox-profile/linux/linux_namespaces.hpp"
#include "sandbox-profile/linux/self_probe.hpp"
#include "sandbox-profile/linux/syscall_filter.hpp"
#include "sandbox-profile/plan/child_environment.hpp"
#include "sandbox-profile/process/fd_passing.hpp"
#include "sandbox-profile/process/pseudo_terminal.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {
namespace {

// The self-probe, which makes calls the supervisor reads (connect, sendto), is made dumpable
// again for `run` to read it (process_vm_readv); it runs and ends before the command exists, so
// nothing inside can reach it. The inbound connector stays non-dumpable: it lives alongside the
// command and holds the channel to the forwarder (a dumpable one could be traced and its channel
// taken with pidfd_getfd); `run`, owner of the user namespace, reads it all the same.
void readable_by_supervisor() { ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); }

// Forks the connector for inbound ports (see inbound_connector.hpp) from the confined child, inside
// its namespaces, so that it belongs to no one: a double fork leaves it to the namespace's init,
// and it lives exactly as long as the channel to the gate. Returns the gate's end, or -1.
int start_connector() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return -1;
  }
  const pid_t middle = ::fork();
  if (middle == 0) {
    if (::fork() == 0) {
      // Keep only the channel (as descriptor 3) and the standard streams.
      // (It inherits init's boundary: Landlock, no privileges, not dumpable, the filter; it is
      // left not dumpable, see readable_by_supervisor.)
      ::dup2(pair[1], 3);
      ::close_range(4, ~0U, 0);
      ::fcntl(3, F_SETFD, FD_CLOEXEC);
      run_connector(3);
    }
    ::_exit(0);
  }
  ::close(pair[1]);
  ::waitpid(middle, nullptr, 0);
  return pair[0];
}

// Runs the self-probe in a process confined exactly as the command will be; returns what
// escaped, one line each (empty: the fence held).
std::string run_probe(ProbeTargets targets) {
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0) {
    return "the self-probe could not start (pipe)";
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe[0]);
    readable_by_supervisor();
    std::string text;
    for (const auto& escape : probe_fence(targets)) {
      text += escape + "\n";
    }
    ssize_t ignored = ::write(pipe[1], text.data(), text.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(pipe[1]);
  std::string text;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::read(pipe[0], buffer, sizeof buffer)) > 0 || (got < 0 && errno == EINTR)) {
    text.append(buffer, static_cast<std::size_t>(got > 0 ? got : 0));
  }
  ::close(pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "the self-probe did not finish";
  }
  return text;
}

// The namespace's init after "go": CMD runs as its child; signals from `run` are passed on, every
// orphan is reaped, and when CMD ends init exits with CMD's status (the kernel then ends every
// process left in the namespace).
[[noreturn]] void init_supervise(pid_t command, const sigset_t& set) {
  // SIGCHLD for stops too (no SA_NOCLDSTOP): a tracee's stop must wake init (see below).
  struct sigaction action {};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGCHLD, &action, nullptr);
  for (;;) {
    siginfo_t info{};
    const int number = ::sigwaitinfo(&set, &info);
    if (number < 0) {
      continue;  // EINTR
    }
    if (number != SIGCHLD) {
      ::kill(command, number);
      continue;
    }
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
      if (WIFSTOPPED(status)) {
        // A process that made init its tracer (PTRACE_TRACEME) stops at its next signal and
        // would wait for init for ever: init lets it go, with the signal it stopped for.
        ::ptrace(PTRACE_DETACH, done, nullptr,
                 reinterpret_cast<void*>(static_cast<long>(WSTOPSIG(status))));
        continue;
      }
      if (done == command) {
        ::_exit(exit_status(status));
      }
    }
  }
}

// Everything the invoker left open (a socket of the host's network namespace, the gate's log
// file, a terminal of the user's) is closed at once: init shares the command's namespaces, so a
// descriptor init holds is one the command could take from it. Only the channel to `run` and the
// standard streams stay (the command inherits the streams that are not relayed).
void close_inherited_descriptors(int channel) {
  if (channel > 3) {
    ::close_range(3, static_cast<unsigned>(channel) - 1, 0);
  }
  ::close_range(static_cast<unsigned>(channel) + 1, ~0U, 0);
}

// The boundary every process inside shares, set on init before the connector, the self-probe and
// the command exist (each inherits it): no privileges (no_new_privs, no capabilities), not
// dumpable (so neither ptrace, /proc/1/mem, /proc/1/fd nor pidfd_getfd reach init: the command
// has no CAP_SYS_PTRACE over it), and the system-call allow-list. Returns the filter's listener
// for `run`'s unix-socket supervisor (-1 without one).
Expected<int, std::string> seal_init(bool supervise_unix_sockets) {
  if (auto dropped = drop_privileges(); !dropped) {
    return Unexpected{dropped.error()};
  }
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return Unexpected{std::string("prctl(PR_SET_DUMPABLE): ") + std::strerror(errno)};
  }
  auto filtered = install_syscall_filter(supervise_unix_sockets);
  if (!filtered) {
    return Unexpected{"seccomp: " + filtered.error()};
  }
  return *filtered;
}

// The init's failure before CMD exists: `error` goes to `run`, which says it; the init exits.
[[noreturn]] void fail(int channel, const std::string& error) {
  send_message(channel, "error " + error);
  ::_exit(kRunFailed);
}

// What the init makes while it confines itself, to hand over to `run` or keep for CMD.
struct Made {
  int listener = -1;  // the gate's, on the namespace's loopback
  std::uint16_t port = 0;
  CaptureSockets capture;                               // empty without capture
  std::vector<std::pair<std::uint16_t, int>> outbound;  // --allow-localhost-port N: listener
  int tty_master = -1;   // the command's terminal (-1: none): its master goes to `run`
  int tty_slave = -1;    // ... and its slave stays for CMD
  int null_device = -1;  // init's standard streams once the command has its own
  int diag = -1;         // the unix-socket supervisor's sock_diag socket (-1: none)
  int guard = -1;        // the system-call filter's listener (-1: none)
  int connector = -1;    // --allow-inbound-port's connector (-1: none)
};

// The namespace's network: the gate's listener, the capture (routes, the capture and DNS
// sockets, the nftables rules and resolv.conf, while this process still holds CAP_NET_ADMIN in
// the namespace, and before Landlock forbids mounts), and --allow-localhost-port's listeners on
// this namespace's 127.0.0.1:N for the gate to relay to the host's.
void make_network(int channel, Made& made, const RunOptions& options) {
  if (options.sandbox.capture) {
    auto set_up = set_up_capture();
    if (!set_up) {
      fail(channel, set_up.error());
    }
    made.capture = std::move(*set_up);
  }
  sockaddr_in address{};
  socklen_t length = sizeof address;
  ::getsockname(made.listener, reinterpret_cast<sockaddr*>(&address), &length);
  made.port = ntohs(address.sin_port);
  for (auto forwarded : options.flags.allow_localhost_ports) {
    auto opened = open_loopback_listener(forwarded);
    if (!opened) {
      fail(channel, "--allow-localhost-port " + std::to_string(forwarded) + ": " + opened.error());
    }
    made.outbound.emplace_back(forwarded, *opened);
  }
}

// Landlock, a fresh keyring, the supervisor's view of this namespace's unix sockets (a sock_diag
// socket made here lists the sockets bound in this network namespace, the only ones the command
// may reach unlisted), and the boundary every process inside shares (seal_init()).
void seal(int channel, Made& made, const NamespacePlan& plan, NamespaceReport& report) {
  if (auto landlock = apply_landlock(plan, report); !landlock) {
    fail(channel, landlock.error());
  }
  if (auto keyring = join_fresh_keyring(); !keyring) {
    fail(channel, keyring.error());
  }
  // Opened while /dev is still ours to open.
  made.null_device = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  made.diag = plan.supervise_unix_sockets
                  ? ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
                  : -1;
  if (plan.supervise_unix_sockets && made.diag < 0) {
    fail(channel,
         "the unix-socket supervisor's sock_diag socket: " + std::string(std::strerror(errno)));
  }
  auto sealed = seal_init(plan.supervise_unix_sockets);
  if (!sealed) {
    fail(channel, sealed.error());
  }
  made.guard = *sealed;
}

// Enters the namespaces and confines this process as planned, making on the way what `run` and
// CMD are handed. Reports what it found in `report`.
Made confine(int channel, const Confinement& confinement, const RunOptions& options,
             unsigned tty_streams, NamespaceReport& report) {
  const NamespacePlan& plan = confinement.plan;
  Made made;
  auto listener = enter_namespaces(plan, report);
  if (!listener) {
    fail(channel, listener.error());
  }
  made.listener = *listener;
  // The working folder, looked up again through the view's mounts (the folder inherited from
  // the parent is the one below them).
  if (!confinement.working_folder.empty()) {
    if (::chdir(confinement.working_folder.c_str()) != 0) {
      ::chdir("/");
    }
  }
  make_network(channel, made, options);
  // The command's terminal, from this namespace's own devpts instance.
  if (tty_streams != 0) {
    auto pair = open_pseudo_terminal();
    if (!pair) {
      fail(channel, "the command's terminal: " + pair.error());
    }
    std::tie(made.tty_master, made.tty_slave) = *pair;
  }
  seal(channel, made, plan, report);
  made.connector = options.flags.allow_inbound_ports.empty() ? -1 : start_connector();
  if (!options.flags.allow_inbound_ports.empty() && made.connector < 0) {
    fail(channel, "cannot start the connector for --allow-inbound-port");
  }
  return made;
}

// Hands `run` what it needs, in the order confined_child.hpp reads it, closing each here once
// sent. False when `run` is gone.
bool hand_over(int channel, Made& made, NamespaceReport& report, bool capture) {
  bool sent =
      static_cast<bool>(send_message(channel, "ready\n" + report.serialize(), made.listener));
  // The watch over the hidden credential stores, for `run` to read when the command has ended.
  if (report.reads.watch >= 0) {
    if (!report.reads.watched.empty()) {
      sent = sent && send_message(channel, "reads", report.reads.watch);
    }
    ::close(report.reads.watch);
  }
  if (made.guard >= 0) {
    sent = sent && send_message(channel, "guard", made.guard) &&
           send_message(channel, "diag", made.diag);
    ::close(made.guard);
    ::close(made.diag);
  }
  if (made.tty_master >= 0) {
    sent = sent && send_message(channel, "pty", made.tty_master);
    ::close(made.tty_master);
  }
  if (capture) {
    // The capture's sockets, one a message, then "capture done".
    for (const auto& [kind, list] :
         {std::pair{"tcp", &made.capture.tcp}, std::pair{"dns-udp", &made.capture.dns_udp},
          std::pair{"dns-tcp", &made.capture.dns_tcp}}) {
      for (int fd : *list) {
        sent = sent && send_message(channel, std::string("capture ") + kind, fd);
      }
    }
    sent = sent && send_message(channel, "capture done");
    made.capture.close_all();
  }
  for (const auto& [forwarded, fd] : made.outbound) {
    sent = sent && send_message(channel, "outbound " + std::to_string(forwarded), fd);
    ::close(fd);
  }
  if (made.connector >= 0) {
    sent = sent && send_message(channel, "connector", made.connector);
    ::close(made.connector);
  }
  return sent;
}

// What the command would see of a hidden store whose cover is gone: "" when every cover is in
// place. A program outside that renames a file over a store (or removes it) takes the cover away
// in every namespace; `run`'s watch over the stores sees that only once it has started, and the
// covers may be made before it does.
std::string uncovered_store(const std::vector<StoreCover>& covers) {
  const std::string path = first_uncovered(covers);
  return path.empty() ? std::string()
                      : "the hidden credential store " + path +
                            " was replaced or removed outside after it was covered, and shows "
                            "through; run it again to hide it (or --allow-read it)";
}

// The self-probe, with the host socket `run` made after all of the above; its verdict goes to
// `run`, with a hidden store that shows through (its cover checked now that `run` watches the
// stores). Exits when `run` is gone (the gate did not start: `run` has said why).
void answer_probe(int channel, const Confinement& confinement, const RunOptions& options,
                  const std::vector<StoreCover>& covers) {
  auto probe = receive_message(channel);
  if (!probe || !probe->text.starts_with("probe")) {
    ::_exit(kRunFailed);
  }
  ProbeTargets targets;
  targets.host_socket = probe->text.size() > 6 ? probe->text.substr(6) : std::string();
  targets.no_write = confinement.probe_no_write;
  targets.host_pty = confinement.host_pty;
  targets.host_pty_device = confinement.host_pty_device;
  targets.captured = options.sandbox.capture;
  targets.init_pid = static_cast<int>(::getpid());  // 1: this process, init of the namespace
  targets.netlink = true;                           // nothing inside holds a capability
  targets.no_socket_folder = confinement.probe_no_socket;
  std::string escaped = run_probe(targets);
  if (const std::string uncovered = uncovered_store(covers); !uncovered.empty()) {
    escaped += uncovered + "\n";
  }
  if (!send_message(channel, escaped.empty() ? "probe-ok" : "probe-failed\n" + escaped)) {
    ::_exit(kRunFailed);
  }
}

// CMD, forked as init's child: a session of its own, with no controlling terminal but the
// relayed one, if any, on the streams that were terminals (`tty_streams`), and nothing
// inherited but the standard streams.
[[noreturn]] void exec_command(ExecImage& image, int tty_slave, unsigned tty_streams,
                               const SignalState& previous, const std::vector<StoreCover>& covers) {
  ::setsid();
  if (tty_slave >= 0) {
    ::ioctl(tty_slave, TIOCSCTTY, 0);
    for (int fd = 0; fd <= 2; ++fd) {
      if ((tty_streams & (1U << fd)) != 0) {
        ::dup2(tty_slave, fd);
      }
    }
  }
  // A descriptor the invoker left open (a socket of the host's network namespace, say) would be
  // a way around the fence.
  ::close_range(3, ~0U, 0);
  // The last look at the stores' covers, at the exec: the command never starts with one showing
  // through (from here on `run`'s watch stops it if one is replaced).
  if (const std::string uncovered = uncovered_store(covers); !uncovered.empty()) {
    say("refusing to start the command: " + uncovered);
    ::_exit(kRunFailed);
  }
  // (The system-call filter, the per-user rlimits (a process limit among them) and the rest of
  // the boundary are init's, inherited.)
  restore_signals(previous);
  ::_exit(image.exec());
}

}  // namespace

[[noreturn]] void confined_init(int channel, const Confinement& confinement,
                                const RunOptions& options, const std::string& helper,
                                const SignalState& previous, const sigset_t& set,
                                unsigned tty_streams) {
  // Out of the user's terminal's session: a signal it sends reaches `run`, which passes it on.
  ::setsid();
  // If sandgate dies, so does everything here: it would have no way out anyway.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  close_inherited_descriptors(channel);
  // The command sees this process as its pid 1: not sandgate's command line (tokens, --secret).
  blank_process_arguments();
  NamespaceReport report;
  Made made = confine(channel, confinement, options, tty_streams, report);
  if (!hand_over(channel, made, report, options.sandbox.capture)) {
    ::_exit(kRunFailed);
  }
  ::close(made.listener);
  answer_probe(channel, confinement, options, report.covers);
  auto go = receive_message(channel);
  if (!go || go->text != "go") {
    ::_exit(kRunFailed);
  }
  ::close(channel);
  ExecImage image(
      options.command,
      child_environment(current_environment(), made.port, helper, options.gate.ca_bundle,
                        options.gate.java_trust_store, options.gate.masked_variables));
  const pid_t command = ::fork();
  if (command < 0) {
    ::_exit(kRunFailed);
  }
  if (command == 0) {
    exec_command(image, made.tty_slave, tty_streams, previous, report.covers);
  }
  if (made.tty_slave >= 0) {
    ::close(made.tty_slave);
  }
  // init keeps none of the user's streams (a terminal, a pipe): the command has what it needs.
  if (made.null_device >= 0) {
    for (int fd = 0; fd <= 2; ++fd) {
      ::dup2(made.null_device, fd);
    }
    ::close(made.null_device);
  }
  init_supervise(command, set);
}

}  // namespace sandgate::sandbox
