// The handler-driven tunnel relay. See tunnel_relay.hpp. Every handler first counts itself off
// `pending_`, and every path through a handler ends in maybe_done(), which calls `done_` once no
// handler is outstanding and both directions have ended.
#include "proxy/relay/tunnel_relay.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

namespace sandgate::relay {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using clock = std::chrono::steady_clock;

// The copy path's buffer (no pipe could be had, or not Linux).
constexpr std::size_t kChunk = 64 * 1024;
// The buffer the client's first bytes are read into while a first-bytes check holds them: a
// TLS ClientHello or a request head fits, and a larger first message goes on by splice.
constexpr std::size_t kFirstRead = 16 * 1024;
// Bytes a direction moves in a row, reading again as soon as the pipe is empty, before it yields
// to the worker's other work with a readiness wait; at least one pipeful. 512 KiB: the eight
// 64 KiB pipefuls of the burst measured in bench/results/2026-11-26/ab-relay.md.
constexpr std::size_t kBurstBytes = 512 * 1024;
// What a direction cut by its allowance reads and throws away before the tunnel is reset.
constexpr std::size_t kDiscardLimit = 1024 * 1024;

bool would_block(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

// The allocator of the relay's readiness waits: exactly the operation's size from malloc. Without
// one, Asio takes an operation's memory from its per-thread recycling cache, whose blocks keep
// the size of whatever used them first (a set-up coroutine's write, its frame), so an idle
// tunnel's two waits held about 550 bytes instead of about 200 (bench/results/2026-11-27/
// README.md). Binding any allocator but std::allocator makes Asio use it instead of the cache.
template <typename T>
struct ExactAllocator {
  using value_type = T;
  ExactAllocator() = default;
  template <typename U>
  ExactAllocator(const ExactAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
  template <typename U>
  bool operator==(const ExactAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename Handler>
auto exact(Handler&& handler) {
  return asio::bind_allocator(ExactAllocator<void>{}, std::forward<Handler>(handler));
}

}  // namespace

TunnelRelay::TunnelRelay(tcp::socket& client, tcp::socket& upstream, PipePool& pipes,
                         IdleSweep& idle, std::chrono::seconds idle_timeout, Done done)
    : up_{&client, &upstream, {}, 0, nullptr, &result_.bytes_up},
      down_{&upstream, &client, {}, 0, nullptr, &result_.bytes_down},
      pipes_(pipes),
      idle_(idle),
      done_(std::move(done)) {
  this->idle_timeout = idle_timeout;
  last_activity = clock::now();
}

TunnelRelay::~TunnelRelay() { idle_.forget(*this); }

void TunnelRelay::watch_first_bytes(FirstBytesCheck check, std::chrono::milliseconds patience) {
  watch_ = std::make_unique<FirstBytesWatch>();
  watch_->check = std::move(check);
  watch_->patience = patience;
}

template <typename Body>
void TunnelRelay::guarded(Direction& d, Body&& body) {
  try {
    body();
  } catch (...) {
    if (!failed_) {
      result_.outcome = Outcome::internal_error;
    }
    fail(d);
  }
}

void TunnelRelay::start() {
  // No native_non_blocking() here: the readiness waits below are the first thing done on both
  // sockets, and Asio puts a socket in non-blocking mode (once: it remembers) before it starts
  // any operation on it, so both are non-blocking before a handler splices or reads. The reads
  // and writes this relay makes itself say so in their flags as well.
  if (idle_timeout.count() > 0) {
    idle_.watch(*this, up_.from->get_executor());
  }
  wait_readable(up_);
  wait_readable(down_);
}

void TunnelRelay::wait_readable(Direction& d) {
  ++pending_;
  d.from->async_wait(tcp::socket::wait_read, exact([this, &d](boost::system::error_code error) {
                       --pending_;
                       if (error || failed_) {
                         if (!failed_ && (!d.from->is_open() || !d.to->is_open())) {
                           result_.outcome = Outcome::aborted;  // closed from outside: the drain
                         }
                         fail(d);
                         return;
                       }
                       guarded(d, [this, &d] { on_readable(d); });
                     }));
}

// The client's bytes while the check watches them: read (not peeked, which would cost a system
// call more: the read is the relay's own), judged, and written on by the copy path as far as the
// check releases them; a refused tunnel ends with none of the refused bytes relayed. Bytes read
// and not yet released wait in the copy path's buffer (`in_flight`), uncounted, or between two
// reads in the watch's `held`.
void TunnelRelay::first_bytes_read(Direction& d) {
  FirstBytesWatch& watch = *watch_;
  if (!d.buffer) {
    d.buffer = std::make_unique_for_overwrite<char[]>(kFirstRead);
    std::memcpy(d.buffer.get(), watch.held.data(), watch.held.size());
    d.in_flight = watch.held.size();
    watch.judged = watch.held.size();
    watch.held.clear();
  }
  std::size_t room = kFirstRead - d.in_flight;
  if (allowance_ != nullptr && room > 0) {
    room = allowed(d, room);
    if (room == 0) {
      return;
    }
  }
  const ssize_t got =
      room == 0 ? 0
                : ::recv(d.from->native_handle(), d.buffer.get() + d.in_flight, room, MSG_DONTWAIT);
  if (allowance_ != nullptr) {
    settle(d, room, got);
  }
  bool eof = false;
  if (got > 0) {
    d.in_flight += static_cast<std::size_t>(got);
  } else if (got == 0) {
    eof = true;
  } else if (!would_block(errno)) {
    fail(d);
    return;
  } else if (d.in_flight == 0) {
    d.buffer.reset();
    wait_readable(d);  // spurious wake-up
    return;
  }
  if (d.in_flight == 0) {
    // The end before any byte: nothing to judge.
    watch_.reset();
    d.buffer.reset();
    finish_direction(d, true);
    return;
  }
  const FirstBytesLook look = look_at_first_bytes(d, eof);
  switch (look.verdict) {
    case FirstBytesVerdict::pass:
      watch_.reset();  // no timer wait is pending: this is its handler or a readiness one
      *d.bytes += d.in_flight;
      d.more = d.in_flight == kFirstRead;
      d.eof_read = eof;
      drain(d);  // no pipe is held: the copy path's write
      return;
    case FirstBytesVerdict::refuse:
      watch_.reset();
      if (!failed_) {
        result_.outcome = Outcome::refused;
      }
      fail(d);
      return;
    case FirstBytesVerdict::watch:
      break;
  }
  if (look.hold < d.in_flight) {
    relay_released(d, look.hold);
    return;
  }
  // Everything read so far is held: a prefix of what the check looks for, and nothing more yet
  // (only a client that sends such a prefix and then stops is ever here).
  look_again_soon(d);
}

FirstBytesLook TunnelRelay::look_at_first_bytes(Direction& d, bool eof) {
  FirstBytesWatch& watch = *watch_;
  const std::string_view fresh(d.buffer.get() + watch.judged, d.in_flight - watch.judged);
  watch.judged = d.in_flight;
  FirstBytesLook look = watch.check(fresh, eof);
  look.hold = std::min(look.hold, d.in_flight);
  if (look.verdict == FirstBytesVerdict::watch && eof) {
    // Nothing more will come to watch; what was held is judged by the check's end look.
    look.verdict = look.hold > 0 ? FirstBytesVerdict::refuse : FirstBytesVerdict::pass;
  }
  const auto now = clock::now();
  if (look.verdict == FirstBytesVerdict::watch && look.hold > 0) {
    if (!watch.deadline) {
      watch.deadline = now + watch.patience;
    }
    if (now >= *watch.deadline || look.hold == kFirstRead) {
      look.verdict = FirstBytesVerdict::refuse;  // a held prefix that never completes
    }
  } else {
    watch.deadline.reset();
  }
  return look;
}

void TunnelRelay::relay_released(Direction& d, std::size_t hold) {
  // After the write the copy path reads on at once when bytes are held (`more`), so that the
  // patience is watched.
  FirstBytesWatch& watch = *watch_;
  watch.held.assign(d.buffer.get() + d.in_flight - hold, hold);
  d.in_flight -= hold;
  *d.bytes += d.in_flight;
  d.more = !watch.held.empty() || d.in_flight + hold == kFirstRead;
  d.eof_read = false;
  drain(d);
}

void TunnelRelay::look_again_soon(Direction& d) {
  FirstBytesWatch& watch = *watch_;
  if (!watch.timer) {
    watch.timer = std::make_unique<asio::steady_timer>(d.from->get_executor());
  }
  ++pending_;
  watch.timer->expires_after(std::chrono::milliseconds(20));
  watch.timer->async_wait([this, &d](boost::system::error_code error) {
    --pending_;
    if (error || failed_ || !d.from->is_open() || !d.to->is_open()) {
      if (!failed_ && (!d.from->is_open() || !d.to->is_open())) {
        result_.outcome = Outcome::aborted;
      }
      fail(d);
      return;
    }
    guarded(d, [this, &d] { on_readable(d); });
  });
}

void TunnelRelay::on_readable(Direction& d) {
  if (d.discarding) {
    discard(d);
    return;
  }
  if (&d == &up_ && watch_) {
    first_bytes_read(d);
    return;
  }
#ifdef __linux__
  if (d.pipe.read_fd < 0) {
    d.pipe = pipes_.acquire();
  }
  if (d.pipe.read_fd >= 0) {
    // As much as the socket has, up to a pipeful (and what the allowance lets through).
    std::size_t wanted = d.pipe.capacity;
    if (allowance_ != nullptr) {
      wanted = allowed(d, wanted);
      if (wanted == 0) {
        return;
      }
    }
    const ssize_t in = ::splice(d.from->native_handle(), nullptr, d.pipe.write_fd, nullptr, wanted,
                                SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    const int splice_error = errno;
    if (allowance_ != nullptr) {
      settle(d, wanted, in);
    }
    errno = splice_error;
    if (in > 0) {
      d.in_flight = static_cast<std::size_t>(in);
      // A read that did not fill the pipe took what the socket had: the next one would see
      // EAGAIN, so drain() waits for readiness instead of asking (the wait re-arms readiness
      // and completes at once if more came meanwhile).
      d.more = d.in_flight >= wanted;
      *d.bytes += static_cast<std::uint64_t>(in);
      drain(d);
      return;
    }
    const int error = errno;
    pipes_.release(d.pipe);
    d.pipe = {};
    d.burst = 0;
    d.more = false;
    if (in == 0) {
      finish_direction(d, true);
    } else if (would_block(error)) {
      wait_readable(d);  // spurious wake-up
    } else {
      fail(d);
    }
    return;
  }
#endif
  copy_read(d);
}

// Writes what the pipe (or buffer) holds; waits for the destination to take more when full.
void TunnelRelay::drain(Direction& d) {
  last_activity = clock::now();
#ifdef __linux__
  if (d.pipe.read_fd >= 0) {
    // SPLICE_F_MORE (MSG_MORE) when the read filled the pipe, so more is very likely queued
    // behind it: the kernel then need not send a short segment at the end of this pipeful. If
    // nothing follows after all, the held tail leaves with the next ACK (the pipeful before it
    // is still unacknowledged), and the last, partly filled pipeful of a stream goes without it.
    const unsigned int flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | (d.more ? SPLICE_F_MORE : 0U);
    while (d.in_flight > 0) {
      const ssize_t out =
          ::splice(d.pipe.read_fd, nullptr, d.to->native_handle(), nullptr, d.in_flight, flags);
      if (out > 0) {
        d.in_flight -= static_cast<std::size_t>(out);
        d.burst += static_cast<std::size_t>(out);
        continue;
      }
      if (out < 0 && would_block(errno)) {
        ++pending_;
        d.to->async_wait(tcp::socket::wait_write, [this, &d](boost::system::error_code error) {
          --pending_;
          if (error || failed_) {
            fail(d);
            return;
          }
          guarded(d, [this, &d] { drain(d); });
        });
        return;
      }
      fail(d);
      return;
    }
    // Empty again. While the source keeps having more (the last read filled the pipe), read on
    // without a readiness wait, until a read comes back short or EAGAIN or the burst's bytes
    // are moved, so that one busy tunnel cannot hold the worker's thread.
    if (d.more && d.burst < kBurstBytes) {
      on_readable(d);
      return;
    }
    d.more = false;
    d.burst = 0;
    pipes_.release(d.pipe);
    d.pipe = {};
    wait_readable(d);
    return;
  }
#endif
  // The copy path writes its buffer in one asynchronous write; then, like the splice path, reads
  // on at once only when the last read filled the buffer, else waits for readiness.
  ++pending_;
  asio::async_write(*d.to, asio::buffer(d.buffer.get(), d.in_flight),
                    [this, &d](boost::system::error_code error, std::size_t) {
                      --pending_;
                      d.buffer.reset();
                      d.in_flight = 0;
                      if (error || failed_) {
                        fail(d);
                        return;
                      }
                      guarded(d, [this, &d] {
                        if (d.eof_read) {
                          finish_direction(d, true);
                        } else if (d.more) {
                          d.more = false;
                          on_readable(d);
                        } else {
                          wait_readable(d);
                        }
                      });
                    });
}

// Without a pipe: read what is there into a buffer that lives only until it is written.
void TunnelRelay::copy_read(Direction& d) {
  // recv() itself, not read_some(): the socket is non-blocking in the kernel but not in Asio's
  // user mode, where read_some() would wait (poll) on EAGAIN instead of returning it.
  std::size_t wanted = kChunk;
  if (allowance_ != nullptr) {
    wanted = allowed(d, wanted);
    if (wanted == 0) {
      return;
    }
  }
  d.buffer = std::make_unique_for_overwrite<char[]>(kChunk);  // no zeroing: recv fills it
  const ssize_t got = ::recv(d.from->native_handle(), d.buffer.get(), wanted, MSG_DONTWAIT);
  const int recv_error = errno;
  if (allowance_ != nullptr) {
    settle(d, wanted, got);
  }
  errno = recv_error;
  if (got < 0 && would_block(errno)) {
    d.buffer.reset();
    wait_readable(d);
    return;
  }
  if (got == 0) {
    d.buffer.reset();
    finish_direction(d, true);
    return;
  }
  if (got < 0) {
    d.buffer.reset();
    fail(d);
    return;
  }
  const auto n = static_cast<std::size_t>(got);
  d.in_flight = n;
  d.more = n == wanted;
  *d.bytes += n;
  drain(d);
}

std::size_t TunnelRelay::allowed(Direction& d, std::size_t wanted) {
  const std::size_t granted = allowance_->reserve(&d == &up_, wanted);
  if (granted > 0) {
    return granted;
  }
  // Nothing more may move this way. If the source has ended (or has nothing yet), that is no
  // cut: look before cutting.
  char probe = 0;
  const ssize_t got = ::recv(d.from->native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got == 0) {
    if (d.pipe.read_fd >= 0) {
      pipes_.release(d.pipe);
      d.pipe = {};
    }
    if (d.buffer && d.in_flight == 0) {
      d.buffer.reset();
    }
    finish_direction(d, true);
  } else if (got < 0 && would_block(errno)) {
    if (d.pipe.read_fd >= 0) {
      pipes_.release(d.pipe);
      d.pipe = {};
    }
    d.more = false;
    d.burst = 0;
    if (!(watch_ && &d == &up_ && d.in_flight > 0)) {
      d.buffer.reset();
    }
    wait_readable(d);
  } else if (got < 0) {
    fail(d);
  } else {
    if (d.pipe.read_fd >= 0) {
      pipes_.release(d.pipe);  // empty: nothing is read while the direction is held
      d.pipe = {};
    }
    d.more = false;
    d.burst = 0;
    ++pending_;
    const bool held = allowance_->hold(&d == &up_, [this, &d](bool go_on) {
      --pending_;
      if (failed_ || d.done) {
        maybe_done();
        return;
      }
      last_activity = clock::now();  // the wait was a person's, not an idle tunnel's
      guarded(d, [this, &d, go_on] {
        if (go_on) {
          on_readable(d);
        } else {
          cut(d);
        }
      });
    });
    if (!held) {
      --pending_;
      cut(d);
    }
  }
  return 0;
}

void TunnelRelay::settle(Direction& d, std::size_t reserved, ssize_t got) {
  allowance_->settle(&d == &up_, reserved, got > 0 ? static_cast<std::size_t>(got) : 0);
}

void TunnelRelay::cut(Direction& d) {
  if (!failed_ && result_.outcome == Outcome::closed) {
    result_.outcome = Outcome::budget_exhausted;
  }
  if (d.pipe.read_fd >= 0) {
    pipes_.release(d.pipe);  // empty: a read is only made with nothing in flight
    d.pipe = {};
  }
  d.buffer.reset();
  d.in_flight = 0;
  watch_.reset();  // held first bytes are never relayed now
  boost::system::error_code ignored;
  d.to->shutdown(tcp::socket::shutdown_send, ignored);
  d.discarding = true;
  discard(d);
}

// A cut direction: its source's bytes are read and dropped until its end, so that closing the
// sockets later sends no reset; one that sends more than kDiscardLimit is reset.
void TunnelRelay::discard(Direction& d) {
  char scrap[16 * 1024];
  for (;;) {
    const ssize_t got = ::recv(d.from->native_handle(), scrap, sizeof scrap, MSG_DONTWAIT);
    if (got > 0) {
      d.discarded += static_cast<std::size_t>(got);
      if (d.discarded > kDiscardLimit) {
        fail(d);
        return;
      }
      continue;
    }
    if (got == 0) {
      finish_direction(d, true);
      return;
    }
    if (would_block(errno)) {
      wait_readable(d);
      return;
    }
    fail(d);
    return;
  }
}

// The end of one direction's stream: pass the half-close on, let the other direction run. When
// the other direction has already ended, the tunnel is over: both sockets are closed here, and
// that close sends the FIN a shutdown would have (everything each socket had to give has been
// read, up to its end, so the close is orderly, never a reset), one system call fewer.
void TunnelRelay::finish_direction(Direction& d, bool eof) {
  boost::system::error_code ignored;
  Direction& other = &d == &up_ ? down_ : up_;
  if (eof && other.done && !failed_) {
    d.to->close(ignored);
    d.from->close(ignored);
  } else if (eof) {
    d.to->shutdown(tcp::socket::shutdown_send, ignored);
  }
  d.done = true;
  maybe_done();
}

// An error on either side ends the whole tunnel: the other side is reset (linger 0) so its peer
// learns the connection broke, and the other direction's pending wait completes as cancelled.
void TunnelRelay::fail(Direction& d) {
  d.done = true;
  if (d.pipe.read_fd >= 0) {
    pipes_.discard(d.pipe);  // it may still hold bytes nobody will read
    d.pipe = {};
  }
  if (watch_ && watch_->timer) {
    watch_->timer->cancel();
  }
  if (!failed_) {
    failed_ = true;
    if (result_.outcome == Outcome::closed) {
      result_.outcome = Outcome::reset;
    }
    boost::system::error_code ignored;
    for (tcp::socket* socket : {up_.from, down_.from}) {
      if (socket->is_open()) {
        socket->set_option(asio::socket_base::linger(true, 0), ignored);
        socket->close(ignored);
      }
    }
  }
  maybe_done();
}

void TunnelRelay::expire_idle() {
  if (finished_ || failed_ || (up_.done && down_.done)) {
    return;
  }
  result_.outcome = Outcome::idle_timeout;
  fail(up_);
}

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::closed:
      return "closed";
    case Outcome::reset:
      return "reset";
    case Outcome::idle_timeout:
      return "idle-timeout";
    case Outcome::aborted:
      return "aborted";
    case Outcome::refused:
      return "refused";
    case Outcome::internal_error:
      return "error";
    case Outcome::budget_exhausted:
      return "budget-exhausted";
  }
  return "unknown";
}

void TunnelRelay::maybe_done() {
  if (finished_ || !up_.done || !down_.done) {
    return;
  }
  if (pending_ > 0) {
    return;
  }
  finished_ = true;
  idle_.forget(*this);
  auto done = std::move(done_);
  done(result_);  // may destroy *this: nothing after this line
}

}  // namespace sandgate::relay
