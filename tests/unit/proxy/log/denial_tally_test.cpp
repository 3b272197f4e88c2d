// The per-destination count of denials behind `sandgate run`'s summary (proxy/log/denial_tally)
// and the traffic per destination (traffic_tally): which lines count, the bound on destinations,
// would-denies of report-only mode, the order. The summary's text made from them:
// tests/unit/proxy/commands/run_summary_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "proxy/log/decision_log.hpp"
#include "proxy/log/denial_tally.hpp"
#include "proxy/log/traffic_tally.hpp"
#include "tests/unit/proxy/log/record_lines.hpp"

namespace sandgate::log {
namespace {

TEST(DenialTally, CountsDenialsAndWouldDeniesOfDestinationsOnly) {
  DenialTally tally;
  tally.add(decision("allow", "ok.test", 443, "allowed"));
  tally.add(decision("error", "down.test", 443, "connection-refused"));
  tally.add(decision("deny", "-", 0, "connection-limit"));
  tally.add(decision("deny", "evil.test", 443, "blocklist", "/b.txt:3 evil.test"));
  tally.add(decision("deny", "evil.test", 443, "blocklist", "/b.txt:3 evil.test"));
  tally.add(decision("would-deny", "new.test", 443, "not-allowlisted"));
  Record end = decision("deny", "evil.test", 443, "blocklist");
  end.event = Record::Event::end;
  end.outcome = "refused";
  tally.add(end);  // repeats its decision line: not counted again
  Record revoked = decision("deny", "gone.test", 443, "blocklist", "/b.txt:4 gone.test");
  revoked.event = Record::Event::end;
  revoked.outcome = "revoked";
  tally.add(revoked);

  const DenialCounts counts = tally.counts();
  EXPECT_EQ(counts.total, 4u);
  EXPECT_EQ(counts.untracked, 0u);
  ASSERT_EQ(counts.destinations.size(), 3u);
  EXPECT_EQ(counts.destinations[0].host, "evil.test");  // most denied first
  EXPECT_EQ(counts.destinations[0].count, 2u);
  EXPECT_EQ(counts.destinations[0].rule, "/b.txt:3 evil.test");
  EXPECT_EQ(counts.destinations[1].host, "gone.test");
  EXPECT_EQ(counts.destinations[2].verdict, "would-deny");
}

TEST(DenialTally, KeepsAtMostItsBoundOfDestinationsButCountsEveryDenial) {
  DenialTally tally(3);
  const std::vector<std::string> hosts = {"a.test", "b.test", "c.test", "d.test", "e.test"};
  for (const auto& host : hosts) {
    tally.add(decision("deny", host, 443, "not-allowlisted"));
  }
  tally.add(decision("deny", "a.test", 443, "not-allowlisted"));  // a kept row still counts
  const DenialCounts counts = tally.counts();
  EXPECT_EQ(counts.total, 6u);
  EXPECT_EQ(counts.untracked, 2u);
  ASSERT_EQ(counts.destinations.size(), 3u);
  EXPECT_EQ(counts.destinations[0].host, "a.test");
  EXPECT_EQ(counts.destinations[0].count, 2u);
}

TEST(DenialTally, ManyThreadsAtOnce) {
  DenialTally tally;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&tally, t] {
      const std::string host = "t" + std::to_string(t) + ".test";
      for (int i = 0; i < 1000; ++i) {
        tally.add(decision("deny", host, 443, "blocklist"));
        if (i % 100 == 0) {
          (void)tally.counts();
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  const DenialCounts counts = tally.counts();
  EXPECT_EQ(counts.total, 4000u);
  ASSERT_EQ(counts.destinations.size(), 4u);
  for (const auto& d : counts.destinations) {
    EXPECT_EQ(d.count, 1000u);
  }
}

// ---- The traffic per destination ----

TEST(TrafficTally, SumsEndLinesPerDestinationOnceAndIsBounded) {
  TrafficTally tally(2);
  tally.add(end_line("a.test", 443, 100, 1000));
  tally.add(end_line("a.test", 443, 50, 500));
  tally.add(decision("allow", "a.test", 443, "allowed"));  // not an end line
  tally.add(end_line("-", 0, 7, 7));                       // no destination
  Record inspected = end_line("a.test", 443, 150, 1500);   // repeats its requests' lines
  inspected.repeats_requests = true;
  tally.add(inspected);
  tally.add(end_line("b.test", 80, 1, 1));
  tally.add(end_line("c.test", 80, 10, 20));  // past the bound: counted with the others
  const TrafficCounts counts = tally.counts();
  ASSERT_EQ(counts.destinations.size(), 2u);
  EXPECT_EQ(counts.destinations[0].host, "a.test");
  EXPECT_EQ(counts.destinations[0].sent, 150u);
  EXPECT_EQ(counts.destinations[0].received, 1500u);
  EXPECT_EQ(counts.destinations[0].connections, 2u);
  EXPECT_EQ(counts.destinations[1].host, "b.test");
  EXPECT_EQ(counts.others.sent, 10u);
  EXPECT_EQ(counts.others.received, 20u);
}

TEST(TrafficTally, ACutAtABudgetIsAmongTheDenials) {
  DenialTally tally;
  Record cut = end_line("a.test", 443, 20000, 0);
  cut.verdict = "deny";
  cut.reason = "budget-exhausted";
  cut.outcome = "budget-exhausted";
  tally.add(cut);
  ASSERT_EQ(tally.counts().destinations.size(), 1u);
  EXPECT_EQ(tally.counts().destinations[0].reason, "budget-exhausted");
}

}  // namespace
}  // namespace sandgate::log
