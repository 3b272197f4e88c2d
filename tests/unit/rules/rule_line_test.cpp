// Unit tests for the rules-file line grammar on its own (rules/rule_line.hpp): what each entry
// shape parses to (kind, normal form, ports, pattern), the messages for bad entries, comment and
// white-space stripping, and the line splitting and numbering that issues report.
// domain_set_test covers the same grammar through DomainSet, with what matches.

#include "rules/rule_line.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandgate::rules {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---- entry_text: what part of a line is the entry ----

TEST(RuleLineEntryText, StripsCommentsAndAsciiWhiteSpace) {
  EXPECT_EQ(entry_text("evil.com"), "evil.com");
  EXPECT_EQ(entry_text("  evil.com\t\r"), "evil.com");
  EXPECT_EQ(entry_text("evil.com # tracker"), "evil.com");
  EXPECT_EQ(entry_text("evil.com#tracker"), "evil.com");
  EXPECT_EQ(entry_text("# a comment"), "");
  EXPECT_EQ(entry_text("   "), "");
  EXPECT_EQ(entry_text(""), "");
  EXPECT_EQ(entry_text("\v\fa.b\f"), "a.b");
  // A '#' inside a pattern is a comment too: the grammar has no escape for it.
  EXPECT_EQ(entry_text("re:a#b"), "re:a");
  // Non-ASCII white space is not trimmed (it reaches parse_host, which refuses it).
  EXPECT_EQ(entry_text("\xC2\xA0"
                       "evil.com"),
            "\xC2\xA0"
            "evil.com");
}

// ---- parse_entry: good entries, one row each ----

struct GoodCase {
  std::string_view label;
  std::string_view text;
  EntryKind kind;
  std::string_view name;  // the normal form (names and addresses) or the pattern
  std::vector<std::uint16_t> ports;
};

void PrintTo(const GoodCase& c, std::ostream* os) { *os << c.label; }

class RuleLineGood : public ::testing::TestWithParam<GoodCase> {};

TEST_P(RuleLineGood, ParsesToItsKindNameAndPorts) {
  const GoodCase& c = GetParam();
  std::vector<std::uint16_t> scratch;
  auto entry = parse_entry(c.text, scratch);
  ASSERT_TRUE(entry.has_value()) << entry.error();
  EXPECT_EQ(entry->kind, c.kind);
  EXPECT_EQ(entry->text, c.text);
  if (c.kind == EntryKind::pattern) {
    EXPECT_EQ(entry->pattern, c.name);
  } else {
    EXPECT_EQ(entry->host.name, c.name);
    EXPECT_EQ(entry->host.is_ip(), c.kind == EntryKind::address);
  }
  EXPECT_THAT(std::vector<std::uint16_t>(entry->ports.begin(), entry->ports.end()),
              ElementsAreArray(c.ports));
}

const GoodCase kGoodCases[] = {
    {"name", "evil.com", EntryKind::name_and_subdomains, "evil.com", {}},
    {"single_label", "localhost", EntryKind::name_and_subdomains, "localhost", {}},
    {"upper_case", "EVIL.Com", EntryKind::name_and_subdomains, "evil.com", {}},
    {"trailing_dot", "evil.com.", EntryKind::name_and_subdomains, "evil.com", {}},
    {"idn", "\xC3\x89VIL.com", EntryKind::name_and_subdomains, "xn--vil-9la.com", {}},
    {"wildcard", "*.evil.com", EntryKind::subdomains_only, "evil.com", {}},
    {"wildcard_port", "*.evil.com:443", EntryKind::subdomains_only, "evil.com", {443}},
    {"port", "evil.com:443", EntryKind::name_and_subdomains, "evil.com", {443}},
    {"ports_sorted_distinct",
     "evil.com:2222,22,2222",
     EntryKind::name_and_subdomains,
     "evil.com",
     {22, 2222}},
    {"port_bounds", "evil.com:1,65535", EntryKind::name_and_subdomains, "evil.com", {1, 65535}},
    {"ipv4", "203.0.113.7", EntryKind::address, "203.0.113.7", {}},
    {"ipv4_other_spelling", "0xcb.0.113.7", EntryKind::address, "203.0.113.7", {}},
    {"ipv4_port", "203.0.113.7:22", EntryKind::address, "203.0.113.7", {22}},
    {"ipv6", "2001:DB8::1", EntryKind::address, "2001:db8::1", {}},
    {"ipv6_bracketed", "[2001:db8::1]", EntryKind::address, "2001:db8::1", {}},
    {"ipv6_bracketed_port", "[2001:db8::1]:443", EntryKind::address, "2001:db8::1", {443}},
    // Two colons or more without brackets: an IPv6 address, never a port.
    {"ipv6_unbracketed_no_port", "::1:443", EntryKind::address, "::1:443", {}},
    {"ipv4_mapped_is_ipv4", "::ffff:203.0.113.7", EntryKind::address, "203.0.113.7", {}},
    {"ipv4_mapped_bracketed_port",
     "[::ffff:203.0.113.7]:80",
     EntryKind::address,
     "203.0.113.7",
     {80}},
    {"pattern", "re:.*\\.evil\\.com", EntryKind::pattern, ".*\\.evil\\.com", {}},
    {"pattern_port", "re:.*\\.evil\\.com:443,80", EntryKind::pattern, ".*\\.evil\\.com", {80, 443}},
    // Only a trailing digits-and-commas list is a port list; other colons are the pattern's.
    {"pattern_inner_colon", "re:a:b", EntryKind::pattern, "a:b", {}},
    {"pattern_non_capturing_group", "re:x(?::1)", EntryKind::pattern, "x(?::1)", {}},
    {"pattern_trailing_comma_is_pattern", "re:a:1,", EntryKind::pattern, "a:1,", {}},
    // Not checked here: whether it compiles is the set builder's (RE2's) business.
    {"pattern_not_compiled", "re:(", EntryKind::pattern, "(", {}},
};
INSTANTIATE_TEST_SUITE_P(Entries, RuleLineGood, ::testing::ValuesIn(kGoodCases),
                         [](const auto& info) { return std::string(info.param.label); });

// ---- parse_entry: bad entries and their messages ----

struct BadCase {
  std::string_view label;
  std::string_view text;
  std::string_view message;  // a substring of the expected message
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.label; }

class RuleLineBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(RuleLineBad, IsRefusedWithAMessage) {
  const BadCase& c = GetParam();
  std::vector<std::uint16_t> scratch;
  auto entry = parse_entry(c.text, scratch);
  ASSERT_FALSE(entry.has_value()) << "parsed: " << c.text;
  EXPECT_THAT(entry.error(), HasSubstr(std::string(c.message)));
}

const BadCase kBadCases[] = {
    {"lone_star", "*", "'*.' needs a domain after it"},
    {"star_dot_only", "*.", "'*.' needs a domain after it"},
    {"star_dot_port", "*.:443", "'*.' needs a domain after it"},
    {"inner_star", "a.*.com", "'*' is only allowed as a whole leading label"},
    {"star_in_label", "*evil.com", "'*' is only allowed as a whole leading label"},
    {"double_wildcard", "*.*.evil.com", "'*' is only allowed as a whole leading label"},
    {"wildcard_ip", "*.203.0.113.7", "wildcard not allowed on an IP address"},
    {"userinfo", "user@evil.com", std::string_view(to_string(HostError::userinfo))},
    {"path", "evil.com/x", std::string_view(to_string(HostError::path))},
    {"empty_label", "a..com", std::string_view(to_string(HostError::empty_label))},
    {"bad_ipv4", "1.2.3.256", std::string_view(to_string(HostError::bad_ipv4))},
    {"port_zero", "evil.com:0", "bad port '0'"},
    {"port_leading_zero", "evil.com:0443", "bad port '0443'"},
    {"port_too_big", "evil.com:65536", "bad port '65536'"},
    {"port_sign", "evil.com:+443", "bad port '+443'"},
    {"port_empty", "evil.com:", "bad port ''"},
    {"port_empty_item", "evil.com:22,,80", "bad port ''"},
    {"port_six_digits", "evil.com:000443", "bad port '000443'"},
    {"pattern_empty", "re:", "'re:' needs a pattern after it"},
    {"pattern_only_ports", "re::443", "'re:' needs a pattern after it"},
    {"pattern_bad_port", "re:x:0443", "bad port '0443'"},
    {"empty_text", "", std::string_view(to_string(HostError::empty))},
};
INSTANTIATE_TEST_SUITE_P(Entries, RuleLineBad, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.label); });

TEST(RuleLine, HugePortIsQuotedShortly) {
  std::vector<std::uint16_t> scratch;
  const std::string text = "evil.com:" + std::string(10'000, '9');
  auto entry = parse_entry(text, scratch);
  ASSERT_FALSE(entry.has_value());
  EXPECT_LT(entry.error().size(), 100u);
  EXPECT_THAT(entry.error(), HasSubstr("..."));
}

TEST(RuleLine, ScratchPortsAreResetBetweenEntries) {
  std::vector<std::uint16_t> scratch;
  ASSERT_TRUE(parse_entry("a.com:22,80", scratch).has_value());
  // The views of one entry die with the next call; each entry sees only its own ports.
  auto unscoped = parse_entry("b.com", scratch);
  ASSERT_TRUE(unscoped.has_value());
  EXPECT_TRUE(unscoped->ports.empty());
  auto pattern = parse_entry("re:c", scratch);
  ASSERT_TRUE(pattern.has_value());
  EXPECT_TRUE(pattern->ports.empty());
  auto scoped = parse_entry("d.com:443", scratch);
  ASSERT_TRUE(scoped.has_value());
  EXPECT_THAT(std::vector<std::uint16_t>(scoped->ports.begin(), scoped->ports.end()),
              ElementsAre(443));
}

TEST(RuleLine, LongestAllowedNormalForm) {
  // 253 octets: four 62-octet labels and dots, minus the padding to reach exactly 253.
  std::string name;
  while (name.size() < 253) {
    if (!name.empty()) {
      name += '.';
    }
    name += std::string(std::min<std::size_t>(62, 253 - name.size()), 'a');
  }
  ASSERT_EQ(name.size(), 253u);
  std::vector<std::uint16_t> scratch;
  auto entry = parse_entry(name, scratch);
  ASSERT_TRUE(entry.has_value()) << entry.error();
  EXPECT_EQ(entry->host.name, name);
  EXPECT_FALSE(parse_entry(name + "a", scratch).has_value());
}

// ---- for_each_line and make_issue: numbering and what an issue quotes ----

std::vector<std::pair<std::uint32_t, std::string>> lines_of(std::string_view text) {
  std::vector<std::pair<std::uint32_t, std::string>> out;
  for_each_line(text, [&](std::string_view line, std::uint32_t number) {
    out.emplace_back(number, std::string(line));
  });
  return out;
}

using Line = std::pair<std::uint32_t, std::string>;

TEST(RuleLineSplit, NumbersFromOneAndKeepsBlankLines) {
  EXPECT_THAT(lines_of("a\n\nb\n"), ElementsAre(Line{1, "a"}, Line{2, ""}, Line{3, "b"}));
  EXPECT_THAT(lines_of("a\nb"), ElementsAre(Line{1, "a"}, Line{2, "b"}));
  EXPECT_THAT(lines_of(""), IsEmpty());
  EXPECT_THAT(lines_of("\n"), ElementsAre(Line{1, ""}));
}

TEST(RuleLineSplit, KeepsCarriageReturnsForEntryTextToTrim) {
  EXPECT_THAT(lines_of("a\r\nb\r\n"), ElementsAre(Line{1, "a\r"}, Line{2, "b\r"}));
  EXPECT_EQ(entry_text("a\r"), "a");
}

TEST(RuleLineSplit, SkipsOnlyALeadingByteOrderMark) {
  EXPECT_THAT(lines_of("\xEF\xBB\xBF"
                       "a\nb"),
              ElementsAre(Line{1, "a"}, Line{2, "b"}));
  EXPECT_THAT(lines_of("\xEF\xBB\xBF"), IsEmpty());
  // A second mark, or one later in the file, is part of that line (and parse_host refuses it).
  EXPECT_THAT(lines_of("a\n\xEF\xBB\xBF"
                       "b"),
              ElementsAre(Line{1, "a"}, Line{2,
                                             "\xEF\xBB\xBF"
                                             "b"}));
}

TEST(RuleLineIssue, NamesSourceLineAndTheTrimmedEntry) {
  const LoadIssue issue = make_issue("blocked.txt", 7, "  evil..com  # typo\r", "why");
  EXPECT_EQ(issue.source, "blocked.txt");
  EXPECT_EQ(issue.line, 7u);
  EXPECT_EQ(issue.text, "evil..com");
  EXPECT_EQ(issue.message, "why");
}

TEST(RuleLineIssue, EveryBadLineOfAFileIsReportedWithItsNumber) {
  // The loop DomainSet::Builder::add_text runs, on its own.
  const std::string_view text = "good.com\r\nuser@x.com\n\n# note\n*.1.2.3.4 # ip\nre:";
  std::vector<LoadIssue> issues;
  std::vector<std::uint16_t> scratch;
  std::size_t good = 0;
  for_each_line(text, [&](std::string_view line, std::uint32_t number) {
    const std::string_view entry = entry_text(line);
    if (entry.empty()) {
      return;
    }
    auto parsed = parse_entry(entry, scratch);
    if (parsed) {
      ++good;
    } else {
      issues.push_back(make_issue("list", number, line, parsed.error()));
    }
  });
  EXPECT_EQ(good, 1u);
  ASSERT_EQ(issues.size(), 3u);
  EXPECT_EQ(issues[0].line, 2u);
  EXPECT_EQ(issues[0].text, "user@x.com");
  EXPECT_EQ(issues[1].line, 5u);
  EXPECT_EQ(issues[1].text, "*.1.2.3.4");
  EXPECT_EQ(issues[1].message, "wildcard not allowed on an IP address");
  EXPECT_EQ(issues[2].line, 6u);
  EXPECT_EQ(issues[2].text, "re:");
}

TEST(AgentMessage, TheTextAfterHashBangMadeOneSafeLine) {
  EXPECT_EQ(agent_message("github.com:22  #! SSH pushes are blocked here; use an https:// remote"),
            "SSH pushes are blocked here; use an https:// remote");
  EXPECT_EQ(agent_message("a.com #!   spaced   \r"), "spaced");
  EXPECT_EQ(agent_message("a.com # a comment #! not a message"),
            "");  // the comment starts with '#'
  EXPECT_EQ(agent_message("a.com"), "");
  EXPECT_EQ(agent_message("a.com #!"), "");
  EXPECT_EQ(agent_message("a.com #!\t"), "");
  EXPECT_EQ(agent_message("a.com #! tab\there"), "tab here");
  EXPECT_EQ(agent_message("a.com #! caf\xc3\xa9 \"q\" \\"), "caf?? \"q\" \\");
  const std::string long_line = "a.com #! " + std::string(400, 'x');
  EXPECT_EQ(agent_message(long_line).size(), kMaxAgentMessage);
  // The entry itself is unchanged by a message.
  EXPECT_EQ(entry_text("github.com:22  #! use https"), "github.com:22");
}

}  // namespace
}  // namespace sandgate::rules
