// Unit tests for ChangeLogic, the backend-neutral half of file watching: each event kind fed as a
// synthetic event on a synthetic clock, the quiet period and its restart, the wait for an open
// writer and its cap, timeouts handed to the backend, and the fingerprint comparison.

#include "proxy/watch/change_logic.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace sandgate::watch {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Clock = ChangeLogic::Clock;

constexpr auto kQuiet = 200ms;
const Timing kTiming{500ms, 2000ms};

Fingerprint print(std::uint64_t inode, std::int64_t size, std::int64_t mtime = 1) {
  Fingerprint p;
  p.exists = true;
  p.device = 1;
  p.inode = inode;
  p.size = size;
  p.mtime_ns = mtime;
  p.ctime_ns = mtime;
  return p;
}

class ChangeLogicTest : public ::testing::Test {
 protected:
  ChangeLogicTest() : logic_({"a.txt", "b.txt"}, {print(1, 10), print(2, 20)}, kTiming) {
    logic_.begin_wait(kQuiet);
  }
  ChangeLogic logic_;
  const Clock::time_point t0_{std::chrono::seconds(1000)};
};

TEST_F(ChangeLogicTest, NothingPendingWaitsThePollIntervalAndIsDueOnTheTick) {
  EXPECT_FALSE(logic_.pending());
  EXPECT_EQ(logic_.timeout(t0_), 500ms);
  EXPECT_TRUE(logic_.due(t0_));  // a plain tick compares fingerprints
}

// Every kind of event makes a reload pending and waits out the quiet period.
class EveryEvent : public ::testing::TestWithParam<Event> {};

TEST_P(EveryEvent, MakesAReloadPendingUntilQuiet) {
  ChangeLogic logic({"a.txt"}, {print(1, 10)}, kTiming);
  logic.begin_wait(kQuiet);
  const Clock::time_point t0{std::chrono::seconds(5)};
  logic.on_event(GetParam(), t0);
  EXPECT_TRUE(logic.pending()) << to_string(GetParam());
  const auto settle = GetParam() == Event::modified ? kTiming.open_writer_cap : kQuiet;
  EXPECT_EQ(logic.timeout(t0), std::min<std::chrono::milliseconds>(settle, 500ms));
  EXPECT_FALSE(logic.due(t0 + settle - 1ms));
  EXPECT_TRUE(logic.due(t0 + settle));
  EXPECT_FALSE(logic.pending());
}

INSTANTIATE_TEST_SUITE_P(Kinds, EveryEvent,
                         ::testing::Values(Event::created, Event::modified, Event::write_closed,
                                           Event::written, Event::moved_in, Event::moved_away,
                                           Event::deleted, Event::attributes,
                                           Event::folder_changed),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST_F(ChangeLogicTest, EachEventRestartsTheQuietPeriod) {
  // An editor's save: write a temporary, rename it over the file, fix its mode.
  logic_.on_event(Event::moved_away, t0_);
  logic_.on_event(Event::moved_in, t0_ + 150ms);
  EXPECT_FALSE(logic_.due(t0_ + 250ms));  // 100 ms after the last event
  logic_.on_event(Event::attributes, t0_ + 300ms);
  EXPECT_FALSE(logic_.due(t0_ + 450ms));
  EXPECT_EQ(logic_.timeout(t0_ + 450ms), 50ms);
  EXPECT_TRUE(logic_.due(t0_ + 500ms));
}

TEST_F(ChangeLogicTest, AnOpenWriterIsWaitedForUntilItClosesTheFile) {
  logic_.on_event(Event::created, t0_);
  logic_.on_event(Event::modified, t0_ + 10ms);
  EXPECT_TRUE(logic_.open_writer());
  // A writer pausing longer than the quiet period is still waited for.
  EXPECT_FALSE(logic_.due(t0_ + 10ms + kQuiet + 300ms));
  logic_.on_event(Event::write_closed, t0_ + 1000ms);
  EXPECT_FALSE(logic_.open_writer());
  EXPECT_FALSE(logic_.due(t0_ + 1100ms));
  EXPECT_TRUE(logic_.due(t0_ + 1000ms + kQuiet));
}

TEST_F(ChangeLogicTest, AWriterThatNeverClosesIsWaitedForAtMostTheCap) {
  logic_.on_event(Event::modified, t0_);
  EXPECT_EQ(logic_.timeout(t0_), 500ms);  // the poll interval is shorter than the cap
  EXPECT_EQ(logic_.timeout(t0_ + 1800ms), 200ms);
  EXPECT_FALSE(logic_.due(t0_ + 1999ms));
  EXPECT_TRUE(logic_.due(t0_ + 2000ms));
  EXPECT_FALSE(logic_.open_writer());  // cleared for the next wait
}

TEST_F(ChangeLogicTest, EventsThatEndAWriteClearTheOpenWriter) {
  for (const Event end : {Event::write_closed, Event::moved_in, Event::created, Event::deleted}) {
    logic_.begin_wait(kQuiet);
    logic_.on_event(Event::modified, t0_);
    logic_.on_event(end, t0_ + 1ms);
    EXPECT_FALSE(logic_.open_writer()) << to_string(end);
    EXPECT_TRUE(logic_.due(t0_ + 1ms + kQuiet)) << to_string(end);
  }
}

TEST_F(ChangeLogicTest, SideEventsDoNotCutAnOpenWritersWaitShort) {
  for (const Event side : {Event::attributes, Event::moved_away, Event::folder_changed}) {
    logic_.begin_wait(kQuiet);
    logic_.on_event(Event::modified, t0_);
    logic_.on_event(side, t0_ + 1ms);
    EXPECT_TRUE(logic_.open_writer()) << to_string(side);
    EXPECT_FALSE(logic_.due(t0_ + 1ms + kQuiet)) << to_string(side);
  }
}

TEST_F(ChangeLogicTest, WrittenWithoutACloseSettlesOnTheQuietPeriodAlone) {
  // kqueue reports writes but no close: each write restarts the quiet period, and nothing waits
  // for a close that will not be reported.
  logic_.on_event(Event::written, t0_);
  logic_.on_event(Event::written, t0_ + 150ms);
  EXPECT_FALSE(logic_.open_writer());
  EXPECT_FALSE(logic_.due(t0_ + 300ms));
  EXPECT_TRUE(logic_.due(t0_ + 350ms));
}

TEST_F(ChangeLogicTest, BeginWaitForgetsWhatAnEarlierWaitLeftPending) {
  logic_.on_event(Event::modified, t0_);
  logic_.begin_wait(kQuiet);
  EXPECT_FALSE(logic_.pending());
  EXPECT_FALSE(logic_.open_writer());
  EXPECT_TRUE(logic_.due(t0_));
}

TEST_F(ChangeLogicTest, TimeoutIsNeverNegative) {
  logic_.on_event(Event::deleted, t0_);
  EXPECT_EQ(logic_.timeout(t0_ + 10s), 0ms);
}

TEST(ChangeLogicQuiet, ZeroAndNegativeQuietAreDueAtOnce) {
  ChangeLogic logic({"a"}, {print(1, 1)}, kTiming);
  logic.begin_wait(-5ms);
  const Clock::time_point t0{std::chrono::seconds(1)};
  logic.on_event(Event::created, t0);
  EXPECT_EQ(logic.timeout(t0), 0ms);
  EXPECT_TRUE(logic.due(t0));
}

// ---- Fingerprints: which paths changed ----

TEST_F(ChangeLogicTest, SameFingerprintsMeanNoChange) {
  EXPECT_THAT(logic_.compare({print(1, 10), print(2, 20)}), IsEmpty());
}

TEST_F(ChangeLogicTest, EachFieldOfAFingerprintCounts) {
  std::vector<Fingerprint> variants;
  Fingerprint p = print(1, 10);
  p.size = 11;  // rewritten in place, longer
  variants.push_back(p);
  p = print(1, 10);
  p.mtime_ns = 2;  // same size, newer content
  variants.push_back(p);
  p = print(1, 10);
  p.ctime_ns = 3;  // touched metadata (mode, owner, link count)
  variants.push_back(p);
  p = print(7, 10);  // replaced by a rename: another inode
  variants.push_back(p);
  p = print(1, 10);
  p.device = 2;  // the same inode number on another file system
  variants.push_back(p);
  p = print(1, 10);
  p.link_target = "elsewhere.txt";  // a symlink re-pointed
  variants.push_back(p);
  variants.push_back(Fingerprint{});  // deleted
  for (const Fingerprint& now : variants) {
    ChangeLogic logic({"a.txt"}, {print(1, 10)}, kTiming);
    EXPECT_THAT(logic.compare({now}), ElementsAre("a.txt"));
    EXPECT_THAT(logic.compare({now}), IsEmpty()) << "remembered after being reported";
  }
}

TEST_F(ChangeLogicTest, OnlyTheChangedPathsAreReportedInOrder) {
  EXPECT_THAT(logic_.compare({print(1, 10), print(2, 21)}), ElementsAre("b.txt"));
  EXPECT_THAT(logic_.compare({print(3, 10), print(4, 21)}), ElementsAre("a.txt", "b.txt"));
}

TEST(ChangeLogicPaths, AFileCreatedAfterStartIsAChange) {
  ChangeLogic logic({"later.txt"}, {Fingerprint{}}, kTiming);
  EXPECT_THAT(logic.compare({Fingerprint{}}), IsEmpty());
  EXPECT_THAT(logic.compare({print(9, 1)}), ElementsAre("later.txt"));
}

TEST(ChangeLogicPaths, APathGivenTwiceIsWatchedOnce) {
  ChangeLogic logic({"a.txt", "b.txt", "a.txt"}, {print(1, 1), print(2, 2), print(1, 1)}, kTiming);
  EXPECT_THAT(logic.paths(), ElementsAre("a.txt", "b.txt"));
  EXPECT_THAT(logic.compare({print(5, 1), print(2, 2)}), ElementsAre("a.txt"));
}

TEST(ChangeLogicPaths, MissingInitialFingerprintsReadAsAbsent) {
  ChangeLogic logic({"a.txt", "b.txt"}, {}, kTiming);
  EXPECT_THAT(logic.compare({Fingerprint{}, print(2, 2)}), ElementsAre("b.txt"));
}

}  // namespace
}  // namespace sandgate::watch
