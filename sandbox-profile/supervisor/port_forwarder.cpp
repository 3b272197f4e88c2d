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

PortForwarder::PortForwarder() {
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    stop_pipe_[0] = stop_pipe_[1] = -1;
  }
}

PortForwarder::~PortForwarder() {
  stop();
  for (int fd : stop_pipe_) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void PortForwarder::spawn(std::thread thread) {
  std::lock_guard lock(mutex_);
  threads_.push_back(std::move(thread));
}

void PortForwarder::forward_outbound(int listener, std::uint16_t port) {
  {
    std::lock_guard lock(mutex_);
    sockets_.push_back(listener);
  }
  spawn(std::thread([this, listener, port] { accept_loop(listener, port, false); }));
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
  {
    std::lock_guard lock(mutex_);
    sockets_.push_back(listener);
  }
  spawn(std::thread([this, listener, port] { accept_loop(listener, port, true); }));
  return true;
}

// Asks the connector for a socket connected to the command's 127.0.0.1:port; -1 if refused.
int PortForwarder::connect_inside(std::uint16_t port) {
  std::lock_guard lock(mutex_);  // one request at a time on the shared channel
  if (connector_ < 0 || !send_message(connector_, std::to_string(port))) {
    return -1;
  }
  auto answer = receive_message(connector_);
  return answer && answer->text == "ok" ? answer->fd : -1;
}

void PortForwarder::accept_loop(int listener, std::uint16_t port, bool inbound) {
  for (;;) {
    pollfd fds[2] = {{listener, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if (fds[1].revents != 0) {
      return;
    }
    const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      continue;
    }
    const int upstream = inbound ? connect_inside(port) : connect_loopback(port);
    if (upstream < 0) {
      ::close(client);  // nothing listens on the other side: the client sees a closed connection
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      if (stopped_) {
        ::close(client);
        ::close(upstream);
        return;
      }
      sockets_.push_back(client);
      sockets_.push_back(upstream);
    }
    spawn(std::thread([this, client, upstream] { relay(client, upstream); }));
  }
}

// Copies both ways until both directions are done, passing each EOF on as a half-close.
void PortForwarder::relay(int a, int b) {
  bool open[2] = {true, true};  // a->b, b->a
  char buffer[65536];
  while (open[0] || open[1]) {
    pollfd fds[3] = {
        {open[0] ? a : -1, POLLIN, 0}, {open[1] ? b : -1, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if (fds[2].revents != 0) {
      break;
    }
    for (int direction = 0; direction < 2; ++direction) {
      if (!open[direction] || fds[direction].revents == 0) {
        continue;
      }
      const int from = direction == 0 ? a : b;
      const int to = direction == 0 ? b : a;
      const ssize_t n = ::read(from, buffer, sizeof buffer);
      bool ok = n > 0;
      for (ssize_t done = 0; ok && done < n;) {
        const ssize_t w =
            ::send(to, buffer + done, static_cast<std::size_t>(n - done), MSG_NOSIGNAL);
        ok = w > 0;
        done += w > 0 ? w : 0;
      }
      if (!ok) {
        open[direction] = false;
        ::shutdown(to, SHUT_WR);
      }
    }
  }
  std::lock_guard lock(mutex_);
  if (!stopped_) {  // after stop() began, stop() closes them
    for (int fd : {a, b}) {
      sockets_.erase(std::remove(sockets_.begin(), sockets_.end(), fd), sockets_.end());
      ::close(fd);
    }
  }
}

void PortForwarder::stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
  }
  if (stop_pipe_[1] >= 0) {
    const char byte = 0;
    [[maybe_unused]] const ssize_t n = ::write(stop_pipe_[1], &byte, 1);
  }
  // Threads may still start connections until they see the pipe: join until none is left.
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    if (threads.empty()) {
      break;
    }
    for (auto& thread : threads) {
      thread.join();
    }
    threads.clear();
  }
  std::lock_guard lock(mutex_);
  for (int fd : sockets_) {
    ::close(fd);
  }
  sockets_.clear();
  if (connector_ >= 0) {
    ::close(connector_);
    connector_ = -1;
  }
}

}  // namespace sandgate::sandbox
