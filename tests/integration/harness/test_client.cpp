// Blocking test client. See test_client.hpp.
#include "tests/integration/harness/test_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sandgate::testing {
namespace {

using clock = std::chrono::steady_clock;

// One recv with a deadline: >0 bytes, 0 closed, -1 timeout, -2 reset/error.
ssize_t recv_some(int fd, char* buffer, std::size_t size, clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      return -1;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready == 0) {
      return -1;
    }
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -2;
    }
    const ssize_t n = ::recv(fd, buffer, size, 0);
    if (n < 0) {
      return errno == EINTR ? recv_some(fd, buffer, size, deadline) : -2;
    }
    return n;
  }
}

}  // namespace

TestClient::TestClient(std::uint16_t port, bool ipv6) {
  fd_ = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int result = -1;
  if (ipv6) {
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_loopback;
    address.sin6_port = htons(port);
    result = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    result = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
  }
  if (result != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd_);
    throw std::runtime_error("TestClient: connect failed: " + reason);
  }
}

TestClient::~TestClient() { close(); }

std::uint16_t TestClient::local_port() const {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return 0;
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

void TestClient::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void TestClient::send(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      throw std::runtime_error("TestClient: send failed");
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void TestClient::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

std::string TestClient::read_until(std::string_view delimiter, std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  std::string data = std::move(pending);
  pending.clear();
  char buffer[16384];
  while (data.find(delimiter) == std::string::npos) {
    const ssize_t n = recv_some(fd_, buffer, sizeof buffer, deadline);
    if (n <= 0) {
      break;
    }
    data.append(buffer, static_cast<std::size_t>(n));
  }
  return data;
}

std::string TestClient::read_exact(std::size_t size, std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  std::string data = std::move(pending);
  pending.clear();
  char buffer[16384];
  while (data.size() < size) {
    const ssize_t n = recv_some(fd_, buffer, std::min(sizeof buffer, size - data.size()), deadline);
    if (n <= 0) {
      break;
    }
    data.append(buffer, static_cast<std::size_t>(n));
  }
  if (data.size() > size) {
    pending = data.substr(size);
    data.resize(size);
  }
  return data;
}

std::string TestClient::read_to_end(bool* reset, std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  std::string data = std::move(pending);
  pending.clear();
  char buffer[16384];
  for (;;) {
    const ssize_t n = recv_some(fd_, buffer, sizeof buffer, deadline);
    if (n > 0) {
      data.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (reset != nullptr) {
      *reset = n == -2;
    }
    if (n == -1) {
      throw std::runtime_error("TestClient: timed out waiting for the peer to close");
    }
    return data;
  }
}

ResponseHead read_response_head(TestClient& client) {
  ResponseHead head;
  std::string data = client.read_until("\r\n\r\n");
  const auto end = data.find("\r\n\r\n");
  if (end == std::string::npos) {
    head.head = data;
    return head;
  }
  head.head = data.substr(0, end + 4);
  head.body_after = data.substr(end + 4);
  if (head.head.starts_with("HTTP/1.")) {
    head.status = std::atoi(head.head.c_str() + 9);
  }
  const auto field = head.head.find("\r\nProxy-Status: ");
  if (field != std::string::npos) {
    const auto start = field + 16;
    head.proxy_status = head.head.substr(start, head.head.find("\r\n", start) - start);
  }
  return head;
}

ResponseHead send_connect(TestClient& client, std::string_view target) {
  std::string request = "CONNECT ";
  request += target;
  request += " HTTP/1.1\r\nHost: ";
  request += target;
  request += "\r\n\r\n";
  client.send(request);
  ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  return head;
}

std::string socks5_request_for_name(std::string_view name, std::uint16_t port, int command) {
  std::string request{0x05, static_cast<char>(command), 0x00, 0x03, static_cast<char>(name.size())};
  request += name;
  request += static_cast<char>(port >> 8);
  request += static_cast<char>(port & 0xff);
  return request;
}

}  // namespace sandgate::testing
