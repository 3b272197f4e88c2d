// Port forwarding through the namespace. See port_forwarder.hpp.
#include "sandbox-profile/supervisor/port_forwarder.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "sandbox-profile/linux/inbound_connector.hpp"
#include "sandbox-profile/process/fd_passing.hpp"

namespace sandgate::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// How long an accept is paused when the process is out of descriptors (the listener stays
// readable, and retrying at once would spin).
constexpr std::chrono::milliseconds kAcceptPause{100};

void set_non_blocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Closes a socket so that its peer sees a reset, not a clean end of stream.
void close_with_reset(int fd) {
  const linger abort{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd);
}

bool would_block(ssize_t result) {
  return result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

// What the connector hands over must be what was asked for: a TCP socket connected to port
// `port` on loopback (127.0.0.1 for the connector) in the namespace. Anything else (a unix socket,
// another port) is refused: the connector is ours, but the check costs three calls and keeps a
// mistake there from reaching a host client.
bool connected_inside(int fd, std::uint16_t port) {
  int type = 0;
  int domain = 0;
  socklen_t length = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) {
    return false;
  }
  length = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_INET) {
    return false;
  }
  sockaddr_in peer{};
  length = sizeof peer;
  return ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0 &&
         peer.sin_family == AF_INET && (ntohl(peer.sin_addr.s_addr) >> 24) == 127 &&
         ntohs(peer.sin_port) == port;
}

}  // namespace

// One relayed connection: the accepted client and the far side, and what each has sent that
// the other has not taken yet.
struct PortForwarder::Connection {
  struct Direction {  // bytes read from fd[i], to be written to fd[1 - i]
    std::unique_ptr<char[]> buffer = std::make_unique<char[]>(kDirectionBuffer);
    std::size_t start = 0;
    std::size_t end = 0;
    bool eof = false;   // fd[i] ended its stream
    bool done = false;  // ... and the end was passed on (fd[1 - i] shut down for writing)
  };
  int fd[2];
  Direction from[2];
  bool hung_up[2] = {false, false};  // fd[i] reported POLLHUP: shut both ways, or closed
  bool connecting = false;           // the far side's connect is under way, until `deadline`
  Clock::time_point deadline{};
  bool broken = false;  // an error or a reset on either side: both were reset

  Connection(int client, int far) : fd{client, far} {}

  bool finished() const { return broken || (from[0].done && from[1].done); }

  // What to poll fd[side] for; -1 as the descriptor when there is nothing to do on a side that
  // has hung up (shut both ways, or closed): it reports POLLHUP whatever is asked, and would
  // wake the loop for nothing while the other side drains. Otherwise a side is polled even for
  // no event, so that a reset (POLLERR) is seen at once.
  pollfd poll_entry(int side) const {
    if (connecting) {
      return {fd[side], static_cast<short>(side == 1 ? POLLOUT : 0), 0};
    }
    short wanted = 0;
    const Direction& out = from[side];
    if (!out.eof && out.end < kDirectionBuffer) {
      wanted |= POLLIN;
    }
    if (from[1 - side].start < from[1 - side].end) {
      wanted |= POLLOUT;
    }
    const bool idle_after_hang_up = hung_up[side] || (out.eof && from[1 - side].done);
    return {wanted == 0 && idle_after_hang_up ? -1 : fd[side], wanted, 0};
  }

  // Passes a reset (or an error) on: both sides are reset.
  void break_off() {
    if (!broken) {
      broken = true;
      close_with_reset(fd[0]);
      close_with_reset(fd[1]);
    }
  }

  // The far side's connect has completed (writable, or an error): relayed from now on, or the
  // client is reset, as a direct connection to a closed port would be.
  void finish_connect() {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd[1], SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      break_off();
      return;
    }
    connecting = false;
  }

  // Handles what poll() reported for fd[side].
  void serve(int side, short revents) {
    if (broken || revents == 0) {
      return;
    }
    if (connecting) {
      if (side == 1) {
        finish_connect();
      } else if ((revents & (POLLERR | POLLHUP)) != 0) {
        break_off();  // the client gave up first
      }
      return;
    }
    if ((revents & POLLERR) != 0) {
      break_off();
      return;
    }
    Direction& out = from[side];
    Direction& in = from[1 - side];
    // A hang-up is not an end by itself: what the side sent before its end is still to be read
    // (when there is room) and passed on; a write to it fails if it is really gone.
    hung_up[side] = hung_up[side] || (revents & POLLHUP) != 0;
    const bool reading = !out.eof && out.end < kDirectionBuffer;
    if ((revents & (POLLIN | POLLHUP)) != 0 && reading) {
      // MSG_DONTWAIT, not the descriptor's O_NONBLOCK: a socket from the connector shares its
      // open file description with whoever else holds it.
      const ssize_t got =
          ::recv(fd[side], out.buffer.get() + out.end, kDirectionBuffer - out.end, MSG_DONTWAIT);
      if (got > 0) {
        out.end += static_cast<std::size_t>(got);
      } else if (got == 0) {
        out.eof = true;
      } else if (!would_block(got)) {
        break_off();
        return;
      }
    }
    if ((revents & (POLLOUT | POLLHUP)) != 0 && in.start < in.end) {
      const ssize_t sent = ::send(fd[side], in.buffer.get() + in.start, in.end - in.start,
                                  MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent > 0) {
        in.start += static_cast<std::size_t>(sent);
        if (in.start == in.end) {
          in.start = in.end = 0;
        }
      } else if (!would_block(sent)) {
        break_off();
        return;
      }
    }
    for (int d = 0; d < 2; ++d) {
      Direction& direction = from[d];
      if (direction.eof && !direction.done && direction.start == direction.end) {
        ::shutdown(fd[1 - d], SHUT_WR);
        direction.done = true;
      }
    }
  }

  void close_both() {
    if (!broken) {
      ::close(fd[0]);
      ::close(fd[1]);
    }
  }
};

// An inbound client waiting for the connector's socket to the command's server.
struct PortForwarder::Waiting {
  std::uint64_t id;
  int client;
  std::uint16_t port;
  Clock::time_point deadline;
};

PortForwarder::PortForwarder(std::chrono::milliseconds connect_timeout)
    : connect_timeout_(connect_timeout) {
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    wake_pipe_[0] = wake_pipe_[1] = -1;
  }
}

PortForwarder::~PortForwarder() {
  stop();
  for (int fd : wake_pipe_) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void PortForwarder::add(Listener listener) {
  set_non_blocking(listener.fd);
  std::lock_guard lock(mutex_);
  if (stopped_) {
    ::close(listener.fd);
    return;
  }
  pending_.push_back(listener);
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { run(); });
  }
  const char wake = 0;
  [[maybe_unused]] const ssize_t n = ::write(wake_pipe_[1], &wake, 1);
}

void PortForwarder::forward_outbound(int listener, std::uint16_t port) {
  add({listener, port, false, {}});
}

Expected<bool, std::string> PortForwarder::forward_inbound(std::uint16_t port, int connector) {
  {
    std::lock_guard lock(mutex_);
    if (connector_ < 0) {
      // Asked and answered without waiting: a connector the command stops or kills must not
      // hold the forwarder (its clients are reset after the connect timeout instead).
      set_non_blocking(connector);
      connector_ = connector;
    }
  }
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in address = loopback_address(port);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 128) != 0) {
    const std::string error = "--allow-inbound-port " + std::to_string(port) +
                              ": cannot listen on 127.0.0.1:" + std::to_string(port) + ": " +
                              std::strerror(errno);
    ::close(listener);
    return Unexpected{error};
  }
  add({listener, port, true, {}});
  return true;
}

int PortForwarder::connector() {
  std::lock_guard lock(mutex_);
  return connector_;
}

void PortForwarder::start_outbound(int client, std::uint16_t port,
                                   std::vector<Connection>& connections) {
  const int far = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const sockaddr_in address = loopback_address(port);
  if (far < 0) {
    close_with_reset(client);
    return;
  }
  if (::connect(far, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    connections.emplace_back(client, far);
    return;
  }
  if (errno != EINPROGRESS) {
    ::close(far);
    close_with_reset(client);  // nothing listens there: reset, as a direct connection would be
    return;
  }
  // Under way (a host service whose accept queue is full drops the SYN and the kernel retries):
  // the loop goes on serving everyone else meanwhile.
  Connection& connection = connections.emplace_back(client, far);
  connection.connecting = true;
  connection.deadline = Clock::now() + connect_timeout_;
}

void PortForwarder::start_inbound(int client, std::uint16_t port, std::vector<Waiting>& waiting) {
  const int channel = connector();
  const std::uint64_t id = next_id_++;
  if (channel < 0 || waiting.size() >= kMaxWaiting ||
      !send_message(channel, std::to_string(id) + " " + std::to_string(port))) {
    close_with_reset(client);
    return;
  }
  waiting.push_back({id, client, port, Clock::now() + connect_timeout_});
}

void PortForwarder::accept_all(Listener& listener, std::vector<Connection>& connections,
                               std::vector<Waiting>& waiting) {
  for (;;) {
    const int client = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        listener.paused_until = Clock::now() + kAcceptPause;
      }
      return;  // none left (EAGAIN), the client already gave up, or no descriptor for now
    }
    if (connections.size() + waiting.size() >= kMaxConnections) {
      close_with_reset(client);
      continue;
    }
    if (listener.inbound) {
      start_inbound(client, listener.port, waiting);
    } else {
      start_outbound(client, listener.port, connections);
    }
  }
}

void PortForwarder::take_answers(std::vector<Connection>& connections,
                                 std::vector<Waiting>& waiting) {
  const int channel = connector();
  for (;;) {
    pollfd ready{channel, POLLIN, 0};
    if (::poll(&ready, 1, 0) <= 0) {
      return;
    }
    auto answer = receive_message(channel);
    if (!answer || answer->closed) {
      // The connector is gone (the command ended or killed it): nobody can be connected inside.
      std::lock_guard lock(mutex_);
      ::close(connector_);
      connector_ = -1;
      for (const Waiting& w : waiting) {
        close_with_reset(w.client);
      }
      waiting.clear();
      return;
    }
    std::string_view word;
    std::uint64_t id = 0;
    const bool parsed = split_word_number(answer->text, word, id);
    const auto found =
        std::find_if(waiting.begin(), waiting.end(), [id](const Waiting& w) { return w.id == id; });
    if (!parsed || found == waiting.end()) {
      if (answer->fd >= 0) {
        ::close(answer->fd);  // for a client that timed out meanwhile
      }
      continue;
    }
    if (word == "ok" && answer->fd >= 0 && connections.size() < kMaxConnections &&
        connected_inside(answer->fd, found->port)) {
      connections.emplace_back(found->client, answer->fd);
    } else {
      if (answer->fd >= 0) {
        ::close(answer->fd);
      }
      close_with_reset(found->client);
    }
    waiting.erase(found);
  }
}

struct PortForwarder::Loop {
  std::vector<Listener> listeners;
  std::vector<Connection> connections;
  std::vector<Waiting> waiting;
  // The poll set: the wake pipe, the connector (when a client waits for it), each listener,
  // then each connection's two sides.
  std::vector<pollfd> fds;
  static constexpr std::size_t kFirstListener = 2;
  std::size_t first_connection() const { return kFirstListener + listeners.size(); }
};

void PortForwarder::run() {
  Loop loop;
  while (take_pending(loop)) {
    const int timeout = fill_poll_set(loop);
    if (::poll(loop.fds.data(), loop.fds.size(), timeout) < 0 && errno != EINTR) {
      break;
    }
    drain_wake_pipe(loop);
    serve_ready(loop);
    open_.store(loop.connections.size(), std::memory_order_relaxed);
  }
  close_all(loop);
}

bool PortForwarder::take_pending(Loop& loop) {
  std::lock_guard lock(mutex_);
  if (stopped_) {
    return false;
  }
  loop.listeners.insert(loop.listeners.end(), pending_.begin(), pending_.end());
  pending_.clear();
  return true;
}

int PortForwarder::fill_poll_set(Loop& loop) {
  // The next deadline bounds the wait: a connect under way, a client waiting for the connector,
  // a paused listener.
  const Clock::time_point now = Clock::now();
  Clock::time_point next = Clock::time_point::max();
  loop.fds.clear();
  loop.fds.push_back({wake_pipe_[0], POLLIN, 0});
  loop.fds.push_back({loop.waiting.empty() ? -1 : connector(), POLLIN, 0});
  for (const Listener& listener : loop.listeners) {
    const bool paused = listener.paused_until > now;
    loop.fds.push_back({paused ? -1 : listener.fd, POLLIN, 0});
    if (paused) {
      next = std::min(next, listener.paused_until);
    }
  }
  for (const Connection& connection : loop.connections) {
    loop.fds.push_back(connection.poll_entry(0));
    loop.fds.push_back(connection.poll_entry(1));
    if (connection.connecting) {
      next = std::min(next, connection.deadline);
    }
  }
  for (const Waiting& w : loop.waiting) {
    next = std::min(next, w.deadline);
  }
  if (next == Clock::time_point::max()) {
    return -1;
  }
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

void PortForwarder::drain_wake_pipe(const Loop& loop) {
  if ((loop.fds[0].revents & POLLIN) != 0) {
    char drained[64];
    while (::read(wake_pipe_[0], drained, sizeof drained) > 0) {
    }
  }
}

void PortForwarder::serve_ready(Loop& loop) {
  // Connections first (their slots follow the listeners'), then answers and new clients.
  auto& connections = loop.connections;
  const std::size_t first = loop.first_connection();
  for (std::size_t i = 0; i < connections.size(); ++i) {
    connections[i].serve(0, loop.fds[first + 2 * i].revents);
    connections[i].serve(1, loop.fds[first + 2 * i + 1].revents);
  }
  const Clock::time_point after = Clock::now();
  for (std::size_t i = 0; i < connections.size();) {
    Connection& connection = connections[i];
    if (connection.connecting && connection.deadline <= after) {
      connection.break_off();  // the far side never answered: the client is reset
    }
    if (connection.finished()) {
      connection.close_both();
      if (i + 1 != connections.size()) {
        connection = std::move(connections.back());
      }
      connections.pop_back();
    } else {
      ++i;
    }
  }
  std::erase_if(loop.waiting, [after](const Waiting& w) {
    if (w.deadline <= after) {
      close_with_reset(w.client);  // the connector did not answer in time
      return true;
    }
    return false;
  });
  if (loop.fds[1].revents != 0) {
    take_answers(connections, loop.waiting);
  }
  for (std::size_t i = 0; i < loop.listeners.size(); ++i) {
    if ((loop.fds[Loop::kFirstListener + i].revents & POLLIN) != 0) {
      accept_all(loop.listeners[i], connections, loop.waiting);
    }
  }
}

void PortForwarder::close_all(Loop& loop) {
  // Every listener and connection closes (a connection still open is reset: it was cut, not
  // finished).
  for (const Listener& listener : loop.listeners) {
    ::close(listener.fd);
  }
  for (Connection& connection : loop.connections) {
    connection.break_off();
  }
  for (const Waiting& w : loop.waiting) {
    close_with_reset(w.client);
  }
  open_.store(0, std::memory_order_relaxed);
}

void PortForwarder::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    const char wake = 0;
    [[maybe_unused]] const ssize_t n = ::write(wake_pipe_[1], &wake, 1);
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  std::lock_guard lock(mutex_);
  for (const Listener& listener : pending_) {
    ::close(listener.fd);
  }
  pending_.clear();
  if (connector_ >= 0) {
    ::close(connector_);
    connector_ = -1;
  }
}

}  // namespace sandgate::sandbox
