// The admin routes as `sandgate watch` reads them. See admin_client.hpp.
#include "proxy/watch_view/admin_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

namespace sandgate::watch_view {
namespace {

constexpr std::size_t kMaxReply = 1u << 20;

// Closes on every path out unless released.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  int release() { return std::exchange(fd, -1); }
};

bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

Expected<int, std::string> connect_to(const AdminAddress& where) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
  if (!where.unix_path.empty()) {
    auto* address = reinterpret_cast<sockaddr_un*>(&storage);
    if (where.unix_path.size() >= sizeof address->sun_path) {
      return Unexpected{where.unix_path + ": path too long for a unix socket"};
    }
    address->sun_family = AF_UNIX;
    std::memcpy(address->sun_path, where.unix_path.c_str(), where.unix_path.size() + 1);
    length = sizeof(sockaddr_un);
    family = AF_UNIX;
  } else if (auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
             ::inet_pton(AF_INET, where.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(where.port);
    length = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
             ::inet_pton(AF_INET6, where.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(where.port);
    length = sizeof(sockaddr_in6);
    family = AF_INET6;
  } else {
    return Unexpected{"the admin address " + where.text() + " is not an IP address"};
  }
  Socket s{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0 || ::connect(s.fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    return Unexpected{"cannot reach " + where.text() + ": " + std::strerror(errno)};
  }
  return s.release();
}

std::string request_text(const AdminAddress& where, std::string_view method,
                         std::string_view target, std::string_view body) {
  std::string text = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: " +
                     (where.unix_path.empty() ? where.text() : std::string("localhost")) +
                     "\r\nConnection: close\r\n";
  if (!where.bearer.empty()) {
    text += "Authorization: Bearer " + where.bearer + "\r\n";
  }
  if (method == "POST") {
    text += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n";
  }
  return text + "\r\n" + std::string(body);
}

std::optional<std::string> send_all(int fd, std::string_view rest, int timeout_ms) {
  while (!rest.empty()) {
    if (!wait_for(fd, POLLOUT, timeout_ms)) {
      return std::string("the gate did not take the request in time");
    }
    const ssize_t n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
      return std::string("sending failed: ") + std::strerror(errno);
    }
    if (n > 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  return std::nullopt;
}

// The status of a response head ("HTTP/1.1 200 OK..."), 0 when it is not one.
unsigned status_of(std::string_view head) {
  if (!head.starts_with("HTTP/1.1 ") || head.size() < 12) {
    return 0;
  }
  return static_cast<unsigned>(std::atoi(std::string(head.substr(9, 3)).c_str()));
}

}  // namespace

std::string AdminAddress::text() const {
  if (!unix_path.empty()) {
    return unix_path;
  }
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

Expected<HttpReply, std::string> exchange(const AdminAddress& where, std::string_view method,
                                          std::string_view target, std::string_view body,
                                          int timeout_ms) {
  auto connected = connect_to(where);
  if (!connected) {
    return Unexpected{connected.error()};
  }
  Socket s{*connected};
  if (auto error = send_all(s.fd, request_text(where, method, target, body), timeout_ms)) {
    return Unexpected{where.text() + ": " + *error};
  }
  std::string response;
  char chunk[4096];
  for (;;) {
    if (!wait_for(s.fd, POLLIN, timeout_ms)) {
      return Unexpected{where.text() + " did not answer in time"};
    }
    const ssize_t n = ::recv(s.fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return Unexpected{"reading from " + where.text() + " failed: " + std::strerror(errno)};
    }
    if (n == 0) {
      break;
    }
    response.append(chunk, static_cast<std::size_t>(n));
    if (response.size() > kMaxReply) {
      return Unexpected{where.text() + " sent more than 1 MiB"};
    }
  }
  const auto head_end = response.find("\r\n\r\n");
  HttpReply reply{status_of(response), {}};
  if (reply.status == 0 || head_end == std::string::npos) {
    return Unexpected{where.text() + " sent no HTTP response"};
  }
  reply.body = response.substr(head_end + 4);
  return reply;
}

Expected<EventStream, std::string> EventStream::open(const AdminAddress& where, bool answering,
                                                     int timeout_ms) {
  auto connected = connect_to(where);
  if (!connected) {
    return Unexpected{connected.error()};
  }
  Socket s{*connected};
  const std::string target = answering ? "/events?answer=1" : "/events";
  if (auto error = send_all(s.fd, request_text(where, "GET", target, {}), timeout_ms)) {
    return Unexpected{where.text() + ": " + *error};
  }
  // The head, read a byte at a time so that no line of the body is taken with it.
  std::string head;
  while (!head.ends_with("\r\n\r\n")) {
    if (head.size() > 8192 || !wait_for(s.fd, POLLIN, timeout_ms)) {
      return Unexpected{where.text() + " did not start the event stream"};
    }
    char c = 0;
    const ssize_t n = ::recv(s.fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return Unexpected{where.text() + " closed before the event stream started"};
    }
    head += c;
  }
  if (const unsigned status = status_of(head); status != 200) {
    return Unexpected{where.text() + " refused the event stream (HTTP " + std::to_string(status) +
                      ")"};
  }
  ::fcntl(s.fd, F_SETFL, ::fcntl(s.fd, F_GETFL) | O_NONBLOCK);
  return EventStream(s.release());
}

EventStream::EventStream(EventStream&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      partial_(std::move(other.partial_)),
      skipping_(other.skipping_),
      too_long_(other.too_long_) {}

EventStream& EventStream::operator=(EventStream&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    partial_ = std::move(other.partial_);
    skipping_ = other.skipping_;
    too_long_ = other.too_long_;
  }
  return *this;
}

EventStream::~EventStream() { close(); }

void EventStream::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

std::vector<std::string> EventStream::read_lines() {
  std::vector<std::string> lines;
  char chunk[16384];
  while (fd_ >= 0) {
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    }
    if (n <= 0) {
      close();
      break;
    }
    for (std::string_view rest(chunk, static_cast<std::size_t>(n)); !rest.empty();) {
      const auto newline = rest.find('\n');
      const std::string_view piece = rest.substr(0, newline);
      if (!skipping_) {
        partial_.append(piece);
      }
      if (partial_.size() > kMaxLine) {
        partial_.clear();
        skipping_ = true;
      }
      if (newline == std::string_view::npos) {
        break;
      }
      if (skipping_) {
        ++too_long_;
      } else {
        lines.push_back(std::move(partial_));
      }
      partial_.clear();
      skipping_ = false;
      rest.remove_prefix(newline + 1);
    }
  }
  return lines;
}

}  // namespace sandgate::watch_view
