// The per-destination count of denials behind `sandgate run`'s summary (proxy/log/denial_tally)
// and the summary's text (proxy/commands/run_summary): which lines count, the bound on
// destinations, would-denies of report-only mode, the order, and what each reason suggests.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "proxy/commands/run_summary.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/log/denial_tally.hpp"

namespace sandgate::log {
namespace {

Record decision(std::string_view verdict, std::string_view host, std::uint16_t port,
                std::string_view reason, std::string_view rule = {}) {
  Record r;
  r.event = Record::Event::decision;
  r.verdict = verdict;
  r.host = host;
  r.port = port;
  r.reason = reason;
  r.rule = rule;
  return r;
}

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

TEST(RunSummary, NothingDeniedSaysNothing) {
  EXPECT_EQ(commands::render_run_summary({}, settings::Settings{}), "");
}

TEST(RunSummary, ReportOnlyRunsSayWouldHaveRefused) {
  DenialTally tally;
  tally.add(decision("would-deny", "registry.example.dev", 443, "not-allowlisted"));
  tally.add(decision("would-deny", "registry.example.dev", 443, "not-allowlisted"));
  settings::Settings s;
  s.allowlist_presets = {"dev"};
  EXPECT_EQ(commands::render_run_summary(tally.counts(), s),
            "sandgate run: the gate would have refused (report-only) 2 connections during the "
            "run:\n"
            "  would-deny registry.example.dev:443 (not-allowlisted) x2, no rule matched\n"
            "    to allow: add \"registry.example.dev\" to an allowlist file of your own and give "
            "it beside the preset: --allowlist preset:dev,FILE\n");
}

TEST(RunSummary, ListsAtMostTheBoundThenSaysHowManyMore) {
  DenialTally tally(4);
  for (const char* host : {"a.test", "b.test", "c.test", "d.test", "e.test", "f.test"}) {
    tally.add(decision("deny", host, 22, "ssh-non-git-host"));
  }
  const std::string text = commands::render_run_summary(tally.counts(), settings::Settings{}, 2);
  EXPECT_NE(text.find("sandgate run: the gate refused 6 connections"), std::string::npos) << text;
  EXPECT_NE(text.find("  deny a.test:22 (ssh-non-git-host) x1, no rule matched\n    to allow: add "
                      "\"a.test\" to --git-hosts (GOOSE_SANDBOX_GIT_HOSTS)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("c.test"), std::string::npos) << text;
  // 2 listed, 2 more kept, 2 past the tally's bound.
  EXPECT_NE(text.find("  and 2 more destinations and others (4 connections)"), std::string::npos)
      << text;
}

TEST(RunSummary, EveryPolicyReasonSaysHowToAllowOrThatItCannot) {
  settings::Settings s;
  s.allowlist_path = "/home/me/allow.txt";
  const auto advice = [&s](std::string_view reason, std::string_view rule = {}) {
    DeniedDestination d{"deny", "x.test", 443, std::string(reason), std::string(rule), 1};
    return commands::how_to_allow(d, s);
  };
  EXPECT_EQ(advice("not-allowlisted"), "add \"x.test\" to /home/me/allow.txt");
  EXPECT_EQ(advice("blocklist", "/b.txt:7 x.test"),
            "remove or narrow the blocklist entry at /b.txt:7");
  EXPECT_EQ(advice("port-not-allowed"), "add port 443 to --allowed-ports (SANDGATE_ALLOWED_PORTS)");
  for (const char* cannot : {"loopback", "metadata-address", "reserved-address", "sni-mismatch",
                             "sni-missing", "protocol-mismatch"}) {
    EXPECT_EQ(advice(cannot).rfind("cannot be allowed", 0), 0u) << cannot;
  }
  EXPECT_NE(advice("launchdarkly").find("LaunchDarkly flag \"egress-allowlist\""),
            std::string::npos);
  EXPECT_EQ(advice("bad-request").rfind("not a destination rule", 0), 0u);
  EXPECT_EQ(advice("no-such-reason"), "see the gate's log for this reason");
}

// ---- The traffic per destination and the budgets' part of the summary ----

Record end_line(std::string_view host, std::uint16_t port, std::uint64_t up, std::uint64_t down) {
  Record r;
  r.event = Record::Event::end;
  r.host = host;
  r.port = port;
  r.bytes_up = up;
  r.bytes_down = down;
  r.outcome = "closed";
  return r;
}

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

TEST(RunSummary, BudgetsSayWhatWentWhereAndWhatEachLimitSpent) {
  std::vector<rules::LoadIssue> issues;
  const rules::BudgetRules budgets = rules::BudgetRules::parse(
      "* up=200MB down=10GB/day\na.test up=20kB requests=5/minute\n", "budgets.txt", issues);
  ASSERT_TRUE(issues.empty());
  budget::Ledger ledger;
  ledger.account(budgets.lines()[1].limits[0])->take(20000);
  ledger.account(budgets.lines()[0].limits[0])->take(1'234'567);
  TrafficTally tally;
  tally.add(end_line("a.test", 443, 20000, 3'200'000));
  tally.add(end_line("b.test", 443, 1'214'567, 999));
  const std::string text = commands::render_budget_summary(tally.counts(), budgets, ledger);
  EXPECT_EQ(text,
            "sandgate run: sent / received per destination during the run:\n"
            "  a.test:443  20 kB / 3.2 MB\n"
            "  b.test:443  1.2 MB / 999 bytes\n"
            "sandgate run: budgets (spent of amount):\n"
            "  budgets.txt:1 *: up 1.2 MB of 200 MB per run, down 0 bytes of 10 GB per day\n"
            "  budgets.txt:2 a.test: up 20 kB of 20 kB per run (SPENT), requests 0 of 5 per "
            "minute\n");
  EXPECT_EQ(commands::render_budget_summary(tally.counts(), rules::BudgetRules(), ledger), "");
}

// The check after the run: nothing found says nothing; each group is listed with what to do,
// what could not be moved aside first.
TEST(RunSummary, TheAuditAfterTheRunIsListedByGroup) {
  EXPECT_EQ(commands::render_git_audit({}), "");
  sandbox::GitAudit audit;
  audit.auto_run = {"/w/sub/.envrc (new)"};
  audit.hidden = {"test.sh (skip-worktree, /w/.git/index)"};
  audit.actions = {"/w/.git/COMMIT_EDITMSG -> /w/.git/COMMIT_EDITMSG.sandgate-quarantine-1"};
  audit.incomplete = {"/w (stopped at /w/pad/7)"};
  audit.unmoved = {"/w/sub/.git (Device or resource busy; made unreadable)"};
  const std::string text = commands::render_git_audit(audit);
  std::size_t at = 0;
  for (const char* line :
       {"sandgate run: WARNING: could NOT be moved aside, and git, an editor or a shell would obey "
        "them:\n  /w/sub/.git (Device or resource busy; made unreadable)\n    do not run git, an "
        "editor or a shell in their folders until you have removed them (a hard link: remove "
        "that name alone; its file's other names may be yours)\n",
        "sandgate run: files that editors, shells, package managers and agents run or trust, or "
        "links at their names, written by the command (at any depth):\n  /w/sub/.envrc (new)\n",
        "sandgate run: index entries the command hid from git status and git diff:\n  test.sh "
        "(skip-worktree, /w/.git/index)\n",
        "sandgate run: moved aside or put back, as git would have obeyed them:\n  "
        "/w/.git/COMMIT_EDITMSG -> /w/.git/COMMIT_EDITMSG.sandgate-quarantine-1\n",
        "sandgate run: NOT checked whole after the run (treat as suspect):\n  /w (stopped at "
        "/w/pad/7)\n"}) {
    const auto found = text.find(line, at);
    ASSERT_NE(found, std::string::npos) << line << "\n" << text;
    at = found;
  }
}

}  // namespace
}  // namespace sandgate::log
