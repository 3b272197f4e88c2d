// `sandgate run`'s summary (proxy/commands/run_summary): the text made from the denials and the
// traffic the gate logged (proxy/log's tallies), what each reason suggests, the budgets' part,
// and the audit after the run.
#include "proxy/commands/run_summary.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proxy/log/denial_tally.hpp"
#include "proxy/log/traffic_tally.hpp"
#include "tests/unit/proxy/log/record_lines.hpp"

namespace sandgate::commands {
namespace {

using log::decision;
using log::DenialTally;
using log::DeniedDestination;
using log::end_line;
using log::TrafficTally;

TEST(RunSummary, NothingDeniedSaysNothing) {
  EXPECT_EQ(render_run_summary({}, settings::Settings{}), "");
}

TEST(RunSummary, ReportOnlyRunsSayWouldHaveRefused) {
  DenialTally tally;
  tally.add(decision("would-deny", "registry.example.dev", 443, "not-allowlisted"));
  tally.add(decision("would-deny", "registry.example.dev", 443, "not-allowlisted"));
  settings::Settings s;
  s.allowlist_presets = {"dev"};
  EXPECT_EQ(render_run_summary(tally.counts(), s),
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
  const std::string text = render_run_summary(tally.counts(), settings::Settings{}, 2);
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
    return how_to_allow(d, s);
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
  const std::string text = render_budget_summary(tally.counts(), budgets, ledger);
  EXPECT_EQ(text,
            "sandgate run: sent / received per destination during the run:\n"
            "  a.test:443  20 kB / 3.2 MB\n"
            "  b.test:443  1.2 MB / 999 bytes\n"
            "sandgate run: budgets (spent of amount):\n"
            "  budgets.txt:1 *: up 1.2 MB of 200 MB per run, down 0 bytes of 10 GB per day\n"
            "  budgets.txt:2 a.test: up 20 kB of 20 kB per run (SPENT), requests 0 of 5 per "
            "minute\n");
  EXPECT_EQ(render_budget_summary(tally.counts(), rules::BudgetRules(), ledger), "");
}

// The check after the run: nothing found says nothing; each group is listed with what to do,
// what could not be moved aside first.
TEST(RunSummary, TheAuditAfterTheRunIsListedByGroup) {
  EXPECT_EQ(render_git_audit({}), "");
  sandbox::GitAudit audit;
  audit.auto_run = {"/w/sub/.envrc (new)"};
  audit.hidden = {"test.sh (skip-worktree, /w/.git/index)"};
  audit.actions = {"/w/.git/COMMIT_EDITMSG -> /w/.git/COMMIT_EDITMSG.sandgate-quarantine-1"};
  audit.incomplete = {"/w (stopped at /w/pad/7)"};
  audit.unmoved = {"/w/sub/.git (Device or resource busy; made unreadable)"};
  const std::string text = render_git_audit(audit);
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
}  // namespace sandgate::commands
