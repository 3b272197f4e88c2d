// A fake HTTP/1.1 origin for tests: a real listening socket on loopback (IPv4 or IPv6, port 0),
// each connection served on its own thread with blocking I/O. It reads requests the way a
// careful server does (Content-Length or chunked bodies), records the raw bytes of every request
// so tests can assert exactly what the proxy forwarded, and answers with whatever the test's
// handler returns: a fixed or chunked body, a large body generated on the fly, an interim
// response first, a 101 followed by echoing, a response cut short, keep-alive or close.
//
// Thread-safe: the handler runs on connection threads; the accessors may be called from any
// thread. The destructor shuts every connection down and joins its thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::fakes {

class HttpOrigin {
 public:
  enum class Family { v4, v6 };

  // One request as it arrived.
  struct Request {
    std::string raw;   // head and body bytes exactly as received (chunk framing included)
    std::string head;  // the head, up to and including the empty line
    std::string method;
    std::string target;
    std::string body;            // the body, chunk framing removed
    std::size_t connection = 0;  // 1 for the first connection accepted, ...
    bool complete = false;       // the body has been read (see Handler)
    // The value of the first field named `name` (case-insensitive), or "" if none.
    std::string field(std::string_view name) const;
    bool has_field(std::string_view name) const;
  };

  // What to answer.
  struct Reply {
    std::string interim;    // sent before the body is read (e.g. "HTTP/1.1 100 Continue\r\n\r\n")
    bool read_body = true;  // read the request body before answering
    std::string head;       // status line and fields, with the final empty line
    std::string body;       // sent verbatim after the head
    // Then `stream_bytes` more bytes of pattern_byte(i), in pieces of 64 KiB; each piece as one
    // chunk when `stream_chunked` (the final chunk follows).
    std::uint64_t stream_bytes = 0;
    bool stream_chunked = false;
    bool close = false;  // close the connection after this reply (clean FIN)
    bool reset = false;  // reset it instead (SO_LINGER 0)
    bool echo = false;   // after the reply, echo every byte back until the peer closes

    // `HTTP/1.1 <status> <reason>` with Content-Length and the given extra fields ("A: b\r\n").
    static Reply fixed(int status, std::string body, std::string extra_fields = "");
    // A chunked body, one chunk per piece.
    static Reply chunked(const std::vector<std::string>& pieces, std::string extra_fields = "");
  };

  // Called when a request head has arrived (`complete` false): that reply's `interim` is sent
  // and its `read_body` decides whether the body is read. If it is, the handler is called again
  // with the whole request (`complete` true) and that reply is sent; otherwise the first one is.
  using Handler = std::function<Reply(const Request&)>;

  explicit HttpOrigin(Handler handler = {}, Family family = Family::v4);
  ~HttpOrigin();
  HttpOrigin(const HttpOrigin&) = delete;
  HttpOrigin& operator=(const HttpOrigin&) = delete;

  std::uint16_t port() const;
  std::size_t connections() const;        // accepted so far
  std::uint64_t bytes_received() const;   // from all clients
  std::vector<Request> requests() const;  // complete requests, in arrival order
  // Blocks until `count` requests have arrived or `timeout` passes; returns whether they did.
  bool wait_for_requests(std::size_t count,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

  // The generated body's byte at offset `i`.
  static char pattern_byte(std::uint64_t i) { return static_cast<char>('a' + i % 26); }
  static std::string pattern(std::uint64_t offset, std::size_t size);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sandgate::fakes
