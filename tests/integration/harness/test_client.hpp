// A blocking TCP client for integration tests, with timeouts on every read so a broken proxy
// fails the test instead of hanging it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::testing {

class TestClient {
 public:
  // Connects to 127.0.0.1:port (or [::1]:port). Throws std::runtime_error on failure.
  explicit TestClient(std::uint16_t port, bool ipv6 = false);
  ~TestClient();
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  void send(std::string_view data);
  void shutdown_write();
  void close();
  // The port this client's socket was given (what the gate sees as the client's).
  std::uint16_t local_port() const;

  // Reads until `delimiter` has arrived (returns everything read, which may go past it), or
  // the timeout passes or the peer closes (returns what arrived).
  std::string read_until(std::string_view delimiter,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Reads exactly `size` bytes or fewer on timeout / close.
  std::string read_exact(std::size_t size,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Reads until the peer closes; returns the bytes. `reset` tells whether it ended with a reset.
  std::string read_to_end(bool* reset = nullptr,
                          std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Bytes read past a delimiter by read_until are kept here and returned by the next read.
  std::string pending;

 private:
  int fd_ = -1;
};

// A parsed response head (status line and headers), from a proxy reply.
struct ResponseHead {
  int status = 0;
  std::string head;          // the whole head, CRLFs included
  std::string proxy_status;  // the Proxy-Status header's value, if any
  std::string body_after;    // bytes that followed the head in the same reads
};

// Reads a response head from `client`.
ResponseHead read_response_head(TestClient& client);

// Sends `CONNECT target HTTP/1.1` and reads the response head.
ResponseHead send_connect(TestClient& client, std::string_view target);

// A SOCKS5 request for a domain name (VER CMD RSV ATYP=3 LEN NAME PORT); `command` 1 is CONNECT.
std::string socks5_request_for_name(std::string_view name, std::uint16_t port, int command = 0x01);

}  // namespace sandgate::testing
