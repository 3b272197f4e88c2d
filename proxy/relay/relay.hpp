// The tunnel relay: carries bytes both ways between the client and the upstream socket until both
// directions have ended, honouring half-close, and never writing a byte of its own.
//
// On Linux the bytes move with splice(2) through a pipe (zero copy). An idle tunnel holds no
// pipe and no buffer: a direction borrows a pipe from its worker's PipePool only while data is in
// flight, which keeps memory per idle tunnel small. Elsewhere a bounded buffer is used.
//
// All functions run on the socket's executor (one worker thread); nothing here is thread-safe.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <vector>

namespace sandgate::relay {

// A small per-worker pool of non-blocking pipes for splice(2).
class PipePool {
 public:
  struct Pipe {
    int read_fd = -1;
    int write_fd = -1;
  };
  explicit PipePool(std::size_t keep = 64) : keep_(keep) {}
  ~PipePool();
  PipePool(const PipePool&) = delete;
  PipePool& operator=(const PipePool&) = delete;

  // A pipe, or {-1,-1} when none can be created (descriptor limit): the caller copies instead.
  Pipe acquire();
  // Only an empty pipe may be returned; a pipe with bytes in it must be destroyed.
  void release(Pipe pipe);
  static void destroy(Pipe pipe);

 private:
  std::vector<Pipe> free_;
  std::size_t keep_;
};

enum class Outcome : std::uint8_t {
  closed,        // both sides finished normally
  reset,         // one side reset or failed; the other was reset or closed
  idle_timeout,  // no byte in either direction for the idle timeout
  aborted,       // the sockets were closed from outside (drain deadline, reload)
  refused,       // the client's first bytes were refused (TunnelRelay::watch_first_bytes)
  internal_error,  // a handler failed unexpectedly (an exception); the tunnel was reset
};
const char* to_string(Outcome outcome);

struct Result {
  Outcome outcome = Outcome::closed;
  std::uint64_t bytes_up = 0;    // client to upstream
  std::uint64_t bytes_down = 0;  // upstream to client
};

// Relays until both directions end. `idle_timeout` zero means none. Both sockets must be open
// and connected; the caller closes them afterwards.
boost::asio::awaitable<Result> relay(boost::asio::ip::tcp::socket& client,
                                     boost::asio::ip::tcp::socket& upstream, PipePool& pipes,
                                     std::chrono::seconds idle_timeout);

}  // namespace sandgate::relay
