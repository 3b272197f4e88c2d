// The decision log's live feed (proxy/log/event_feed.hpp): every buffer it has is bounded, and
// each bound is exceeded here: a reader's queue (lines dropped and counted for that reader
// only), the history (by lines and by bytes), the number of readers.
#include "proxy/log/event_feed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace sandgate::log {
namespace {

std::size_t lines_in(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(EventFeed, KeepsNothingUntilEnabled) {
  EventFeed feed;
  feed.publish("{\"n\":1}");
  feed.enable();
  feed.publish("{\"n\":2}");
  auto reader = feed.subscribe();
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->take().lines, "{\"n\":2}\n");
}

TEST(EventFeed, AReaderGetsTheHistoryThenWhatComesInOrder) {
  EventFeed feed;
  feed.enable();
  feed.publish("a");
  auto reader = feed.subscribe();
  feed.publish("b");
  feed.publish("c");
  const auto batch = reader->take();
  EXPECT_EQ(batch.lines, "a\nb\nc\n");
  EXPECT_EQ(batch.dropped, 0u);
  EXPECT_EQ(reader->take().lines, "");
}

TEST(EventFeed, ASlowReadersQueueIsBoundedAndItsDropsCountedForItAlone) {
  EventFeedLimits limits;
  limits.max_queued_bytes = 100;  // ten lines of ten bytes
  limits.history_lines = 0;
  EventFeed feed(limits);
  feed.enable();
  auto slow = feed.subscribe();
  auto quick = feed.subscribe();
  const std::string line(9, 'x');  // ten bytes with its newline
  for (int i = 0; i < 25; ++i) {
    feed.publish(line);
    if (i % 5 == 4) {
      EXPECT_EQ(lines_in(quick->take().lines), 5u);
    }
  }
  const auto batch = slow->take();
  EXPECT_EQ(lines_in(batch.lines), 10u);
  EXPECT_EQ(batch.dropped, 15u);
  // Taken, the queue has room again and the count starts over.
  feed.publish(line);
  const auto next = slow->take();
  EXPECT_EQ(lines_in(next.lines), 1u);
  EXPECT_EQ(next.dropped, 0u);
}

TEST(EventFeed, TheHistoryIsBoundedByLinesAndByBytes) {
  EventFeedLimits by_lines;
  by_lines.history_lines = 3;
  EventFeed feed(by_lines);
  feed.enable();
  for (const char* line : {"1", "2", "3", "4", "5"}) {
    feed.publish(line);
  }
  EXPECT_EQ(feed.subscribe()->take().lines, "3\n4\n5\n");

  EventFeedLimits by_bytes;
  by_bytes.max_history_bytes = 25;
  EventFeed small(by_bytes);
  small.enable();
  for (int i = 0; i < 10; ++i) {
    small.publish(std::string(9, static_cast<char>('a' + i)));
  }
  const std::string history = small.subscribe()->take().lines;
  EXPECT_EQ(history, std::string(9, 'i') + "\n" + std::string(9, 'j') + "\n");
}

TEST(EventFeed, AHistoryLargerThanAQueueGivesANewReaderItsNewestLines) {
  EventFeedLimits limits;
  limits.max_queued_bytes = 20;
  EventFeed feed(limits);
  feed.enable();
  for (const char* line : {"aaaaaaaaa", "bbbbbbbbb", "ccccccccc"}) {
    feed.publish(line);
  }
  EXPECT_EQ(feed.subscribe()->take().lines, "bbbbbbbbb\nccccccccc\n");
}

TEST(EventFeed, ReadersAreCappedAndALeavingOneFreesItsPlace) {
  EventFeedLimits limits;
  limits.max_subscribers = 2;
  EventFeed feed(limits);
  auto first = feed.subscribe();
  auto second = feed.subscribe();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(feed.subscribe(), nullptr);
  EXPECT_EQ(feed.subscribers(), 2u);
  first.reset();
  EXPECT_EQ(feed.subscribers(), 1u);
  EXPECT_NE(feed.subscribe(), nullptr);
}

}  // namespace
}  // namespace sandgate::log
