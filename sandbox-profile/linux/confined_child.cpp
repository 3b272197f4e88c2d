// The parent's side of the namespace's init. See confined_child.hpp.
#include "sandbox-profile/linux/confined_child.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox-profile/linux/confined_init.hpp"
#include "sandbox-profile/process/fd_passing.hpp"

namespace sandgate::sandbox {
namespace {

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

// The init's first message: "ready" and its report, with the gate's listener. The error: why
// there is none (the init's own error, said after "error ").
Expected<Handover, std::string> receive_ready(int channel) {
  auto message = receive_message(channel);
  if (!message || message->closed) {
    return Unexpected{std::string("the confined process ended before it was ready")};
  }
  if (message->text.starts_with("error ")) {
    return Unexpected{message->text.substr(6)};
  }
  if (message->fd < 0) {
    return Unexpected{std::string("the confined process sent no listening socket")};
  }
  Handover handover;
  handover.report = NamespaceReport::parse(message->text);
  handover.listener = message->fd;
  return handover;
}

// The watches and the terminal that follow "ready", as far as the run asks for them, into
// `handover`. The error is for the user.
Expected<bool, std::string> receive_watches(int channel, Handover& handover,
                                            const Confinement& confinement, bool pty) {
  // The watch over the hidden credential stores, read when the command has ended.
  if (!handover.report.reads.watched.empty()) {
    auto sent = receive_message(channel);
    if (!sent || sent->fd < 0 || sent->text != "reads") {
      return Unexpected{
          std::string("the confined process sent no watch over the credential stores")};
    }
    handover.store_reads = std::make_unique<StoreReadWatch>(sent->fd, handover.report.reads.watched,
                                                            confinement.plan.view.secret_shown);
  }
  // The unix-socket supervisor, before anything inside may connect (the self-probe does).
  if (confinement.plan.supervise_unix_sockets) {
    auto sent = receive_message(channel);
    auto diag = sent ? receive_message(channel) : sent;
    if (!sent || sent->fd < 0 || sent->text != "guard" || !diag || diag->fd < 0 ||
        diag->text != "diag") {
      return Unexpected{std::string("the confined process sent no system-call listener")};
    }
    handover.guard =
        std::make_unique<UnixConnectGuard>(sent->fd, diag->fd, confinement.reachable_sockets);
  }
  if (pty) {
    auto sent = receive_message(channel);
    if (!sent || sent->fd < 0 || sent->text != "pty") {
      return Unexpected{std::string("the confined process sent no terminal")};
    }
    handover.pty_master = sent->fd;
  }
  return true;
}

// The self-probe's verdict as the init sends it ("probe-failed" and a line per escape) in one
// line for the user.
std::string escapes_of(const std::string& verdict) {
  const auto newline = verdict.find('\n');
  std::string escapes = newline == std::string::npos ? "" : verdict.substr(newline + 1);
  while (!escapes.empty() && escapes.back() == '\n') {
    escapes.pop_back();
  }
  for (auto& c : escapes) {
    c = c == '\n' ? ';' : c;
  }
  return escapes;
}

}  // namespace

Expected<std::unique_ptr<ConfinedChild>, std::string> ConfinedChild::start(
    const Confinement& confinement, const RunOptions& options, const std::string& helper,
    const RunSignals& signals, unsigned tty_streams) {
  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    return Unexpected{std::string("socketpair: ") + std::strerror(errno)};
  }
  auto cloned = clone_confined();
  if (!cloned) {
    ::close(channel[0]);
    ::close(channel[1]);
    return Unexpected{cloned.error()};
  }
  if (*cloned == 0) {
    ::close(channel[0]);
    confined_init(channel[1], confinement, options, helper, signals.previous, signals.forwarded,
                  tty_streams);
  }
  ::close(channel[1]);
  return std::unique_ptr<ConfinedChild>(new ConfinedChild(*cloned, channel[0]));
}

ConfinedChild::~ConfinedChild() { abandon(); }

Expected<Handover, std::string> ConfinedChild::receive_handover(const Confinement& confinement,
                                                                bool pty, bool capture) {
  auto handover = receive_ready(channel_);
  if (!handover) {
    return handover;
  }
  // From here on an error closes the listener (the rest closes itself with `handover`).
  const auto fail = [&handover](std::string error) -> Expected<Handover, std::string> {
    ::close(handover->listener);
    return Unexpected{std::move(error)};
  };
  if (auto watches = receive_watches(channel_, *handover, confinement, pty); !watches) {
    return fail(watches.error());
  }
  if (capture) {
    auto sockets = receive_capture(channel_);
    if (!sockets) {
      if (handover->pty_master >= 0) {
        ::close(handover->pty_master);
      }
      return fail(sockets.error());
    }
    handover->capture = std::move(*sockets);
  }
  return handover;
}

Expected<std::vector<std::pair<std::uint16_t, int>>, std::string> ConfinedChild::receive_outbound(
    const std::vector<std::uint16_t>& ports) {
  std::vector<std::pair<std::uint16_t, int>> listeners;
  for (auto forwarded : ports) {
    auto sent = receive_message(channel_);
    if (!sent || sent->fd < 0 || sent->text != "outbound " + std::to_string(forwarded)) {
      for (const auto& [port, fd] : listeners) {
        ::close(fd);
      }
      return Unexpected{"the confined process sent no listener for --allow-localhost-port " +
                        std::to_string(forwarded)};
    }
    listeners.emplace_back(forwarded, sent->fd);
  }
  return listeners;
}

Expected<int, std::string> ConfinedChild::receive_connector() {
  auto sent = receive_message(channel_);
  if (!sent || sent->fd < 0 || sent->text != "connector") {
    return Unexpected{
        std::string("the confined process sent no connector for --allow-inbound-port")};
  }
  return sent->fd;
}

Expected<bool, std::string> ConfinedChild::pass_self_probe(const std::string& home,
                                                           const std::string& runtime_dir) {
  auto [probe_fd, probe_path] = probe_socket(home, runtime_dir);
  const bool asked = static_cast<bool>(send_message(channel_, "probe " + probe_path));
  auto verdict = asked ? receive_message(channel_)
                       : Expected<Message, std::string>(Unexpected{std::string("not asked")});
  if (probe_fd >= 0) {
    ::close(probe_fd);
    ::unlink(probe_path.c_str());
  }
  if (!verdict || verdict->closed) {
    return Unexpected{std::string("the confined process ended during the self-probe")};
  }
  if (verdict->text != "probe-ok") {
    return Unexpected{"refusing to start the command: the self-probe got out of the confinement: " +
                      escapes_of(verdict->text)};
  }
  return true;
}

bool ConfinedChild::go() {
  if (!send_message(channel_, "go")) {
    return false;
  }
  ::close(channel_);
  channel_ = -1;
  released_ = true;
  return true;
}

int ConfinedChild::abandon() {
  if (channel_ >= 0) {
    ::close(channel_);
    channel_ = -1;
  }
  if (!released_) {
    ::waitpid(pid_, nullptr, 0);
    released_ = true;
  }
  return kRunFailed;
}

}  // namespace sandgate::sandbox
