// The relay of every established byte stream: CONNECT tunnels and WebSocket connections after
// their 101. A small state machine driven by completion handlers: an idle tunnel holds no
// coroutine frames, only this object and one pending readiness wait per direction, which keeps
// the memory of an idle tunnel near the kernel's own socket cost.
//
// The contract: bytes both ways until both directions ended; the end of one direction's stream
// is passed on as a half-close (shutdown of the other socket's send side) while the other
// direction runs on; nothing of the proxy's own is ever written; an error on one side resets the
// other (linger 0). On Linux bytes move with splice(2) through a pipe borrowed from the worker's
// PipePool only while data is in flight; elsewhere (or without a pipe) through a 64 KiB buffer
// that exists only while data is in flight.
//
// Runs on the sockets' executor (one worker thread); not thread-safe.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/relay/idle_sweep.hpp"
#include "proxy/relay/pipe_pool.hpp"

namespace sandgate::relay {

enum class Outcome : std::uint8_t {
  closed,          // both sides finished normally
  reset,           // one side reset or failed; the other was reset
  idle_timeout,    // no byte in either direction for the idle timeout
  aborted,         // the sockets were closed from outside (drain deadline, reload)
  refused,         // the client's first bytes were refused (TunnelRelay::watch_first_bytes)
  internal_error,  // a handler failed unexpectedly (an exception); the tunnel was reset
  // A direction's ByteAllowance ran out: its destination got the end of the stream there.
  budget_exhausted,
};
// The end line's outcome: "closed", "reset", "idle-timeout", "aborted", "refused", "error",
// "budget-exhausted".
const char* to_string(Outcome outcome);

struct Result {
  Outcome outcome = Outcome::closed;
  std::uint64_t bytes_up = 0;    // client to upstream
  std::uint64_t bytes_down = 0;  // upstream to client
};

// What a first-bytes check says about the client's bytes so far.
enum class FirstBytesVerdict : std::uint8_t {
  pass,    // relay them and everything after; look no more
  watch,   // relay them, except the last `hold`, and look at what comes next
  refuse,  // end the tunnel (outcome refused) before another byte of them is relayed
};
struct FirstBytesLook {
  FirstBytesVerdict verdict = FirstBytesVerdict::pass;
  std::size_t hold = 0;  // with watch: how many of the last bytes to keep back for now
};

// How many bytes a relay may move (egress budgets, proxy/budget/): asked before every read, so
// that a direction stops at the exact byte where its allowance ends. Called on the relay's
// thread.
class ByteAllowance {
 public:
  virtual ~ByteAllowance() = default;
  // Up to `wanted` bytes `upward` (client to upstream) or downward may move now; what is
  // returned is held for the read. 0: none may, and the direction is cut.
  virtual std::size_t reserve(bool upward, std::size_t wanted) = 0;
  // Of what reserve() returned, `moved` bytes were read and relayed; the rest is given back.
  virtual void settle(bool upward, std::size_t reserved, std::size_t moved) = 0;
  // reserve() gave nothing while the source has bytes: true to hold the direction (nothing read
  // from it) until `resume` is called, once, on the relay's executor: true to read on (asking
  // reserve() again), false to cut. False (the default): cut now. A relay that ends meanwhile
  // still waits for `resume`.
  virtual bool hold(bool upward, std::function<void(bool go_on)> resume) {
    (void)upward;
    (void)resume;
    return false;
  }
};

// An IdleSweep::Entry: the worker's idle sweep ends it after its idle timeout without a byte.
class TunnelRelay : private IdleSweep::Entry {
 public:
  // `done` is called once, as the last thing this object does; it may destroy the relay.
  using Done = std::function<void(Result)>;
  // Sees the client's bytes, each once and in order (`bytes` are the ones it has not seen),
  // before any of them is relayed, for as long as it answers watch. `end`: the client's stream
  // ended after these. Bytes it holds back are relayed once a later look releases them; if none
  // does within the patience (or they fill the first-read buffer), the tunnel is refused: a
  // client that stops on a held prefix gets the stricter reading.
  using FirstBytesCheck = std::function<FirstBytesLook(std::string_view bytes, bool end)>;

  // `idle`: the worker's sweep that ends the tunnel after `idle_timeout` without a byte (none
  // when zero).
  TunnelRelay(boost::asio::ip::tcp::socket& client, boost::asio::ip::tcp::socket& upstream,
              PipePool& pipes, IdleSweep& idle, std::chrono::seconds idle_timeout, Done done);
  TunnelRelay(const TunnelRelay&) = delete;
  TunnelRelay& operator=(const TunnelRelay&) = delete;
  ~TunnelRelay();  // leaves the idle sweep (a relay that never ended: a test's)

  // Before start(): hold the client's first bytes to `check` (the gate's SSH recognition on
  // tunnels it did not inspect). Nothing waits for them: a server that speaks first is relayed
  // at once. `patience` bounds how long a need_more answer waits for more bytes.
  void watch_first_bytes(FirstBytesCheck check,
                         std::chrono::milliseconds patience = std::chrono::seconds(10));

  // Before start(): ask `allowance` before every read. When it gives nothing, the direction is
  // cut there: its destination gets the end of the stream (a FIN, nothing of the gate's own),
  // what its source still sends is read and thrown away (at most 1 MiB, so that the final close
  // is no reset that could destroy bytes a peer has not read yet), the other direction runs on,
  // and the outcome is budget_exhausted. A source that ends exactly at the allowance's end
  // ends normally. Must outlive the relay.
  void limit_bytes(ByteAllowance* allowance) { allowance_ = allowance; }

  // Starts relaying. Both sockets must be open and connected. `done` is called from a handler
  // on the sockets' executor, never from within start(). Destroying the relay before `done` is
  // not allowed (handlers point into it): close the sockets from outside instead (the drain, a
  // reload), which ends it with outcome aborted.
  void start();

 private:
  struct Direction {
    boost::asio::ip::tcp::socket* from;
    boost::asio::ip::tcp::socket* to;
    PipePool::Pipe pipe;
    std::size_t in_flight = 0;       // bytes in the pipe or buffer, not yet written
    std::unique_ptr<char[]> buffer;  // the copy path's buffer, only while in flight
    std::uint64_t* bytes;
    bool done = false;
    bool more = false;      // the last read filled the pipe (or buffer): the source likely has more
    bool eof_read = false;  // the source's end came with the held first bytes: pass it on after
    std::size_t burst = 0;  // bytes moved since the last readiness wait
    bool discarding = false;  // cut by the allowance: what comes is thrown away
    std::size_t discarded = 0;
  };

  void wait_readable(Direction& d);
  void on_readable(Direction& d);
  // The client's direction while the first-bytes check holds it: reads, judges, then relays
  // what passed (or ends the tunnel, or looks again shortly).
  void first_bytes_read(Direction& d);
  // The check's look at the bytes read since its last one (the whole buffer ends at
  // d.in_flight), its verdict final at the source's end or past the patience.
  FirstBytesLook look_at_first_bytes(Direction& d, bool eof);
  // Relays what the check released; the bytes it holds wait for the next read.
  void relay_released(Direction& d, std::size_t hold);
  // Everything read is held: looks again shortly rather than wait for readiness, so that the
  // patience's end is seen even if no byte ever comes.
  void look_again_soon(Direction& d);
  // Runs a handler's body; an exception ends the tunnel (outcome internal_error) instead of
  // escaping into the worker's loop and leaving the tunnel half-finished.
  template <typename Body>
  void guarded(Direction& d, Body&& body);
  void drain(Direction& d);
  void copy_read(Direction& d);
  // What the allowance lets `d` read now, at most `wanted`; 0 when the direction was cut (or
  // ended: an allowance spent exactly at the source's end is no cut), and then `d` has been
  // handled.
  std::size_t allowed(Direction& d, std::size_t wanted);
  void settle(Direction& d, std::size_t reserved, ssize_t got);
  void cut(Direction& d);
  void discard(Direction& d);
  void finish_direction(Direction& d, bool eof);
  void fail(Direction& d);
  // The sweep found no byte moved for the idle timeout.
  void expire_idle() override;
  void maybe_done();

  // The first-bytes check's state, only while it watches (most tunnels are passed on their first
  // read, and an idle tunnel pays for every byte it keeps).
  struct FirstBytesWatch {
    FirstBytesCheck check;
    std::chrono::milliseconds patience{0};
    std::optional<std::chrono::steady_clock::time_point> deadline;
    // Looks again while all is held (rare: a client stopped on a prefix), so made only then.
    std::unique_ptr<boost::asio::steady_timer> timer;
    std::size_t judged = 0;  // bytes of the first-read buffer it has seen
    std::string held;        // bytes it holds back between two reads
  };

  Direction up_;
  Direction down_;
  PipePool& pipes_;
  IdleSweep& idle_;
  Done done_;
  std::unique_ptr<FirstBytesWatch> watch_;
  ByteAllowance* allowance_ = nullptr;
  Result result_;
  int pending_ = 0;  // handlers outstanding; the relay ends when none are left
  bool failed_ = false;
  bool finished_ = false;
};

}  // namespace sandgate::relay
