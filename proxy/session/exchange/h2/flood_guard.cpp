// Frame-flood counting (flood_guard.hpp).
#include "proxy/session/exchange/h2/flood_guard.hpp"

#include <algorithm>
#include <utility>

namespace sandgate::session::exchange::h2 {

TokenBucket::TokenBucket(std::uint32_t burst, std::uint32_t per_second,
                         std::chrono::steady_clock::time_point now)
    : burst_(burst), per_second_(per_second), tokens_(burst), last_(now) {}

bool TokenBucket::take(std::chrono::steady_clock::time_point now) {
  if (now > last_) {
    const std::chrono::duration<double> elapsed = now - last_;
    tokens_ = std::min(burst_, tokens_ + elapsed.count() * per_second_);
    last_ = now;
  }
  if (tokens_ < 1.0) {
    return false;
  }
  tokens_ -= 1.0;
  return true;
}

void TokenBucket::give() { tokens_ = std::min(burst_, tokens_ + 1.0); }

FloodGuard::FloodGuard(const Limits& limits, Clock clock)
    : clock_(std::move(clock)),
      resets_(limits.stream_reset_burst, limits.stream_resets_per_second, clock_()),
      control_frames_(limits.control_frame_burst, limits.control_frames_per_second, clock_()),
      max_empty_frames_(limits.max_consecutive_empty_frames) {}

bool FloodGuard::stream_reset() {
  return resets_.take(clock_()) || fail(ConnectionError::rapid_reset);
}

bool FloodGuard::control_frame() {
  return control_frames_.take(clock_()) || fail(ConnectionError::control_frame_flood);
}

bool FloodGuard::data_frame(std::size_t length, bool end_stream) {
  if (length > 0 || end_stream) {
    empty_frames_ = 0;
    return true;
  }
  return ++empty_frames_ <= max_empty_frames_ || fail(ConnectionError::empty_frame_flood);
}

void FloodGuard::frame_sent() { control_frames_.give(); }

bool FloodGuard::fail(ConnectionError error) {
  if (exceeded_ == ConnectionError::none) {
    exceeded_ = error;
  }
  return false;
}

}  // namespace sandgate::session::exchange::h2
