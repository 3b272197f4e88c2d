// Opening the tunnel. See proxy_dial.hpp.
#include "connect-proxy/proxy_dial.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "connect-proxy/connect_request.hpp"
#include "connect-proxy/relay.hpp"

namespace sandgate::connect_proxy {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits until `fd` is ready for `events` or the deadline passes: the revents (non-zero), 0 on
// timeout, or -1 with errno set.
int wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    return ready <= 0 ? ready : entry.revents;
  }
}

std::string seconds_text(std::chrono::milliseconds timeout) {
  const auto ms = timeout.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

// One connection attempt to one address: non-blocking connect, then poll for completion.
Expected<UniqueFd, std::string> connect_to(const addrinfo& address, Clock::time_point deadline,
                                           std::chrono::milliseconds timeout) {
  // fcntl rather than SOCK_NONBLOCK | SOCK_CLOEXEC, which macOS lacks.
  UniqueFd fd(::socket(address.ai_family, address.ai_socktype, address.ai_protocol));
  if (!fd || ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC) != 0 ||
      ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK) != 0) {
    return Unexpected(std::string(std::strerror(errno)));
  }
  // A non-blocking connect is not restarted by EINTR: it goes on in the background like
  // EINPROGRESS, and poll tells when it is done.
  if (::connect(fd.get(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) {
      return Unexpected(std::string(std::strerror(errno)));
    }
    const int ready = wait_for(fd.get(), POLLOUT, deadline);
    if (ready == 0) {
      return Unexpected("no answer within " + seconds_text(timeout));
    }
    if (ready < 0) {
      return Unexpected(std::string(std::strerror(errno)));
    }
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
      error = errno;
    }
    if (error != 0) {
      return Unexpected(std::string(std::strerror(error)));
    }
  }
  // SSH sends keystrokes in small segments; ssh cannot set TCP_NODELAY on a pipe, so do it here.
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

Expected<UniqueFd, std::string> connect_to_proxy(const ProxyLocation& proxy,
                                                 Clock::time_point deadline,
                                                 std::chrono::milliseconds timeout) {
  const std::string where =
      "cannot reach the proxy at " + proxy.display() + " (from " + proxy.source + "): ";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(proxy.port);
  if (const int rc = ::getaddrinfo(proxy.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Unexpected(where + "cannot resolve '" + proxy.host + "': " + ::gai_strerror(rc));
  }
  std::string last_error = "no address";
  for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
    auto fd = connect_to(*address, deadline, timeout);
    if (fd) {
      ::freeaddrinfo(found);
      return std::move(*fd);
    }
    last_error = fd.error();
    if (remaining_ms(deadline) == 0) {
      break;
    }
  }
  ::freeaddrinfo(found);
  return Unexpected(where + last_error + "; is the proxy running?");
}

// Sends all of `data`, waiting for room until the deadline.
std::optional<std::string> send_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const ssize_t sent = ::send(fd, data.data(), data.size(), kSendFlags);
    if (sent > 0) {
      data.remove_prefix(static_cast<std::size_t>(sent));
      continue;
    }
    if (sent < 0 && errno == EINTR) {
      continue;
    }
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_for(fd, POLLOUT, deadline) <= 0) {
        return std::string("timed out");
      }
      continue;
    }
    return std::string(std::strerror(errno));
  }
  return std::nullopt;
}

}  // namespace

Expected<Tunnel, std::string> open_tunnel(const ProxyLocation& proxy, std::string_view authority,
                                          std::chrono::milliseconds timeout,
                                          std::optional<ResponseHead>* refusal) {
  const auto deadline = Clock::now() + timeout;
  auto socket = connect_to_proxy(proxy, deadline, timeout);
  if (!socket) {
    return Unexpected(socket.error());
  }
  const std::string at = "the proxy at " + proxy.display();

  if (auto error =
          send_all(socket->get(), build_connect_request(authority, proxy.credentials), deadline)) {
    return Unexpected(at + " failed while CONNECT " + std::string(authority) +
                      " was sent: " + *error);
  }

  // Read until the blank line that ends the head. Reads are not cut at the blank line, so a
  // server that talks first (SSH does) may have its first bytes in the same read: they are kept
  // for the relay, which is what goose's helper got wrong.
  std::string buffer;
  std::optional<std::size_t> head_end;
  char chunk[16 * 1024];
  while (!head_end) {
    const ssize_t got = ::recv(socket->get(), chunk, sizeof chunk, 0);
    if (got > 0) {
      const std::size_t searched = buffer.size() < 3 ? 0 : buffer.size() - 3;
      buffer.append(chunk, static_cast<std::size_t>(got));
      if (auto end = find_head_end(std::string_view(buffer).substr(searched))) {
        head_end = searched + *end;
      } else if (buffer.size() >= kMaxResponseHead) {
        return Unexpected(at + " sent a response head over 16 KiB to CONNECT " +
                          std::string(authority) + "; is it an HTTP proxy?");
      }
      continue;
    }
    if (got == 0) {
      return Unexpected(at + " closed the connection " +
                        (buffer.empty() ? "without answering" : "in the middle of its answer to") +
                        " CONNECT " + std::string(authority));
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      const int ready = wait_for(socket->get(), POLLIN, deadline);
      if (ready == 0) {
        return Unexpected(at + " did not answer CONNECT " + std::string(authority) + " within " +
                          seconds_text(timeout));
      }
      if (ready < 0) {
        return Unexpected(at + ": " + std::strerror(errno));
      }
      continue;
    }
    return Unexpected(at + " failed while answering CONNECT " + std::string(authority) + ": " +
                      std::strerror(errno));
  }
  if (*head_end > kMaxResponseHead) {
    return Unexpected(at + " sent a response head over 16 KiB to CONNECT " +
                      std::string(authority) + "; is it an HTTP proxy?");
  }

  auto head = parse_response_head(std::string_view(buffer).substr(0, *head_end));
  if (!head) {
    return Unexpected(at + " (from " + proxy.source + ") is not an HTTP proxy: " + head.error());
  }
  if (head->status != 200) {
    if (refusal != nullptr) {
      *refusal = *head;
    }
    return Unexpected(
        describe_refusal(*head, proxy.display(), authority, !proxy.credentials.empty()));
  }
  Tunnel tunnel;
  tunnel.socket = std::move(*socket);
  tunnel.early_bytes = buffer.substr(*head_end);
  return tunnel;
}

}  // namespace sandgate::connect_proxy
