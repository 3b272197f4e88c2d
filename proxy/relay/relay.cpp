// The tunnel relay. See relay.hpp for the design; each step below says why it is there.
#include "proxy/relay/relay.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <memory>

namespace sandgate::relay {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
using clock = std::chrono::steady_clock;

constexpr std::size_t kChunk = 64 * 1024;

// What both directions of one tunnel share.
struct Tunnel {
  tcp::socket& client;
  tcp::socket& upstream;
  PipePool& pipes;
  clock::time_point last_activity = clock::now();
  bool failed = false;   // a direction hit an error: the whole tunnel is torn down
  bool aborted = false;  // closed from outside
};

// Ends the tunnel after an error on one side: the other side is reset (linger 0) so the peer
// learns the connection broke, rather than seeing a clean end of stream or, worse, bytes the
// proxy made up.
void tear_down(Tunnel& tunnel) {
  tunnel.failed = true;
  boost::system::error_code ignored;
  for (tcp::socket* socket : {&tunnel.client, &tunnel.upstream}) {
    if (socket->is_open()) {
      socket->set_option(asio::socket_base::linger(true, 0), ignored);
      socket->close(ignored);
    }
  }
}

// The end of one direction's data: pass the half-close on and let the other direction run.
void pass_on_eof(tcp::socket& to) {
  boost::system::error_code ignored;
  to.shutdown(tcp::socket::shutdown_send, ignored);
}

bool would_block(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

// Copies through a heap buffer that lives only while bytes are in flight (non-Linux, or when no
// pipe could be had).
asio::awaitable<bool> copy_some(Tunnel& tunnel, tcp::socket& from, tcp::socket& to,
                                std::uint64_t& bytes, bool& eof) {
  auto buffer = std::make_unique<char[]>(kChunk);
  auto [read_error, n] = co_await from.async_read_some(asio::buffer(buffer.get(), kChunk), use_tuple);
  if (read_error == asio::error::eof) {
    eof = true;
    co_return true;
  }
  if (read_error) {
    co_return false;
  }
  auto [write_error, written] =
      co_await asio::async_write(to, asio::buffer(buffer.get(), n), use_tuple);
  if (write_error) {
    co_return false;
  }
  bytes += written;
  tunnel.last_activity = clock::now();
  co_return true;
}

#ifdef __linux__
// Moves what `from` has into `to` through a borrowed pipe. Returns false on error; sets `eof`
// at the end of `from`'s stream.
asio::awaitable<bool> splice_some(Tunnel& tunnel, tcp::socket& from, tcp::socket& to,
                                  std::uint64_t& bytes, bool& eof) {
  // Wait for data before borrowing a pipe, so idle tunnels hold none.
  auto [wait_error] = co_await from.async_wait(tcp::socket::wait_read, use_tuple);
  if (wait_error) {
    co_return false;
  }
  PipePool::Pipe pipe = tunnel.pipes.acquire();
  if (pipe.read_fd < 0) {
    co_return co_await copy_some(tunnel, from, to, bytes, eof);
  }
  const ssize_t in = ::splice(from.native_handle(), nullptr, pipe.write_fd, nullptr, kChunk,
                              SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (in == 0) {
    tunnel.pipes.release(pipe);
    eof = true;
    co_return true;
  }
  if (in < 0) {
    const int error = errno;
    tunnel.pipes.release(pipe);
    co_return would_block(error);  // a spurious wake-up is fine; anything else is a failure
  }
  // Drain the pipe completely into `to`, waiting whenever its send buffer is full.
  std::size_t left = static_cast<std::size_t>(in);
  while (left > 0) {
    const ssize_t out = ::splice(pipe.read_fd, nullptr, to.native_handle(), nullptr, left,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (out > 0) {
      left -= static_cast<std::size_t>(out);
      continue;
    }
    if (out < 0 && would_block(errno)) {
      auto [error] = co_await to.async_wait(tcp::socket::wait_write, use_tuple);
      if (!error) {
        continue;
      }
    }
    PipePool::destroy(pipe);  // it still holds bytes nobody will read
    co_return false;
  }
  tunnel.pipes.release(pipe);
  bytes += static_cast<std::uint64_t>(in);
  tunnel.last_activity = clock::now();
  co_return true;
}
#endif

// One direction of the tunnel, until its end of stream or an error.
asio::awaitable<void> transfer(Tunnel& tunnel, tcp::socket& from, tcp::socket& to,
                               std::uint64_t& bytes) {
  bool eof = false;
  while (!eof) {
#ifdef __linux__
    const bool ok = co_await splice_some(tunnel, from, to, bytes, eof);
#else
    const bool ok = co_await copy_some(tunnel, from, to, bytes, eof);
#endif
    if (!ok) {
      if (!tunnel.failed) {
        if (!from.is_open() || !to.is_open()) {
          tunnel.aborted = true;  // closed by the drain, not by a peer
        }
        tear_down(tunnel);
      }
      co_return;
    }
  }
  pass_on_eof(to);
}

// Completes when neither direction has moved a byte for `idle`.
asio::awaitable<void> idle_watch(Tunnel& tunnel, std::chrono::seconds idle) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    timer.expires_at(tunnel.last_activity + idle);
    auto [error] = co_await timer.async_wait(use_tuple);
    if (error) {
      co_return;  // cancelled: the tunnel ended first
    }
    if (clock::now() >= tunnel.last_activity + idle) {
      co_return;
    }
  }
}

}  // namespace

PipePool::~PipePool() {
  for (auto pipe : free_) {
    destroy(pipe);
  }
}

PipePool::Pipe PipePool::acquire() {
  if (!free_.empty()) {
    Pipe pipe = free_.back();
    free_.pop_back();
    return pipe;
  }
  int fds[2];
#ifdef __linux__
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return {};
  }
#else
  return {};
#endif
  return {fds[0], fds[1]};
}

void PipePool::release(Pipe pipe) {
  if (free_.size() < keep_) {
    free_.push_back(pipe);
  } else {
    destroy(pipe);
  }
}

void PipePool::destroy(Pipe pipe) {
  if (pipe.read_fd >= 0) {
    ::close(pipe.read_fd);
    ::close(pipe.write_fd);
  }
}

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::closed: return "closed";
    case Outcome::reset: return "reset";
    case Outcome::idle_timeout: return "idle-timeout";
    case Outcome::aborted: return "aborted";
    case Outcome::refused: return "refused";
    case Outcome::internal_error: return "error";
  }
  return "unknown";
}

asio::awaitable<Result> relay(tcp::socket& client, tcp::socket& upstream, PipePool& pipes,
                              std::chrono::seconds idle_timeout) {
  boost::system::error_code ignored;
  client.native_non_blocking(true, ignored);
  upstream.native_non_blocking(true, ignored);

  Tunnel tunnel{client, upstream, pipes};
  Result result;
  if (idle_timeout.count() > 0) {
    auto finished = co_await ((transfer(tunnel, client, upstream, result.bytes_up) &&
                               transfer(tunnel, upstream, client, result.bytes_down)) ||
                              idle_watch(tunnel, idle_timeout));
    if (finished.index() == 1) {
      result.outcome = Outcome::idle_timeout;
      co_return result;
    }
  } else {
    co_await (transfer(tunnel, client, upstream, result.bytes_up) &&
              transfer(tunnel, upstream, client, result.bytes_down));
  }
  if (tunnel.aborted) {
    result.outcome = Outcome::aborted;
  } else if (tunnel.failed) {
    result.outcome = Outcome::reset;
  }
  co_return result;
}

}  // namespace sandgate::relay
