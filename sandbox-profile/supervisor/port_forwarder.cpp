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

#include "sandbox-profile/supervisor/fd_passing.hpp"

namespace sandgate::sandbox {
namespace {

int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

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

}  // namespace

[[noreturn]] void run_connector(int channel) {
  for (;;) {
    auto request = receive_message(channel);
    if (!request || request->closed) {
      ::_exit(0);
    }
    if (request->fd >= 0) {
      ::close(request->fd);
    }
    const int port = std::atoi(request->text.c_str());
    const int fd =
        port > 0 && port < 65536 ? connect_loopback(static_cast<std::uint16_t>(port)) : -1;
    if (!send_message(channel, fd >= 0 ? "ok" : "refused", fd)) {
      ::_exit(0);
    }
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

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
  bool broken = false;  // an error or a reset on either side: both were reset

  Connection(int client, int far) : fd{client, far} {}

  bool finished() const { return broken || (from[0].done && from[1].done); }

  short events(int side) const {
    short wanted = 0;
    const Direction& out = from[side];
    if (!out.eof && out.end < kDirectionBuffer) {
      wanted |= POLLIN;
    }
    if (from[1 - side].start < from[1 - side].end) {
      wanted |= POLLOUT;
    }
    return wanted;
  }

  // Passes a reset (or an error) on: both sides are reset.
  void break_off() {
    if (!broken) {
      broken = true;
      close_with_reset(fd[0]);
      close_with_reset(fd[1]);
    }
  }

  // Handles what poll() reported for fd[side].
  void serve(int side, short revents) {
    if (broken) {
      return;
    }
    if ((revents & POLLERR) != 0) {
      break_off();
      return;
    }
    Direction& out = from[side];
    if ((revents & (POLLIN | POLLHUP)) != 0 && !out.eof && out.end < kDirectionBuffer) {
      const ssize_t got = ::read(fd[side], out.buffer.get() + out.end, kDirectionBuffer - out.end);
      if (got > 0) {
        out.end += static_cast<std::size_t>(got);
      } else if (got == 0) {
        out.eof = true;
      } else if (!would_block(got)) {
        break_off();
        return;
      }
    }
    Direction& in = from[1 - side];
    if ((revents & POLLOUT) != 0 && in.start < in.end) {
      const ssize_t sent =
          ::send(fd[side], in.buffer.get() + in.start, in.end - in.start, MSG_NOSIGNAL);
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

PortForwarder::PortForwarder() {
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
  add({listener, port, false});
}

Expected<bool, std::string> PortForwarder::forward_inbound(std::uint16_t port, int connector) {
  {
    std::lock_guard lock(mutex_);
    connector_ = connector;
  }
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 128) != 0) {
    const std::string error = "--allow-inbound-port " + std::to_string(port) +
                              ": cannot listen on 127.0.0.1:" + std::to_string(port) + ": " +
                              std::strerror(errno);
    ::close(listener);
    return Unexpected{error};
  }
  add({listener, port, true});
  return true;
}

// Asks the connector for a socket connected to the command's 127.0.0.1:port; -1 if refused.
int PortForwarder::connect_inside(std::uint16_t port) {
  int connector = -1;
  {
    std::lock_guard lock(mutex_);
    connector = connector_;
  }
  if (connector < 0 || !send_message(connector, std::to_string(port))) {
    return -1;
  }
  auto answer = receive_message(connector);
  return answer && answer->text == "ok" ? answer->fd : -1;
}

void PortForwarder::accept_all(const Listener& listener, std::vector<Connection>& connections) {
  for (;;) {
    const int client = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) {
      return;  // none left (EAGAIN), or the client already gave up
    }
    if (connections.size() >= kMaxConnections) {
      close_with_reset(client);
      continue;
    }
    // Loopback on both sides: the connect is answered at once (accepted or refused).
    const int far =
        listener.inbound ? connect_inside(listener.port) : connect_loopback(listener.port);
    if (far < 0) {
      close_with_reset(client);  // nothing listens there: reset, as a direct connection would be
      continue;
    }
    set_non_blocking(far);
    connections.emplace_back(client, far);
  }
}

void PortForwarder::run() {
  std::vector<Listener> listeners;
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) {
        break;
      }
      listeners.insert(listeners.end(), pending_.begin(), pending_.end());
      pending_.clear();
    }
    fds.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    for (const Listener& listener : listeners) {
      fds.push_back({listener.fd, POLLIN, 0});
    }
    for (const Connection& connection : connections) {
      // A side with nothing to do is left out (-1): a socket shut both ways reports POLLHUP
      // whatever is asked, and would wake the loop for nothing until the other side drains.
      for (int side = 0; side < 2; ++side) {
        const short events = connection.events(side);
        fds.push_back({events != 0 ? connection.fd[side] : -1, events, 0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      break;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      char drained[64];
      while (::read(wake_pipe_[0], drained, sizeof drained) > 0) {
      }
    }
    // Connections first (their slots follow the listeners'), then new ones.
    for (std::size_t i = 0; i < connections.size(); ++i) {
      const std::size_t slot = 1 + listeners.size() + 2 * i;
      connections[i].serve(0, fds[slot].revents);
      connections[i].serve(1, fds[slot + 1].revents);
    }
    for (std::size_t i = 0; i < connections.size();) {
      if (connections[i].finished()) {
        connections[i].close_both();
        if (i + 1 != connections.size()) {
          connections[i] = std::move(connections.back());
        }
        connections.pop_back();
      } else {
        ++i;
      }
    }
    for (std::size_t i = 0; i < listeners.size(); ++i) {
      if ((fds[1 + i].revents & POLLIN) != 0) {
        accept_all(listeners[i], connections);
      }
    }
    open_.store(connections.size(), std::memory_order_relaxed);
  }
  // Stopped: every listener and connection closes (a connection still open is reset: it was
  // cut, not finished).
  for (const Listener& listener : listeners) {
    ::close(listener.fd);
  }
  for (Connection& connection : connections) {
    connection.break_off();
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
