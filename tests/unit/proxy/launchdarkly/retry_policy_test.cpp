// The LaunchDarkly client's retry rules (proxy/launchdarkly/retry_policy.hpp), table-driven:
// which HTTP statuses are final (as the SDKs decide), Retry-After in both forms, and the
// backoff's growth, cap, jitter bounds and reset after a connection stayed open long enough.
#include "proxy/launchdarkly/retry_policy.hpp"

#include <gtest/gtest.h>

namespace sandgate::launchdarkly {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(RetryPolicy, FinalStatusesAreTheSdksOnes) {
  struct Case {
    unsigned status;
    bool recoverable;
  };
  for (const Case& c :
       {Case{400, true}, Case{401, false}, Case{403, false}, Case{404, false}, Case{405, false},
        Case{408, true}, Case{410, false}, Case{413, false}, Case{429, true}, Case{499, false},
        Case{500, true}, Case{502, true}, Case{503, true}, Case{504, true}, Case{301, true}}) {
    EXPECT_EQ(is_http_error_recoverable(c.status), c.recoverable) << c.status;
  }
  EXPECT_NE(describe_http_status(404).find("unknown client-side ID"), std::string::npos);
  EXPECT_NE(describe_http_status(401).find("client-side ID"), std::string::npos);
  EXPECT_NE(describe_http_status(403).find("client-side ID"), std::string::npos);
}

TEST(RetryPolicy, RetryAfterInSecondsOrAsADate) {
  const auto now =
      std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(parse_retry_after("120", now), std::chrono::milliseconds(120'000));
  EXPECT_EQ(parse_retry_after(" 0 ", now), std::chrono::milliseconds(0));
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            std::chrono::milliseconds(30'000));
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), std::chrono::milliseconds(0));
  // Bounded: a server cannot park the gate for days.
  EXPECT_EQ(parse_retry_after("99999999999999999999999", now),
            std::chrono::milliseconds(kMaxRetryAfter));
  // Dates past what system_clock's nanoseconds hold (after 2262) are far away, not "now".
  EXPECT_EQ(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now), kMaxRetryAfter);
  EXPECT_EQ(parse_retry_after("Mon, 01 Jan 2263 00:00:00 GMT", now), kMaxRetryAfter);
  EXPECT_EQ(parse_retry_after("Sat, 01 Jan 2300 00:00:00 GMT", now), kMaxRetryAfter);
  EXPECT_EQ(parse_retry_after("Mon, 01 Jan 1000 00:00:00 GMT", now), std::chrono::milliseconds(0));
  EXPECT_EQ(parse_retry_after("86400", now), std::chrono::milliseconds(kMaxRetryAfter));
  for (const char* bad : {"", "soon", "-5", "1.5", "12 s", "Sunday, 06-Nov-94 08:49:37 GMT"}) {
    EXPECT_FALSE(parse_retry_after(bad, now).has_value()) << bad;
  }
}

TEST(RetryPolicy, BackoffDoublesToItsCapWithJitterUpToHalf) {
  Timing timing;
  timing.jitter = false;
  Backoff plain(timing, 1);
  const auto now = Clock::now();
  for (auto expected : {1000ms, 2000ms, 4000ms, 8000ms, 16000ms, 30000ms, 30000ms}) {
    EXPECT_EQ(plain.next(now), expected);
  }
  plain.succeeded();
  EXPECT_EQ(plain.next(now), 1000ms);

  timing.jitter = true;
  Backoff jittered(timing, 7);
  for (auto base : {1000ms, 2000ms, 4000ms, 8000ms, 16000ms, 30000ms}) {
    const auto delay = jittered.next(now);
    EXPECT_LE(delay, base);
    EXPECT_GE(delay, base / 2);
  }
}

TEST(RetryPolicy, OnlyAConnectionOpenSixtySecondsResetsTheBackoff) {
  Timing timing;
  timing.jitter = false;
  Backoff backoff(timing, 1);
  const auto t0 = Clock::now();
  EXPECT_EQ(backoff.next(t0), 1000ms);
  EXPECT_EQ(backoff.next(t0), 2000ms);
  // Open 59 s: not long enough.
  backoff.opened(t0);
  EXPECT_EQ(backoff.next(t0 + 59s), 4000ms);
  // Time spent before the connection opened does not count: the attempt began at t0, the
  // headers came at t0 + 50 s, the stream ended at t0 + 70 s (open 20 s).
  backoff.opened(t0 + 50s);
  EXPECT_EQ(backoff.next(t0 + 70s), 8000ms);
  // Open 60 s: back to the first delay.
  backoff.opened(t0 + 100s);
  EXPECT_EQ(backoff.next(t0 + 160s), 1000ms);
  // A failure without an open connection in between does not reuse an old good time.
  EXPECT_EQ(backoff.next(t0 + 500s), 2000ms);
}

}  // namespace
}  // namespace sandgate::launchdarkly
