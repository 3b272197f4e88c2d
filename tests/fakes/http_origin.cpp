// The fake HTTP origin. See http_origin.hpp.
#include "tests/fakes/http_origin.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "rules/ascii.hpp"

namespace sandgate::fakes {

struct HttpOrigin::State {
  Handler handler;
  int listener = -1;
  std::uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::uint64_t> bytes_received{0};
  std::thread acceptor;
  mutable std::mutex mutex;
  mutable std::condition_variable arrived;
  std::vector<std::thread> handlers;
  std::vector<int> open_fds;
  std::vector<Request> requests;
};

namespace {

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads requests from one connection, keeping what was read past the current one.
class Reader {
 public:
  Reader(int fd, HttpOrigin::State& state) : fd_(fd), state_(state) {}

  // Reads until `data_` holds at least `size` bytes past `at_`.
  bool need(std::size_t size) {
    while (data_.size() - at_ < size) {
      if (!fill()) {
        return false;
      }
    }
    return true;
  }
  // Returns the line at `at_` (without its CRLF) and moves past it.
  std::optional<std::string> line() {
    for (;;) {
      const std::size_t end = data_.find("\r\n", at_);
      if (end != std::string::npos) {
        std::string text = data_.substr(at_, end - at_);
        at_ = end + 2;
        return text;
      }
      if (!fill()) {
        return std::nullopt;
      }
    }
  }
  std::optional<std::string> head() {
    for (;;) {
      const std::size_t end = data_.find("\r\n\r\n", at_);
      if (end != std::string::npos) {
        std::string text = data_.substr(at_, end + 4 - at_);
        at_ = end + 4;
        return text;
      }
      if (!fill()) {
        return std::nullopt;
      }
    }
  }
  std::string take(std::size_t size) {
    std::string text = data_.substr(at_, size);
    at_ += size;
    return text;
  }
  // The bytes consumed since the last call (the raw request), dropped from the buffer.
  std::string consumed() {
    std::string raw = data_.substr(0, at_);
    data_.erase(0, at_);
    at_ = 0;
    return raw;
  }
  // Whatever was read past the request (used when the connection turns into a tunnel).
  std::string rest() {
    std::string text = data_.substr(at_);
    data_.clear();
    at_ = 0;
    return text;
  }

 private:
  bool fill() {
    char buffer[65536];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) {
      return false;
    }
    state_.bytes_received += static_cast<std::uint64_t>(n);
    data_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  int fd_;
  HttpOrigin::State& state_;
  std::string data_;
  std::size_t at_ = 0;
};

void parse_head(HttpOrigin::Request& request) {
  const std::size_t first_space = request.head.find(' ');
  const std::size_t second_space = request.head.find(' ', first_space + 1);
  if (first_space != std::string::npos && second_space != std::string::npos) {
    request.method = request.head.substr(0, first_space);
    request.target = request.head.substr(first_space + 1, second_space - first_space - 1);
  }
}

// Reads the body the head announces. Returns false if the connection ended first.
bool read_body(Reader& reader, HttpOrigin::Request& request) {
  const std::string coding = request.field("Transfer-Encoding");
  if (!coding.empty()) {
    for (;;) {
      auto size_line = reader.line();
      if (!size_line) {
        return false;
      }
      const std::size_t size = std::strtoull(size_line->c_str(), nullptr, 16);
      if (size == 0) {
        for (;;) {  // trailers, then the empty line
          auto trailer = reader.line();
          if (!trailer) {
            return false;
          }
          if (trailer->empty()) {
            return true;
          }
        }
      }
      if (!reader.need(size + 2)) {
        return false;
      }
      request.body += reader.take(size);
      reader.take(2);
    }
  }
  const std::string length = request.field("Content-Length");
  if (!length.empty()) {
    const std::size_t size = std::strtoull(length.c_str(), nullptr, 10);
    if (!reader.need(size)) {
      return false;
    }
    request.body = reader.take(size);
  }
  return true;
}

void record(HttpOrigin::State& state, HttpOrigin::Request request) {
  std::lock_guard lock(state.mutex);
  state.requests.push_back(std::move(request));
  state.arrived.notify_all();
}

bool send_stream(int fd, const HttpOrigin::Reply& reply) {
  std::uint64_t offset = 0;
  while (offset < reply.stream_bytes) {
    const std::size_t size =
        static_cast<std::size_t>(std::min<std::uint64_t>(65536, reply.stream_bytes - offset));
    std::string piece = HttpOrigin::pattern(offset, size);
    if (reply.stream_chunked) {
      char size_line[32];
      std::snprintf(size_line, sizeof size_line, "%zx\r\n", size);
      piece = size_line + piece + "\r\n";
    }
    if (!send_all(fd, piece)) {
      return false;
    }
    offset += size;
  }
  if (reply.stream_chunked) {
    return send_all(fd, "0\r\n\r\n");
  }
  return true;
}

void echo(int fd, std::string early) {
  if (!early.empty() && !send_all(fd, early)) {
    return;
  }
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0 || !send_all(fd, std::string_view(buffer, static_cast<std::size_t>(n)))) {
      break;
    }
  }
  ::shutdown(fd, SHUT_WR);
}

void serve_http_connection(std::shared_ptr<HttpOrigin::State> state, int fd,
                           std::size_t connection) {
  Reader reader(fd, *state);
  for (;;) {
    HttpOrigin::Request request;
    request.connection = connection;
    auto head = reader.head();
    if (!head) {
      break;
    }
    request.head = std::move(*head);
    parse_head(request);
    HttpOrigin::Reply reply =
        state->handler ? state->handler(request) : HttpOrigin::Reply::fixed(200, "hello");
    if (!reply.interim.empty() && !send_all(fd, reply.interim)) {
      break;
    }
    if (reply.read_body) {
      if (!read_body(reader, request)) {
        break;
      }
      request.complete = true;
      if (state->handler) {
        reply = state->handler(request);
      }
    }
    request.raw = reader.consumed();
    record(*state, std::move(request));

    if (!send_all(fd, reply.head) || !send_all(fd, reply.body) || !send_stream(fd, reply)) {
      break;
    }
    if (reply.echo) {
      echo(fd, reader.rest());
      break;
    }
    if (reply.reset) {
      linger hard{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      break;
    }
    if (reply.close) {
      ::shutdown(fd, SHUT_WR);
      // Let the peer read everything before the descriptor goes away.
      char sink[4096];
      while (::recv(fd, sink, sizeof sink, 0) > 0) {
      }
      break;
    }
  }
  {
    std::lock_guard lock(state->mutex);
    std::erase(state->open_fds, fd);
  }
  ::close(fd);
}

void accept_http_connections(std::shared_ptr<HttpOrigin::State> state) {
  while (!state->stopping) {
    pollfd p{state->listener, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) {
      continue;
    }
    const int fd = ::accept(state->listener, nullptr, nullptr);
    if (fd < 0) {
      continue;
    }
    const std::size_t connection = ++state->connections;
    std::lock_guard lock(state->mutex);
    state->open_fds.push_back(fd);
    state->handlers.emplace_back(serve_http_connection, state, fd, connection);
  }
}

}  // namespace

std::string HttpOrigin::Request::field(std::string_view name) const {
  std::size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const std::size_t start = at + 2;
    const std::size_t end = head.find("\r\n", start);
    const std::string_view line(head.data() + start, end - start);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && rules::ascii_iequals(line.substr(0, colon), name)) {
      return std::string(rules::trim_ows(line.substr(colon + 1)));
    }
    at = end;
  }
  return {};
}

bool HttpOrigin::Request::has_field(std::string_view name) const {
  std::size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const std::size_t start = at + 2;
    const std::size_t end = head.find("\r\n", start);
    const std::string_view line(head.data() + start, end - start);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && rules::ascii_iequals(line.substr(0, colon), name)) {
      return true;
    }
    at = end;
  }
  return false;
}

HttpOrigin::Reply HttpOrigin::Reply::fixed(int status, std::string body, std::string extra_fields) {
  Reply reply;
  reply.head = "HTTP/1.1 " + std::to_string(status) +
               " Status\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_fields +
               "\r\n";
  reply.body = std::move(body);
  return reply;
}

HttpOrigin::Reply HttpOrigin::Reply::chunked(const std::vector<std::string>& pieces,
                                             std::string extra_fields) {
  Reply reply;
  reply.head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" + extra_fields + "\r\n";
  for (const auto& piece : pieces) {
    char size_line[32];
    std::snprintf(size_line, sizeof size_line, "%zx\r\n", piece.size());
    reply.body += size_line + piece + "\r\n";
  }
  reply.body += "0\r\n\r\n";
  return reply;
}

std::string HttpOrigin::pattern(std::uint64_t offset, std::size_t size) {
  std::string text(size, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    text[i] = pattern_byte(offset + i);
  }
  return text;
}

HttpOrigin::HttpOrigin(Handler handler, Family family) : state_(std::make_shared<State>()) {
  state_->handler = std::move(handler);
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
    ::close(state_->listener);
    throw std::runtime_error("HttpOrigin: cannot listen on loopback");
  }
  ::getsockname(state_->listener, reinterpret_cast<sockaddr*>(&address), &length);
  state_->port = ntohs(family == Family::v4 ? reinterpret_cast<sockaddr_in*>(&address)->sin_port
                                            : reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  state_->acceptor = std::thread(accept_http_connections, state_);
}

HttpOrigin::~HttpOrigin() {
  state_->stopping = true;
  state_->acceptor.join();
  ::close(state_->listener);
  std::vector<std::thread> handlers;
  {
    std::lock_guard lock(state_->mutex);
    for (const int fd : state_->open_fds) {
      ::shutdown(fd, SHUT_RDWR);  // wakes the connection's thread; it closes the descriptor
    }
    handlers.swap(state_->handlers);
  }
  for (auto& handler : handlers) {
    handler.join();
  }
}

std::uint16_t HttpOrigin::port() const { return state_->port; }
std::size_t HttpOrigin::connections() const { return state_->connections; }
std::uint64_t HttpOrigin::bytes_received() const { return state_->bytes_received; }

std::vector<HttpOrigin::Request> HttpOrigin::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}

bool HttpOrigin::wait_for_requests(std::size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  return state_->arrived.wait_for(lock, timeout, [&] { return state_->requests.size() >= count; });
}

}  // namespace sandgate::fakes
