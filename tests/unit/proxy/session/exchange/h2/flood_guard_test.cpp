// The frame-flood counting (proxy/session/exchange/h2/flood_guard.hpp) with a clock the test
// moves: each bucket's burst, its refill, and the run of empty frames.
#include "proxy/session/exchange/h2/flood_guard.hpp"

#include <gtest/gtest.h>

#include "tests/unit/proxy/session/exchange/h2/h2_test_support.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

using namespace std::chrono_literals;

TEST(H2FloodGuard, TokenBucketBurstThenRate) {
  std::chrono::steady_clock::time_point now{};
  TokenBucket bucket(3, 2, now);
  EXPECT_TRUE(bucket.take(now));
  EXPECT_TRUE(bucket.take(now));
  EXPECT_TRUE(bucket.take(now));
  EXPECT_FALSE(bucket.take(now));
  now += 499ms;
  EXPECT_FALSE(bucket.take(now));
  now += 1ms;  // half a second at 2 a second: one token
  EXPECT_TRUE(bucket.take(now));
  EXPECT_FALSE(bucket.take(now));
  now += 1h;  // never more than the burst
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(bucket.take(now)) << i;
  }
  EXPECT_FALSE(bucket.take(now));
  bucket.give();
  EXPECT_TRUE(bucket.take(now));
}

TEST(H2FloodGuard, ATimeGoingBackwardsGivesNothing) {
  std::chrono::steady_clock::time_point now{1h};
  TokenBucket bucket(1, 1, now);
  EXPECT_TRUE(bucket.take(now));
  EXPECT_FALSE(bucket.take(now - 10min));
  EXPECT_FALSE(bucket.take(now));
}

TEST(H2FloodGuard, ResetsAndControlFramesEachHaveTheirLimit) {
  testing::ManualClock clock;
  Limits limits;
  limits.stream_reset_burst = 2;
  limits.control_frame_burst = 2;
  FloodGuard guard(limits, clock.clock());
  EXPECT_TRUE(guard.stream_reset());
  EXPECT_TRUE(guard.control_frame());
  EXPECT_TRUE(guard.stream_reset());
  EXPECT_FALSE(guard.stream_reset());
  EXPECT_EQ(guard.exceeded(), ConnectionError::rapid_reset);
  EXPECT_TRUE(guard.control_frame());
  EXPECT_FALSE(guard.control_frame());
  EXPECT_EQ(guard.exceeded(), ConnectionError::rapid_reset);  // the first limit passed
}

TEST(H2FloodGuard, FramesSentEarnControlFrames) {
  testing::ManualClock clock;
  Limits limits;
  limits.control_frame_burst = 1;
  FloodGuard guard(limits, clock.clock());
  EXPECT_TRUE(guard.control_frame());
  EXPECT_FALSE(guard.control_frame());
  guard.frame_sent();
  EXPECT_TRUE(guard.control_frame());
}

TEST(H2FloodGuard, EmptyDataFramesInARun) {
  testing::ManualClock clock;
  Limits limits;
  limits.max_consecutive_empty_frames = 2;
  FloodGuard guard(limits, clock.clock());
  EXPECT_TRUE(guard.data_frame(0, false));
  EXPECT_TRUE(guard.data_frame(0, false));
  EXPECT_TRUE(guard.data_frame(0, true));  // END_STREAM: not empty of meaning
  EXPECT_TRUE(guard.data_frame(0, false));
  EXPECT_TRUE(guard.data_frame(0, false));
  EXPECT_FALSE(guard.data_frame(0, false));
  EXPECT_EQ(guard.exceeded(), ConnectionError::empty_frame_flood);
}

}  // namespace
}  // namespace sandgate::session::exchange::h2
