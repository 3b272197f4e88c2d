// `sandgate watch`'s side of the admin routes: one request per connection (what the endpoint
// serves), and the /events stream read without blocking. Over TCP (a `serve`'s --admin address,
// loopback) or a unix socket (a `run`'s private socket). Plain POSIX sockets: the view's one
// thread polls the streams' descriptors beside the keyboard.
//
// Bounded: a reply of at most 1 MiB, each step within the timeout; a stream line of at most
// kMaxLine bytes (a longer one is skipped and counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::watch_view {

// Where a gate's admin routes are.
struct AdminAddress {
  std::string unix_path;  // a run's private socket; else TCP at host:port
  std::string host;       // an IP address
  std::uint16_t port = 0;
  std::string bearer;  // the token to send, or ""
  std::string text() const;
};

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

// One request (GET without a body, POST with a form body), read to the end.
Expected<HttpReply, std::string> exchange(const AdminAddress& where, std::string_view method,
                                          std::string_view target, std::string_view body = {},
                                          int timeout_ms = 5000);

// GET /events?answer=1 (or without answering): the stream of JSON lines. Owns its socket.
class EventStream {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;

  static Expected<EventStream, std::string> open(const AdminAddress& where, bool answering,
                                                 int timeout_ms = 5000);
  EventStream(EventStream&& other) noexcept;
  EventStream& operator=(EventStream&& other) noexcept;
  ~EventStream();

  int fd() const { return fd_; }
  // Reads what is there without blocking; the complete lines read (without '\n'). After the
  // gate closed the stream (or it failed) closed() is true.
  std::vector<std::string> read_lines();
  bool closed() const { return fd_ < 0; }
  std::uint64_t too_long() const { return too_long_; }

 private:
  explicit EventStream(int fd) : fd_(fd) {}
  void close();
  int fd_ = -1;
  std::string partial_;
  bool skipping_ = false;  // inside a line over kMaxLine
  std::uint64_t too_long_ = 0;
};

}  // namespace sandgate::watch_view
