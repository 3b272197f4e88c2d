// The frame floods nghttp2 does not bound by itself, counted per connection: streams reset (the
// rapid reset, CVE-2023-44487), PING and SETTINGS frames (CVE-2019-9512, 9515) and empty DATA
// frames (CVE-2019-9518). Each call says whether the peer is still within its limits; the first
// false ends the connection with GOAWAY ENHANCE_YOUR_CALM (the codec's job).
//
// Time comes from the Clock given, so a test can move it by hand. Single-threaded: the codec's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "proxy/session/exchange/h2/limits.hpp"
#include "proxy/session/exchange/h2/problems.hpp"

namespace sandgate::session::exchange::h2 {

// What the codecs read the time from: steady_clock's now() unless a test gives its own.
using Clock = std::function<std::chrono::steady_clock::time_point()>;

// A token bucket: `burst` tokens at first and at most, `per_second` more each second.
class TokenBucket {
 public:
  TokenBucket(std::uint32_t burst, std::uint32_t per_second,
              std::chrono::steady_clock::time_point now);
  // Takes a token; false when there was none.
  bool take(std::chrono::steady_clock::time_point now);
  // Gives a token back (a frame that earned one), up to the burst.
  void give();

 private:
  double burst_;
  double per_second_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

class FloodGuard {
 public:
  FloodGuard(const Limits& limits, Clock clock);

  // A stream the peer reset, or whose malformed or refused request the gate reset.
  bool stream_reset();
  // A PING or SETTINGS frame without ACK.
  bool control_frame();
  // A DATA frame received: empty without END_STREAM counts; any other ends the run.
  bool data_frame(std::size_t length, bool end_stream);
  // The gate sent a HEADERS or DATA frame: it earns the peer one control frame.
  void frame_sent();

  // The limit passed, after a call returned false.
  ConnectionError exceeded() const { return exceeded_; }

 private:
  bool fail(ConnectionError error);

  Clock clock_;
  TokenBucket resets_;
  TokenBucket control_frames_;
  std::uint32_t max_empty_frames_;
  std::uint32_t empty_frames_ = 0;
  ConnectionError exceeded_ = ConnectionError::none;
};

}  // namespace sandgate::session::exchange::h2
