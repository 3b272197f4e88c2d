// The ledger of egress budgets (proxy/budget/): accounts kept per limit across reloads, rolling
// windows that forget a slot at a time, reservations shared by the limits of one destination,
// and threads counting into one account without losing a byte.
#include "proxy/budget/ledger.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "proxy/budget/destination_budgets.hpp"

namespace sandgate::budget {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::shared_ptr<const rules::BudgetRules> parse(std::string_view text) {
  std::vector<rules::LoadIssue> issues;
  auto rules = std::make_shared<const rules::BudgetRules>(
      rules::BudgetRules::parse(text, "budgets.txt", issues));
  EXPECT_TRUE(issues.empty()) << issues[0].message;
  return rules;
}

rules::Host host(std::string_view text) { return *rules::parse_host(text); }

TEST(Account, TakesWhatIsLeftAndGivesBackWhatWasNotUsed) {
  Account account(rules::BudgetWindow::run);
  account.set_amount(1000);
  EXPECT_EQ(account.take(600), 600u);
  EXPECT_EQ(account.take(600), 400u);
  EXPECT_EQ(account.take(1), 0u);
  account.give_back(100);
  EXPECT_EQ(account.take(600), 100u);
  EXPECT_EQ(account.state().spent, 1000u);
  EXPECT_EQ(account.state().total, 1000u);
  // Already moved: counted whatever is left, and said to be over.
  EXPECT_TRUE(account.take_anyway(5));
  EXPECT_EQ(account.state().spent, 1005u);
  // A raised amount applies to what was spent.
  account.set_amount(2000);
  EXPECT_EQ(account.take(5000), 995u);
}

TEST(Account, ARollingWindowForgetsASlotAtATime) {
  Account account(rules::BudgetWindow::minute);  // 60 slots of one second
  account.set_amount(100);
  const auto start = Clock::time_point(1000s);
  EXPECT_EQ(account.take(60, start), 60u);
  EXPECT_EQ(account.take(60, start + 30s), 40u);
  EXPECT_EQ(account.take(1, start + 59s), 0u);
  // The first 60 leave the window a minute after they were spent; the 40 stay until theirs.
  EXPECT_EQ(account.state(start + 60s).spent, 40u);
  EXPECT_EQ(account.take(100, start + 60s), 60u);
  EXPECT_EQ(account.state(start + 90s).spent, 60u);
  EXPECT_EQ(account.state(start + 10min).spent, 0u);
  EXPECT_EQ(account.state(start + 10min).total, 160u);
}

TEST(Ledger, KeepsAnAccountPerLimitKeyAcrossNewRules) {
  Ledger ledger;
  auto before = parse("github.com up=100B\n");
  auto after = parse("# reloaded\ngithub.com up=150B\n");
  DestinationBudgets first(ledger, before, host("github.com"), 443);
  EXPECT_EQ(first.reserve(rules::BudgetKind::up, 80), 80u);
  DestinationBudgets second(ledger, after, host("api.github.com"), 443);
  EXPECT_EQ(second.reserve(rules::BudgetKind::up, 100), 70u);
  EXPECT_EQ(ledger.find("github.com up/run")->state().spent, 150u);
}

TEST(DestinationBudgets, AReservationIsTheLeastEveryLimitHasLeft) {
  Ledger ledger;
  auto rules = parse("* up=1000B\ngithub.com up=300B down=1B\n");
  DestinationBudgets github(ledger, rules, host("github.com"), 443);
  DestinationBudgets other(ledger, rules, host("other.test"), 443);
  EXPECT_EQ(github.reserve(rules::BudgetKind::up, 500), 300u);
  github.settle(rules::BudgetKind::up, 300, 200);  // 200 moved: 100 back to both
  EXPECT_EQ(ledger.find("* up/run")->state().spent, 200u);
  EXPECT_EQ(ledger.find("github.com up/run")->state().spent, 200u);
  EXPECT_EQ(other.reserve(rules::BudgetKind::up, 900), 800u);  // only `*` applies
  EXPECT_EQ(github.reserve(rules::BudgetKind::up, 500), 0u);   // `*` is spent now
  const Stop stop = github.stop(rules::BudgetKind::up);
  EXPECT_EQ(stop.rule, "budgets.txt:1 *");
  EXPECT_EQ(stop.sentence,
            "github.com:443 has spent the gate's budget of 1 kB sent while the gate runs "
            "(budgets.txt:1 *).");
  // A kind no limit names is not limited.
  EXPECT_EQ(github.reserve(rules::BudgetKind::requests, 7), 7u);
}

TEST(DestinationBudgets, ARefusedCountSpendsNothing) {
  Ledger ledger;
  auto rules = parse("* requests=5\napi.test requests=1  #! one is enough\n");
  DestinationBudgets api(ledger, rules, host("api.test"), 80);
  EXPECT_FALSE(api.count_one(rules::BudgetKind::requests, true));
  const auto refused = api.count_one(rules::BudgetKind::requests, true);
  ASSERT_TRUE(refused);
  EXPECT_THAT(refused->sentence, HasSubstr("budget of 1 requests while the gate runs"));
  EXPECT_THAT(refused->sentence, HasSubstr(": one is enough"));
  EXPECT_EQ(ledger.find("* requests/run")->state().spent, 1u);
  // Report-only: counted anyway, and the stop says it went over.
  EXPECT_TRUE(api.count_one(rules::BudgetKind::requests, false));
  EXPECT_EQ(ledger.find("* requests/run")->state().spent, 2u);
}

// Review finding (issue 39, 7): a question asks for what the waiting transfer lacks when that
// is more than the limit's amount (a yes must let it through), and is remembered by its limit
// whatever amount it asks for.
TEST(DestinationBudgets, AStopAsksForWhatTheWaitingTransferLacks) {
  Ledger ledger;
  auto rules = parse("x.test up=2kB\n");
  DestinationBudgets x(ledger, rules, host("x.test"), 8081);
  EXPECT_EQ(x.reserve(rules::BudgetKind::up, 500), 500u);  // 1500 left
  const Stop big = x.stop(rules::BudgetKind::up, 20119);
  EXPECT_EQ(big.amount, 18619u);
  EXPECT_EQ(big.question,
            "18.619 kB more sent (the waiting transfer needs 20.119 kB, 1.5 kB left; "
            "budgets.txt:1 x.test: 2 kB per run)");
  EXPECT_EQ(big.remembered_as, "budget x.test up/run");
  big.account->grant(big.amount);
  EXPECT_EQ(x.reserve(rules::BudgetKind::up, 20119), 20119u);  // a yes lets it through
  // A transfer that lacks less than the amount is asked the amount again, as before.
  const Stop small = x.stop(rules::BudgetKind::up, 100);
  EXPECT_EQ(small.amount, 2000u);
  EXPECT_EQ(small.question, "2 kB more sent (budgets.txt:1 x.test: 2 kB per run)");
  EXPECT_EQ(small.remembered_as, big.remembered_as);
}

// Review finding (issue 39, 4): an address's entry counts connections and requests to a name
// dialled at it, as it counts their bytes.
TEST(DestinationBudgets, AnAddressEntryCountsANameDialledThere) {
  Ledger ledger;
  auto rules = parse("127.0.0.2 connections=2\n");
  rules::IpAddress address;
  ASSERT_EQ(rules::parse_ipv4("127.0.0.2", address), rules::Ipv4Parse::ok);
  DestinationBudgets by_name(ledger, rules, host("x.test"), 443, address);
  DestinationBudgets by_address(ledger, rules, host("127.0.0.2"), 443);
  EXPECT_EQ(by_name.limits(rules::BudgetKind::connections), 1u);
  EXPECT_FALSE(by_name.count_one(rules::BudgetKind::connections, true));
  EXPECT_FALSE(by_address.count_one(rules::BudgetKind::connections, true));
  EXPECT_TRUE(by_name.count_one(rules::BudgetKind::connections, true));
  EXPECT_TRUE(by_address.count_one(rules::BudgetKind::connections, true));
}

TEST(Ledger, ThreadsCountIntoOneAccountWithoutLosingAByte) {
  Ledger ledger;
  auto rules = parse("* up=1000000B\n");
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> moved{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      DestinationBudgets budgets(ledger, rules, host("a.test"), 443);
      for (;;) {
        const std::uint64_t got = budgets.reserve(rules::BudgetKind::up, 777);
        if (got == 0) {
          return;
        }
        budgets.settle(rules::BudgetKind::up, got, got - got / 3);
        moved += got - got / 3;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(moved.load(), 1000000u);
  EXPECT_EQ(ledger.find("* up/run")->state().spent, 1000000u);
}

TEST(Ledger, MetricsNameEachLimitWithItsRuleEscaped) {
  Ledger ledger;
  auto rules = parse("re:^a\"b$ up=10B\n");
  DestinationBudgets budgets(ledger, rules, host("x.test"), 80);
  const std::string text = ledger.render_prometheus(*rules);
  EXPECT_THAT(text, HasSubstr("sandgate_budget_amount{rule=\"budgets.txt:1 re:^a\\\"b$\","
                              "kind=\"up\",window=\"run\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE sandgate_budget_spent gauge\n"));
  EXPECT_EQ(ledger.render_prometheus(rules::BudgetRules()), "");
}

}  // namespace
}  // namespace sandgate::budget
