// When the LaunchDarkly client tries again, and when it stops trying: the rules of LaunchDarkly's
// own client SDKs (launchdarkly-js-client-sdk 3.x with js-sdk-common 5.x, and
// @launchdarkly/js-client-sdk 4.x with js-client-sdk-common 1.x), so that a gate is as gentle
// with the service as an SDK is.
//
// Pure computation, no I/O and no clock of its own (times are passed in): unit-tested in
// tests/unit/proxy/launchdarkly. Not thread-safe; each Backoff belongs to one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::launchdarkly {

// The client's timing. The defaults are the SDKs' (initial retry delay 1 s, doubling to 30 s,
// up to half of each delay taken off at random, the backoff reset once a connection has been
// open 60 s); tests shrink them and switch the jitter off so that delays can be measured.
struct Timing {
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{30'000};
  std::chrono::milliseconds healthy_connection{60'000};
  // LaunchDarkly sends a heartbeat comment about every 3 minutes; 5 minutes of silence means
  // the stream is dead (the SDKs use the same read timeout).
  std::chrono::milliseconds stream_read_timeout{5 * 60'000};
  std::chrono::milliseconds stream_connect_timeout{10'000};
  bool jitter = true;
};

// Whether an HTTP error status is worth retrying. The SDKs' isHttpErrorRecoverable(): every 4xx
// is final except 400 (a bad request may be transient), 408 (timeout) and 429 (too many
// requests); 5xx and anything else is retried. A final status stops the client for good: a
// wrong client-side ID would otherwise cost LaunchDarkly a request every 30 s forever.
bool is_http_error_recoverable(unsigned status);

// "HTTP 404 (unknown client-side ID?)": the status with its likely cause, for the log.
std::string describe_http_status(unsigned status);

// The delay a `Retry-After` field asks for (RFC 9110 10.2.3: delta-seconds or an HTTP-date,
// relative to `now`), at most kMaxRetryAfter; nothing when absent or unreadable.
inline constexpr std::chrono::hours kMaxRetryAfter{1};
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

// Exponential backoff with jitter, reset only by a connection that stayed open long enough:
// launchdarkly-eventsource's default retry strategy, which both SDKs' streams use. A connection
// counts as good from when its response headers arrived (setGoodSince on open), not from when
// the attempt began: a server slow to answer must not make a failing stream look healthy.
class Backoff {
 public:
  using Clock = std::chrono::steady_clock;

  Backoff(const Timing& timing, std::uint64_t seed);

  // A connection opened (its response headers were accepted) at `now`.
  void opened(Clock::time_point now);
  // A request-response exchange succeeded: the next failure starts from the first delay.
  void succeeded();
  // An attempt failed, or an opened connection ended, at `now`: the delay before the next one.
  std::chrono::milliseconds next(Clock::time_point now);

 private:
  Timing timing_;
  unsigned attempts_ = 0;
  std::optional<Clock::time_point> good_since_;
  std::uint64_t seed_;
};

}  // namespace sandgate::launchdarkly
