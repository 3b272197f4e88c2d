// The budgets file's grammar (rules/budgets.hpp): entries, limits, units and windows, the
// matching of every line that applies, and the errors an operator reads.
#include "rules/budgets.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace sandgate::rules {
namespace {

using ::testing::HasSubstr;

Host host(std::string_view text) { return *parse_host(text); }

BudgetRules parse(std::string_view text, std::vector<LoadIssue>& issues) {
  return BudgetRules::parse(text, "budgets.txt", issues);
}

TEST(BudgetLimit, ParsesKindsAmountsUnitsAndWindows) {
  struct Case {
    std::string_view text;
    BudgetKind kind;
    std::uint64_t amount;
    BudgetWindow window;
  };
  for (const Case& c : std::vector<Case>{
           {"up=50MB/run", BudgetKind::up, 50'000'000, BudgetWindow::run},
           {"up=50MB", BudgetKind::up, 50'000'000, BudgetWindow::run},
           {"down=2GiB/day", BudgetKind::down, 2ULL << 30, BudgetWindow::day},
           {"down=1.5GB/hour", BudgetKind::down, 1'500'000'000, BudgetWindow::hour},
           {"up=0.5KiB/minute", BudgetKind::up, 512, BudgetWindow::minute},
           {"up=0B", BudgetKind::up, 0, BudgetWindow::run},
           {"up=12kB", BudgetKind::up, 12'000, BudgetWindow::run},
           {"up=1TiB", BudgetKind::up, 1ULL << 40, BudgetWindow::run},
           {"connections=600/minute", BudgetKind::connections, 600, BudgetWindow::minute},
           {"requests=5000/hour", BudgetKind::requests, 5000, BudgetWindow::hour},
       }) {
    auto limit = parse_budget_limit(c.text);
    ASSERT_TRUE(limit) << c.text << ": " << limit.error();
    EXPECT_EQ(limit->kind, c.kind) << c.text;
    EXPECT_EQ(limit->amount, c.amount) << c.text;
    EXPECT_EQ(limit->window, c.window) << c.text;
  }
}

TEST(BudgetLimit, RefusesWhatIsAmbiguousOrWrongWithASentence) {
  struct Case {
    std::string_view text;
    std::string_view says;
  };
  for (const Case& c : std::vector<Case>{
           {"up50MB", "KIND=AMOUNT"},
           {"sideways=1MB", "unknown kind 'sideways'"},
           {"up=50", "bad unit"},           // bytes need a unit
           {"up=50Mb", "bytes, not bits"},  // megabits?
           {"up=50mb", "bad unit"},
           {"up=MB", "bad amount"},
           {"up=1.2.3MB", "bad amount"},
           {"up=.5MB", "bad amount"},
           {"up=5.MB", "bad amount"},
           {"up=0.3B", "not a whole number of bytes"},
           {"up=1.0000001GB", "too large or too precise"},
           {"up=99999999999999999999B", "too large"},
           {"up=9000000TiB", "too large"},
           {"up=1MB/week", "unknown window 'week'"},
           {"up=1MB/", "unknown window ''"},
           {"connections=10k", "whole number"},
           {"requests=1.5", "whole number"},
           {"requests=-1", "bad amount"},
       }) {
    auto limit = parse_budget_limit(c.text);
    ASSERT_FALSE(limit) << c.text;
    EXPECT_THAT(limit.error(), HasSubstr(c.says)) << c.text;
  }
}

TEST(BudgetRules, EveryLineThatMatchesApplies) {
  std::vector<LoadIssue> issues;
  const BudgetRules rules = parse(
      "# budgets\n"
      "*                  up=500MB/run\n"
      "github.com         up=50MB down=2GB/day requests=5000/hour  #! uploads are capped\n"
      "*.npmjs.org:443    connections=600/minute\n"
      "203.0.113.7        up=1MB\n"
      "re:^api[0-9]+\\.example\\.com$ requests=10\n",
      issues);
  ASSERT_TRUE(issues.empty()) << issues[0].message;
  EXPECT_EQ(rules.lines().size(), 5u);
  EXPECT_EQ(rules.size(), 7u);

  auto entries = [&](std::string_view name, std::uint16_t port,
                     std::optional<IpAddress> dialled = {}) {
    std::vector<std::string> out;
    for (const BudgetLine* line : rules.match(host(name), port, dialled)) {
      out.push_back(line->entry);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(entries("github.com", 443), (V{"*", "github.com"}));
  EXPECT_EQ(entries("API.GitHub.com.", 22), (V{"*", "github.com"}));  // normalised, subdomain
  EXPECT_EQ(entries("registry.npmjs.org", 443), (V{"*", "*.npmjs.org:443"}));
  EXPECT_EQ(entries("registry.npmjs.org", 80), (V{"*"}));
  EXPECT_EQ(entries("npmjs.org", 443), (V{"*"}));  // `*.` is subdomains only
  EXPECT_EQ(entries("203.0.113.7", 443), (V{"*", "203.0.113.7"}));
  EXPECT_EQ(entries("api12.example.com", 443), (V{"*", "re:^api[0-9]+\\.example\\.com$"}));
  // A name dialled at an address that a line names counts against that line too, also when
  // the address came as IPv4-mapped IPv6 (an AAAA answer), and so does such a literal.
  EXPECT_EQ(entries("mirror.test", 443, host("203.0.113.7").address), (V{"*", "203.0.113.7"}));
  EXPECT_EQ(entries("mapped.test", 443, host("::ffff:203.0.113.7").address),
            (V{"*", "203.0.113.7"}));
  EXPECT_EQ(entries("::ffff:203.0.113.7", 443), (V{"*", "203.0.113.7"}));
  EXPECT_EQ(entries("::ffff:203.0.113.8", 443), (V{"*"}));

  const BudgetLine& github = rules.lines()[1];
  EXPECT_EQ(github.rule(), "budgets.txt:3 github.com");
  EXPECT_EQ(github.message, "uploads are capped");
  ASSERT_EQ(github.limits.size(), 3u);
  EXPECT_EQ(github.limits[0].key, "github.com up/run");
  EXPECT_EQ(github.limits[1].key, "github.com down/day");
  EXPECT_EQ(describe_limit(github.limits[1]), "2 GB per day");
}

TEST(BudgetRules, KeysIgnoreSpellingAndAmountSoThatAReloadKeepsWhatWasSpent) {
  std::vector<LoadIssue> issues;
  const BudgetRules before = parse("GitHub.com. up=50MB\n", issues);
  const BudgetRules after = parse("# raised\ngithub.com  up=80MB  #! more\n", issues);
  ASSERT_TRUE(issues.empty());
  EXPECT_EQ(before.lines()[0].limits[0].key, after.lines()[0].limits[0].key);
}

TEST(BudgetRules, BadLinesAreSkippedWithTheirFileLineAndWhy) {
  std::vector<LoadIssue> issues;
  const BudgetRules rules = parse(
      "github.com\n"                          // 1: no limit
      "user@evil.com up=1MB\n"                // 2: bad entry
      "github.com up=1MB up=2MB\n"            // 3: twice on a line
      "gitlab.com up=1MB\n"                   // 4: fine
      "gitlab.com. up=5MB\n"                  // 5: the same limit as line 4
      "gitlab.com up=1MB/hour sideways=1\n",  // 6: a bad limit spoils the line
      issues);
  ASSERT_EQ(issues.size(), 5u);
  EXPECT_EQ(issues[0].line, 1u);
  EXPECT_THAT(issues[0].message, HasSubstr("ENTRY LIMIT"));
  EXPECT_EQ(issues[1].line, 2u);
  EXPECT_EQ(issues[2].line, 3u);
  EXPECT_THAT(issues[2].message, HasSubstr("twice"));
  EXPECT_EQ(issues[3].line, 5u);
  EXPECT_THAT(issues[3].message, HasSubstr("as line 4"));
  EXPECT_EQ(issues[4].line, 6u);
  EXPECT_EQ(issues[4].source, "budgets.txt");
  ASSERT_EQ(rules.lines().size(), 1u);
  EXPECT_EQ(rules.lines()[0].line, 4u);
}

TEST(BudgetRules, TheNumberOfLinesIsBounded) {
  std::string text;
  for (std::size_t i = 0; i < kMaxBudgetLines + 5; ++i) {
    text += "host" + std::to_string(i) + ".test up=1MB\n";
  }
  std::vector<LoadIssue> issues;
  const BudgetRules rules = parse(text, issues);
  EXPECT_EQ(rules.lines().size(), kMaxBudgetLines);
  EXPECT_EQ(issues.size(), 5u);
}

TEST(BudgetAmounts, ReadAsPeopleWriteThem) {
  EXPECT_EQ(describe_amount(BudgetKind::up, 50'000'000), "50 MB");
  EXPECT_EQ(describe_amount(BudgetKind::up, 1'500'000'000), "1.5 GB");
  EXPECT_EQ(describe_amount(BudgetKind::down, 2ULL << 30), "2 GiB");
  EXPECT_EQ(describe_amount(BudgetKind::down, 300'000), "300 kB");
  EXPECT_EQ(describe_amount(BudgetKind::up, 100'001), "100.001 kB");
  EXPECT_EQ(describe_amount(BudgetKind::up, 999), "999 bytes");
  EXPECT_EQ(describe_amount(BudgetKind::up, 1), "1 byte");
  EXPECT_EQ(describe_amount(BudgetKind::connections, 3), "3 connections");
}

// The bundled suggestion (config/budgets/dev.txt) loads without a skipped line, and counts what
// it says it counts.
TEST(BudgetRules, TheBundledDevSuggestionLoadsWhole) {
  std::ifstream file(std::string(SANDGATE_SOURCE_DIR) + "/config/budgets/dev.txt");
  ASSERT_TRUE(file) << "config/budgets/dev.txt";
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<LoadIssue> issues;
  const BudgetRules rules = BudgetRules::parse(text, "dev.txt", issues);
  for (const LoadIssue& issue : issues) {
    ADD_FAILURE() << issue.line << ": " << issue.message;
  }
  std::vector<std::string> entries;
  for (const BudgetLine* line : rules.match(host("registry.npmjs.org"), 443)) {
    entries.push_back(line->entry);
  }
  EXPECT_EQ(entries, (std::vector<std::string>{"*", "registry.npmjs.org"}));
}

}  // namespace
}  // namespace sandgate::rules
