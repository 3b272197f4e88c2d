// Fake TCP origins. See tcp_origin.hpp.
#include "tests/fakes/tcp_origin.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sandgate::fakes {

struct TcpOrigin::State {
  Mode mode;
  int listener = -1;
  std::uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::uint64_t> bytes_received{0};
  std::string banner;
  std::uint64_t flood_bytes = 0;
  std::thread acceptor;
  std::mutex mutex;
  std::vector<std::thread> handlers;
};

namespace {

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

void serve_tcp_connection(std::shared_ptr<TcpOrigin::State> state, int fd, TcpOrigin::Mode mode) {
  char buffer[16384];
  switch (mode) {
    case TcpOrigin::Mode::banner:
      send_all(fd, state->banner.data(), state->banner.size());
      [[fallthrough]];
    case TcpOrigin::Mode::echo:
      for (;;) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
          break;
        }
        state->bytes_received += static_cast<std::uint64_t>(n);
        if (!send_all(fd, buffer, static_cast<std::size_t>(n))) {
          break;
        }
      }
      ::shutdown(fd, SHUT_WR);
      // Keep reading until the peer closes, so our close never resets unread data.
      while (::recv(fd, buffer, sizeof buffer, 0) > 0) {
      }
      break;
    case TcpOrigin::Mode::reset: {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        state->bytes_received += static_cast<std::uint64_t>(n);
      }
      linger hard{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      break;
    }
    case TcpOrigin::Mode::flood: {
      std::vector<char> chunk(65536, 'x');
      std::uint64_t left = state->flood_bytes;
      while (left > 0) {
        const std::size_t n = left < chunk.size() ? static_cast<std::size_t>(left) : chunk.size();
        if (!send_all(fd, chunk.data(), n)) {
          break;
        }
        left -= n;
      }
      ::shutdown(fd, SHUT_WR);
      // Half-closed: keep counting what the client still sends.
      for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
        state->bytes_received += static_cast<std::uint64_t>(n);
      }
      break;
    }
  }
  ::close(fd);
}

void accept_tcp_connections(std::shared_ptr<TcpOrigin::State> state) {
  while (!state->stopping) {
    pollfd p{state->listener, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) {
      continue;
    }
    const int fd = ::accept(state->listener, nullptr, nullptr);
    if (fd < 0) {
      continue;
    }
    ++state->connections;
    std::lock_guard lock(state->mutex);
    state->handlers.emplace_back(serve_tcp_connection, state, fd, state->mode);
  }
}

}  // namespace

TcpOrigin::TcpOrigin(Mode mode, Family family) : state_(std::make_shared<State>()) {
  state_->mode = mode;
  state_->banner = "SSH-2.0-FakeOrigin\r\n";
  state_->flood_bytes = 1 << 20;
  const int domain = family == Family::v4 ? AF_INET : AF_INET6;
  state_->listener = ::socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(state_->listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage address{};
  socklen_t length = 0;
  if (family == Family::v4) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    length = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_addr = in6addr_loopback;
    length = sizeof(sockaddr_in6);
  }
  if (::bind(state_->listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(state_->listener, 512) != 0) {
    throw std::runtime_error("TcpOrigin: cannot listen on loopback");
  }
  ::getsockname(state_->listener, reinterpret_cast<sockaddr*>(&address), &length);
  state_->port = ntohs(family == Family::v4 ? reinterpret_cast<sockaddr_in*>(&address)->sin_port
                                            : reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  state_->acceptor = std::thread(accept_tcp_connections, state_);
}

TcpOrigin::~TcpOrigin() {
  state_->stopping = true;
  state_->acceptor.join();
  ::close(state_->listener);
  std::vector<std::thread> handlers;
  {
    std::lock_guard lock(state_->mutex);
    handlers.swap(state_->handlers);
  }
  // Handlers end when their clients close; tests close their clients before the origin dies.
  for (auto& handler : handlers) {
    handler.detach();
  }
}

void TcpOrigin::set_banner(std::string banner) { state_->banner = std::move(banner); }
void TcpOrigin::set_flood_bytes(std::uint64_t bytes) { state_->flood_bytes = bytes; }

std::uint16_t TcpOrigin::port() const { return state_->port; }
std::size_t TcpOrigin::connections() const { return state_->connections; }
std::uint64_t TcpOrigin::bytes_received() const { return state_->bytes_received; }

}  // namespace sandgate::fakes
