// Unit tests for DomainSet: the rules-file syntax, normalisation of entries and hosts, and which
// rule a host matches (the most specific one), including the negative and overlapping cases.

#include "rules/domain_set.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace sandgate::rules {
namespace {

using ::testing::HasSubstr;

// Hosts reach match() already normalised by parse_host(), exactly as the proxy does it.
Host host_of(std::string_view text) {
  auto host = parse_host(text);
  EXPECT_TRUE(host.has_value()) << "test host does not parse: " << text;
  return host ? *host : Host{};
}

DomainSet load(std::string_view text, std::vector<LoadIssue>& issues) {
  return DomainSet::parse(text, "rules.txt", issues);
}

DomainSet load_clean(std::string_view text) {
  std::vector<LoadIssue> issues;
  DomainSet set = load(text, issues);
  for (const LoadIssue& issue : issues) {
    ADD_FAILURE() << "unexpected issue on line " << issue.line << " '" << issue.text
                  << "': " << issue.message;
  }
  return set;
}

// ---- Matching: one row per (rules, host, port) and the rule that should win. ----

struct MatchCase {
  std::string_view label;  // the test's name
  std::string_view rules;
  std::string_view host;
  std::uint16_t port;
  std::uint32_t line;  // the winning rule's line; 0 when nothing may match
  std::string_view entry = {};
};

void PrintTo(const MatchCase& c, std::ostream* os) { *os << c.label; }

class DomainSetMatch : public ::testing::TestWithParam<MatchCase> {};

TEST_P(DomainSetMatch, ReportsTheMostSpecificRule) {
  const MatchCase& c = GetParam();
  const DomainSet set = load_clean(c.rules);
  const std::optional<RuleMatch> m = set.match(host_of(c.host), c.port);
  if (c.line == 0) {
    EXPECT_FALSE(m.has_value()) << "matched line " << m->line << " '" << m->entry << "'";
    return;
  }
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->line, c.line);
  EXPECT_EQ(m->entry, c.entry);
  EXPECT_EQ(m->source, "rules.txt");
}

const MatchCase kNameCases[] = {
    {"exact", "evil.com", "evil.com", 443, 1, "evil.com"},
    {"subdomain", "evil.com", "a.evil.com", 443, 1, "evil.com"},
    {"deep_subdomain", "evil.com", "a.b.c.d.evil.com", 443, 1, "evil.com"},
    {"suffix_is_not_a_label", "evil.com", "notevil.com", 443, 0},
    {"suffix_is_not_a_label_deep", "evil.com", "a.notevil.com", 443, 0},
    {"parent_not_matched", "a.evil.com", "evil.com", 443, 0},
    {"sibling_not_matched", "a.evil.com", "b.evil.com", 443, 0},
    {"other_tld", "evil.com", "evil.co", 443, 0},
    {"longer_tld", "evil.com", "evil.com.au", 443, 0},
    {"entry_is_a_label_prefix", "evil.com", "evil.community", 443, 0},
    {"top_level_entry", "com", "evil.com", 443, 1, "com"},
    {"single_label", "localhost", "localhost", 80, 1, "localhost"},
    {"one_of_many", "a.org\nb.org\nevil.com\nc.org", "x.evil.com", 443, 3, "evil.com"},
    {"wildcard_subdomain", "*.evil.com", "a.evil.com", 443, 1, "*.evil.com"},
    {"wildcard_deep", "*.evil.com", "a.b.evil.com", 443, 1, "*.evil.com"},
    {"wildcard_not_apex", "*.evil.com", "evil.com", 443, 0},
    {"wildcard_not_lookalike", "*.evil.com", "notevil.com", 443, 0},
    {"wildcard_not_lookalike_sub", "*.evil.com", "a.notevil.com", 443, 0},
};
INSTANTIATE_TEST_SUITE_P(Names, DomainSetMatch, ::testing::ValuesIn(kNameCases),
                         [](const auto& info) { return std::string(info.param.label); });

const MatchCase kPortCases[] = {
    {"single_port_hit", "evil.com:443", "evil.com", 443, 1, "evil.com:443"},
    {"single_port_miss", "evil.com:443", "evil.com", 80, 0},
    {"single_port_subdomain", "evil.com:443", "a.evil.com", 443, 1, "evil.com:443"},
    {"list_first", "evil.com:22,2222", "evil.com", 22, 1, "evil.com:22,2222"},
    {"list_second", "evil.com:22,2222", "evil.com", 2222, 1, "evil.com:22,2222"},
    {"list_miss", "evil.com:22,2222", "evil.com", 23, 0},
    {"list_unsorted_duplicates", "evil.com:9,1,9", "evil.com", 1, 1, "evil.com:9,1,9"},
    {"max_port", "evil.com:65535", "evil.com", 65535, 1, "evil.com:65535"},
    {"wildcard_port", "*.evil.com:443", "a.evil.com", 443, 1, "*.evil.com:443"},
    {"wildcard_port_miss", "*.evil.com:443", "a.evil.com", 80, 0},
    // The same name scoped and unscoped: the scoped line is more specific on its port.
    {"mixed_scoped_first_on_port", "evil.com:443\nevil.com", "evil.com", 443, 1, "evil.com:443"},
    {"mixed_scoped_first_off_port", "evil.com:443\nevil.com", "evil.com", 80, 2, "evil.com"},
    {"mixed_scoped_last_on_port", "evil.com\nevil.com:443", "evil.com", 443, 2, "evil.com:443"},
    {"mixed_scoped_last_off_port", "evil.com\nevil.com:443", "evil.com", 80, 1, "evil.com"},
    {"two_scopes", "evil.com:22\nevil.com:443", "a.evil.com", 443, 2, "evil.com:443"},
    {"port_zero_only_unscoped", "evil.com:443\nevil.com", "evil.com", 0, 2, "evil.com"},
};
INSTANTIATE_TEST_SUITE_P(Ports, DomainSetMatch, ::testing::ValuesIn(kPortCases),
                         [](const auto& info) { return std::string(info.param.label); });

const MatchCase kOverlapCases[] = {
    {"child_beats_parent", "evil.com\na.evil.com", "x.a.evil.com", 443, 2, "a.evil.com"},
    {"child_beats_parent_reversed", "a.evil.com\nevil.com", "x.a.evil.com", 443, 1, "a.evil.com"},
    {"exact_beats_parent", "evil.com\na.evil.com", "a.evil.com", 443, 2, "a.evil.com"},
    {"parent_for_sibling", "evil.com\na.evil.com", "b.evil.com", 443, 1, "evil.com"},
    {"wildcard_child_beats_parent", "evil.com\n*.a.evil.com", "x.a.evil.com", 443, 2,
     "*.a.evil.com"},
    {"wildcard_child_skipped_on_apex", "evil.com\n*.a.evil.com", "a.evil.com", 443, 1, "evil.com"},
    {"plain_and_wildcard_first_wins", "evil.com\n*.evil.com", "a.evil.com", 443, 1, "evil.com"},
    {"wildcard_and_plain_first_wins", "*.evil.com\nevil.com", "a.evil.com", 443, 1, "*.evil.com"},
    {"wildcard_and_plain_apex", "*.evil.com\nevil.com", "evil.com", 443, 2, "evil.com"},
    {"child_on_other_port_falls_back", "evil.com\na.evil.com:22", "a.evil.com", 443, 1, "evil.com"},
    {"child_on_its_port", "evil.com\na.evil.com:22", "a.evil.com", 22, 2, "a.evil.com:22"},
    {"duplicate_first_wins", "evil.com\nevil.com", "evil.com", 443, 1, "evil.com"},
    {"names_before_regex", "re:.*\nevil.com", "evil.com", 443, 2, "evil.com"},
    {"regex_when_name_off_port", "evil.com:443\nre:.*evil.*", "evil.com", 80, 2, "re:.*evil.*"},
    {"tld_and_name", "com\nevil.com", "a.evil.com", 443, 2, "evil.com"},
    // Lookups skip suffixes whose label count no entry has; these mix counts on purpose.
    {"deep_entry", "a.b.c.d.e.f.evil.com", "x.a.b.c.d.e.f.evil.com", 443, 1,
     "a.b.c.d.e.f.evil.com"},
    {"deep_entry_parent_not_matched", "a.b.c.d.e.f.evil.com", "b.c.d.e.f.evil.com", 443, 0},
    {"deep_and_shallow_deep", "evil.com\na.b.c.d.evil.com", "x.a.b.c.d.evil.com", 443, 2,
     "a.b.c.d.evil.com"},
    {"deep_and_shallow_shallow", "evil.com\na.b.c.d.evil.com", "x.b.c.d.evil.com", 443, 1,
     "evil.com"},
    {"host_shorter_than_entries", "a.b.evil.com", "evil.com", 443, 0},
};
INSTANTIATE_TEST_SUITE_P(Overlaps, DomainSetMatch, ::testing::ValuesIn(kOverlapCases),
                         [](const auto& info) { return std::string(info.param.label); });

// `évil` is `xn--vil-9la` in punycode; `xn--vil-bma` is `véil`, a different name.
const MatchCase kNormalisationCases[] = {
    {"idn_entry_punycode_host", "ÉVIL.com.", "xn--vil-9la.com", 443, 1, "ÉVIL.com."},
    {"idn_entry_unicode_host", "ÉVIL.com.", "évil.com", 443, 1, "ÉVIL.com."},
    {"idn_entry_other_name", "ÉVIL.com.", "xn--vil-bma.com", 443, 0},
    {"punycode_entry_unicode_host", "xn--vil-9la.com", "ÉVIL.COM", 443, 1, "xn--vil-9la.com"},
    {"upper_case_entry", "EVIL.COM", "evil.com", 443, 1, "EVIL.COM"},
    {"upper_case_host", "evil.com", "A.EVIL.COM", 443, 1, "evil.com"},
    {"trailing_dot_entry", "evil.com.", "a.evil.com", 443, 1, "evil.com."},
    {"trailing_dot_host", "evil.com", "a.evil.com.", 443, 1, "evil.com"},
    {"wildcard_idn", "*.ÉVIL.com:443", "a.xn--vil-9la.com", 443, 1, "*.ÉVIL.com:443"},
    {"inline_comment", "evil.com   # note", "evil.com", 443, 1, "evil.com"},
    {"inline_comment_no_space", "evil.com#note", "evil.com", 443, 1, "evil.com"},
    {"inline_comment_after_port", "evil.com:443 # https only", "evil.com", 443, 1, "evil.com:443"},
    {"comment_line", "# evil.com\nexample.org", "evil.com", 443, 0},
    {"indented_comment_line", "   # evil.com", "evil.com", 443, 0},
    {"surrounding_whitespace", " \t evil.com \t ", "evil.com", 443, 1, "evil.com"},
    {"blank_lines", "\n\n   \n\t\nevil.com\n\n", "evil.com", 443, 5, "evil.com"},
    {"crlf", "a.org\r\nevil.com\r\n", "evil.com", 443, 2, "evil.com"},
    {"bom_skipped", "\uFEFFevil.com\n", "evil.com", 443, 1, "evil.com"},
    {"no_final_newline", "a.org\nevil.com", "evil.com", 443, 2, "evil.com"},
};
INSTANTIATE_TEST_SUITE_P(Normalisation, DomainSetMatch, ::testing::ValuesIn(kNormalisationCases),
                         [](const auto& info) { return std::string(info.param.label); });

const MatchCase kAddressCases[] = {
    {"v4_dotted", "127.0.0.1", "127.0.0.1", 443, 1, "127.0.0.1"},
    {"v4_short", "127.1", "127.0.0.1", 443, 1, "127.1"},
    {"v4_hex", "0x7f.0.0.1", "127.0.0.1", 443, 1, "0x7f.0.0.1"},
    {"v4_octal", "0177.0.0.1", "127.0.0.1", 443, 1, "0177.0.0.1"},
    {"v4_integer", "2130706433", "127.0.0.1", 443, 1, "2130706433"},
    {"v4_host_spelled_oddly", "127.0.0.1", "0x7f000001", 443, 1, "127.0.0.1"},
    {"v4_other_address", "127.0.0.1", "127.0.0.2", 443, 0},
    {"v4_no_prefix_match", "10.0.0.1", "110.0.0.1", 443, 0},
    {"v4_port", "127.0.0.1:22", "127.0.0.1", 22, 1, "127.0.0.1:22"},
    {"v4_port_miss", "127.0.0.1:22", "127.0.0.1", 23, 0},
    {"v6_bare_entry", "::1", "[::1]", 443, 1, "::1"},
    {"v6_bracketed_entry", "[::1]", "::1", 443, 1, "[::1]"},
    {"v6_long_form", "0:0:0:0:0:0:0:1", "::1", 443, 1, "0:0:0:0:0:0:0:1"},
    {"v6_upper_case", "[2001:DB8::1]", "2001:db8::1", 443, 1, "[2001:DB8::1]"},
    {"v6_port", "[::1]:443", "::1", 443, 1, "[::1]:443"},
    {"v6_port_list", "[::1]:80,443", "::1", 80, 1, "[::1]:80,443"},
    {"v6_port_miss", "[::1]:443", "::1", 80, 0},
    // Two or more colons without brackets are an address, never a port.
    {"v6_unbracketed_is_address", "::1:443", "::1:443", 80, 1, "::1:443"},
    {"v6_unbracketed_no_port", "::1:443", "::1", 443, 0},
    {"v6_other_address", "::1", "::2", 443, 0},
    {"v6_zone_free_entry_any_zone", "fe80::1", "[fe80::1%eth0]", 443, 1, "fe80::1"},
    {"v6_zoned_entry_same_zone", "[fe80::1%eth0]", "[fe80::1%eth0]", 443, 1, "[fe80::1%eth0]"},
    {"v6_zoned_entry_other_zone", "[fe80::1%eth0]", "[fe80::1%eth1]", 443, 0},
    {"v6_zoned_entry_no_zone", "[fe80::1%eth0]", "fe80::1", 443, 0},
    {"name_rule_not_for_address", "com\n1.com", "127.0.0.1", 443, 0},
    {"address_rule_not_for_name", "127.0.0.1\n::1", "evil.com", 443, 0},
};
INSTANTIATE_TEST_SUITE_P(Addresses, DomainSetMatch, ::testing::ValuesIn(kAddressCases),
                         [](const auto& info) { return std::string(info.param.label); });

const MatchCase kRegexCases[] = {
    {"full_match", R"(re:.*\.evil\.com)", "a.evil.com", 443, 1, R"(re:.*\.evil\.com)"},
    {"full_match_deep", R"(re:.*\.evil\.com)", "a.b.evil.com", 443, 1, R"(re:.*\.evil\.com)"},
    {"needs_whole_host", R"(re:.*\.evil\.com)", "evil.com", 443, 0},
    {"not_a_prefix_match", R"(re:.*\.evil\.com)", "a.evil.com.au", 443, 0},
    {"not_a_substring_match", "re:evil", "evil.com", 443, 0},
    {"not_a_substring_match_2", "re:evil", "notevil", 443, 0},
    {"class", R"(re:ev[a-z]l\.com)", "evil.com", 443, 1, R"(re:ev[a-z]l\.com)"},
    {"anchors_allowed", R"(re:^evil\.com$)", "evil.com", 443, 1, R"(re:^evil\.com$)"},
    {"case_insensitive", R"(re:.*\.EVIL\.com)", "a.evil.com", 443, 1, R"(re:.*\.EVIL\.com)"},
    {"port", R"(re:.*\.evil\.com:443)", "a.evil.com", 443, 1, R"(re:.*\.evil\.com:443)"},
    {"port_miss", R"(re:.*\.evil\.com:443)", "a.evil.com", 80, 0},
    {"port_list", R"(re:.*\.evil\.com:22,443)", "a.evil.com", 22, 1, R"(re:.*\.evil\.com:22,443)"},
    {"colon_in_pattern", R"(re:2001:db8::[0-9a-f]+)", "2001:db8::1", 443, 1,
     R"(re:2001:db8::[0-9a-f]+)"},
    {"ipv4_text", R"(re:10\.[0-9.]+)", "10.1.2.3", 443, 1, R"(re:10\.[0-9.]+)"},
    {"ipv4_normalised_text", R"(re:10\.[0-9.]+)", "0xa.1.2.3", 443, 1, R"(re:10\.[0-9.]+)"},
    {"punycode_text", "re:xn--.*", "évil.com", 443, 1, "re:xn--.*"},
    {"first_in_file", "re:a.*\nre:.*", "abc.com", 443, 1, "re:a.*"},
    {"first_in_file_port_skip", "re:.*:443\nre:.*", "abc.com", 80, 2, "re:.*"},
    {"inline_comment", R"(re:.*\.evil\.com  # no apex)", "a.evil.com", 443, 1,
     R"(re:.*\.evil\.com)"},
};
INSTANTIATE_TEST_SUITE_P(Regex, DomainSetMatch, ::testing::ValuesIn(kRegexCases),
                         [](const auto& info) { return std::string(info.param.label); });

// ---- Bad lines: the message, one row per line. ----

struct IssueCase {
  std::string_view label;
  std::string_view line;
  std::string_view message;  // a substring of the expected message
};

void PrintTo(const IssueCase& c, std::ostream* os) { *os << c.label; }

class DomainSetIssue : public ::testing::TestWithParam<IssueCase> {};

TEST_P(DomainSetIssue, IsReportedWithItsLineAndSkipped) {
  const IssueCase& c = GetParam();
  const std::string text = "good.org\n" + std::string(c.line) + "\nother.org\n";
  std::vector<LoadIssue> issues;
  const DomainSet set = load(text, issues);
  ASSERT_EQ(issues.size(), 1u) << c.line;
  EXPECT_EQ(issues[0].source, "rules.txt");
  EXPECT_EQ(issues[0].line, 2u);
  EXPECT_THAT(issues[0].message, HasSubstr(std::string(c.message)));
  EXPECT_EQ(set.size(), 2u);
  EXPECT_TRUE(set.match(host_of("good.org"), 443));
  EXPECT_TRUE(set.match(host_of("other.org"), 443));
}

const IssueCase kIssueCases[] = {
    {"empty_label", "evil..com", to_string(HostError::empty_label)},
    {"userinfo", "user@evil.com", to_string(HostError::userinfo)},
    {"path", "evil.com/x", to_string(HostError::path)},
    {"inner_space", "evil .com", to_string(HostError::whitespace)},
    {"space_before_port", "evil.com :443", to_string(HostError::whitespace)},
    {"bad_ipv4", "1.2.3.256", to_string(HostError::bad_ipv4)},
    {"unbalanced_bracket", "[::1", to_string(HostError::unbalanced_bracket)},
    {"bad_ipv6_brackets", "[evil.com]:443", to_string(HostError::bad_ipv6)},
    {"not_ipv6", "a:b:c", to_string(HostError::bad_character)},
    {"too_long",
     std::string_view("a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
                      "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
                      "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
                      "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
                      "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."),
     to_string(HostError::too_long)},
    {"port_leading_zero", "evil.com:0443", "bad port '0443' (1..65535, no leading zeros)"},
    {"port_zero", "evil.com:0", "bad port '0'"},
    {"port_too_big", "evil.com:65536", "bad port '65536'"},
    {"port_huge", "evil.com:99999999999999999999", "bad port '99999999999999999999'"},
    {"port_empty", "evil.com:", "bad port ''"},
    {"port_trailing_comma", "evil.com:443,", "bad port ''"},
    {"port_sign", "evil.com:+443", "bad port '+443'"},
    {"port_suffix_text", "evil.com:443x", "bad port '443x'"},
    {"port_in_list", "evil.com:22,0022", "bad port '0022'"},
    {"v6_port_empty", "[::1]:", "bad port ''"},
    {"star_alone", "*", "'*.' needs a domain after it"},
    {"star_dot_alone", "*.", "'*.' needs a domain after it"},
    {"star_dot_port", "*.:443", "'*.' needs a domain after it"},
    {"star_inside", "a.*.com", "'*' is only allowed as a whole leading label"},
    {"star_partial_label", "*evil.com", "'*' is only allowed as a whole leading label"},
    {"star_double", "**.evil.com", "'*' is only allowed as a whole leading label"},
    {"star_two_labels", "*.*.evil.com", "'*' is only allowed as a whole leading label"},
    {"star_last", "evil.*", "'*' is only allowed as a whole leading label"},
    {"wildcard_ipv4", "*.1.2.3.4", "wildcard not allowed on an IP address"},
    {"wildcard_ipv6", "*.::1", "wildcard not allowed on an IP address"},
    {"wildcard_ipv6_brackets", "*.[::1]:443", "wildcard not allowed on an IP address"},
    {"regex_empty", "re:", "'re:' needs a pattern after it"},
    {"regex_only_port", "re::443", "'re:' needs a pattern after it"},
    {"regex_bad", "re:(evil", "missing )"},
    {"regex_bad_prefix", "re:[a-", "bad regular expression"},
    {"regex_bad_port", "re:.*:0443", "bad port '0443'"},
    {"regex_too_big", "re:((((a{100}){100}){100}){100})", "bad regular expression"},
};
INSTANTIATE_TEST_SUITE_P(Lines, DomainSetIssue, ::testing::ValuesIn(kIssueCases),
                         [](const auto& info) { return std::string(info.param.label); });

// ---- Loading as a whole ----

TEST(DomainSetLoad, BadLinesKeepTheirNumbersAndTheRestLoads) {
  const std::string_view text =
      "# blocklist\n"        // 1
      "evil.com\n"           // 2
      "bad..name  # why\n"   // 3
      "\n"                   // 4
      "*.tracker.net:443\n"  // 5
      "host:0\n"             // 6
      "re:(\n"               // 7
      "10.0.0.1\n";          // 8
  std::vector<LoadIssue> issues;
  const DomainSet set = load(text, issues);
  ASSERT_EQ(issues.size(), 3u);
  EXPECT_EQ(issues[0].line, 3u);
  EXPECT_EQ(issues[0].text, "bad..name");  // trimmed, comment stripped
  EXPECT_EQ(issues[0].message, to_string(HostError::empty_label));
  EXPECT_EQ(issues[1].line, 6u);
  EXPECT_EQ(issues[1].text, "host:0");
  EXPECT_EQ(issues[2].line, 7u);
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(set.match(host_of("a.tracker.net"), 443)->line, 5u);
  EXPECT_EQ(set.match(host_of("10.0.0.1"), 443)->line, 8u);
}

TEST(DomainSetLoad, CrlfLineNumbersAndIssueText) {
  std::vector<LoadIssue> issues;
  const DomainSet set = load("a.org\r\n\r\nbad..x\r\nevil.com:443\r\n", issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].line, 3u);
  EXPECT_EQ(issues[0].text, "bad..x");
  const auto m = set.match(host_of("evil.com"), 443);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->line, 4u);
  EXPECT_EQ(m->entry, "evil.com:443");
}

TEST(DomainSetLoad, ByteOrderMarkSkippedAtTheStart) {
  std::vector<LoadIssue> issues;
  const DomainSet set = load("\uFEFFa.org\n\uFEFFb.org\n", issues);
  const auto first = set.match(host_of("a.org"), 443);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->entry, "a.org");
  // Further down it is part of the line; UTS #46 maps U+FEFF to nothing, as for any host.
  EXPECT_TRUE(issues.empty());
  EXPECT_TRUE(set.match(host_of("b.org"), 443));
}

TEST(DomainSetLoad, EmptyAndCommentOnlyFiles) {
  for (const std::string_view text : {"", "\n", "# nothing\n   \n#\n", "\uFEFF"}) {
    std::vector<LoadIssue> issues;
    const DomainSet set = load(text, issues);
    EXPECT_TRUE(issues.empty());
    EXPECT_EQ(set.size(), 0u);
    EXPECT_FALSE(set.match(host_of("evil.com"), 443));
    EXPECT_FALSE(set.match(host_of("127.0.0.1"), 443));
  }
}

TEST(DomainSetLoad, VeryLongLines) {
  const std::string padding(100000, ' ');
  const std::string comment = "# " + std::string(100000, 'x');
  const std::string long_name(100000, 'a');
  std::string ports = "many.org:";
  for (int p = 1; p <= 20000; ++p) {
    ports += std::to_string(p) + ",";
  }
  ports += "65535";
  const std::string text = padding + "evil.com" + padding + comment + "\n" + long_name + "\n" +
                           "re:" + std::string(5000, 'a') + "\n" + ports + "\n";
  std::vector<LoadIssue> issues;
  const DomainSet set = load(text, issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].line, 2u);
  EXPECT_EQ(set.size(), 3u);
  const auto m = set.match(host_of("evil.com"), 443);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry, "evil.com");
  EXPECT_TRUE(set.match(host_of("many.org"), 19999));
  EXPECT_FALSE(set.match(host_of("many.org"), 20001));
  EXPECT_TRUE(set.match(host_of("many.org"), 65535));
}

TEST(DomainSetLoad, BadPortMessageIsShortForHugeInput) {
  std::vector<LoadIssue> issues;
  load("evil.com:" + std::string(10000, '9'), issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_LT(issues[0].message.size(), 100u);
}

TEST(DomainSetLoad, NulAndControlBytesAreIssuesNotCrashes) {
  std::vector<LoadIssue> issues;
  constexpr char kText[] = "ev\0il.com\nre:a\0b\n\x01x.com\n";
  const DomainSet set = load(std::string_view(kText, sizeof(kText) - 1), issues);
  EXPECT_EQ(issues.size(), 2u);  // the regex may hold a NUL; no host ever does
  EXPECT_FALSE(set.match(host_of("evil.com"), 443));
}

TEST(DomainSetLoad, SizeCountsNamesAddressesAndPatterns) {
  const DomainSet set = load_clean("a.org\n*.b.org:443\n1.2.3.4\n[::1]\nre:x.*\nre:y.*:22\n");
  EXPECT_EQ(set.size(), 6u);
  EXPECT_GT(set.memory_bytes(), 0u);
}

// ---- Builder, sources, lifetime ----

TEST(DomainSetBuilder, AddLineReportsErrorsAndSkipsBlanks) {
  DomainSet::Builder builder;
  EXPECT_EQ(builder.add_line("", "cli", 1), std::nullopt);
  EXPECT_EQ(builder.add_line("   # only a comment", "cli", 2), std::nullopt);
  EXPECT_EQ(builder.add_line("evil.com:0443", "cli", 3),
            "bad port '0443' (1..65535, no leading zeros)");
  EXPECT_EQ(builder.add_line("evil.com", "cli", 42), std::nullopt);
  const DomainSet set = std::move(builder).build();
  EXPECT_EQ(set.size(), 1u);
  const auto m = set.match(host_of("evil.com"), 1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->source, "cli");
  EXPECT_EQ(m->line, 42u);
}

TEST(DomainSetBuilder, SeveralSourcesIntoOneSet) {
  DomainSet::Builder builder;
  std::vector<LoadIssue> issues;
  EXPECT_EQ(builder.add_text("evil.com\nbad..x\n", "defaults", issues), 1u);
  EXPECT_EQ(builder.add_text("# user\n*.evil.com:443\nre:.*\\.test\n", "user.txt", issues), 2u);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].source, "defaults");
  const DomainSet set = std::move(builder).build();
  EXPECT_EQ(set.size(), 3u);

  auto m = set.match(host_of("a.evil.com"), 443);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->source, "user.txt");
  EXPECT_EQ(m->line, 2u);
  m = set.match(host_of("a.evil.com"), 80);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->source, "defaults");
  EXPECT_EQ(m->line, 1u);
  m = set.match(host_of("x.test"), 80);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->source, "user.txt");
  EXPECT_EQ(m->line, 3u);
}

TEST(DomainSetBuilder, IsEmptyAndUsableAfterBuild) {
  DomainSet::Builder builder;
  builder.add_line("a.org", "one", 1);
  const DomainSet first = std::move(builder).build();
  builder.add_line("b.org", "two", 1);
  const DomainSet second = std::move(builder).build();
  EXPECT_TRUE(first.match(host_of("a.org"), 1));
  EXPECT_FALSE(first.match(host_of("b.org"), 1));
  EXPECT_FALSE(second.match(host_of("a.org"), 1));
  EXPECT_EQ(second.match(host_of("b.org"), 1)->source, "two");
}

TEST(DomainSetLifetime, DefaultAndMovedFromSetsMatchNothing) {
  DomainSet empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_FALSE(empty.match(host_of("evil.com"), 443));
  DomainSet set = load_clean("evil.com\n");
  DomainSet taken = std::move(set);
  EXPECT_FALSE(set.match(host_of("evil.com"), 443));  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(taken.match(host_of("evil.com"), 443));
}

TEST(DomainSetLifetime, MatchViewsSurviveMoves) {
  DomainSet set = load_clean("evil.com:443\nre:x.*\n");
  const auto name = set.match(host_of("evil.com"), 443);
  const auto pattern = set.match(host_of("xyz.org"), 443);
  ASSERT_TRUE(name && pattern);
  DomainSet moved(std::move(set));
  DomainSet assigned;
  assigned = std::move(moved);
  EXPECT_EQ(name->entry, "evil.com:443");
  EXPECT_EQ(name->source, "rules.txt");
  EXPECT_EQ(pattern->entry, "re:x.*");
  EXPECT_EQ(assigned.match(host_of("evil.com"), 443)->entry.data(), name->entry.data());
}

// ---- Scale: the hash table with many names, shared suffixes and long chains ----

// Large enough that the arena and the table take the huge-page allocation path.
TEST(DomainSetScale, ManyNamesAllFoundNoneInvented) {
  constexpr int kNames = 100000;
  std::string text;
  for (int i = 0; i < kNames; ++i) {
    text += "host" + std::to_string(i) + ".example-" + std::to_string(i % 97) + ".com\n";
  }
  for (int i = 0; i < 300; ++i) {
    text += "chain.org:" + std::to_string(i + 1) + "\n";  // one name, 300 lines
  }
  const DomainSet set = load_clean(text);
  EXPECT_EQ(set.size(), kNames + 300u);
  for (int i = 0; i < kNames; i += 7) {
    const std::string name =
        "host" + std::to_string(i) + ".example-" + std::to_string(i % 97) + ".com";
    const auto m = set.match(host_of("a.b." + name), 443);
    ASSERT_TRUE(m) << name;
    EXPECT_EQ(m->line, static_cast<std::uint32_t>(i + 1));
    EXPECT_FALSE(set.match(host_of("x" + name), 443)) << name;
    EXPECT_FALSE(set.match(host_of("example-" + std::to_string(i % 97) + ".com"), 443));
  }
  for (std::uint16_t port = 1; port <= 300; port += 13) {
    EXPECT_EQ(set.match(host_of("chain.org"), port)->line, kNames + port);
  }
  EXPECT_FALSE(set.match(host_of("chain.org"), 301));
  EXPECT_LT(set.memory_bytes() / set.size(), 100u);
}

TEST(DomainSetScale, ManyPatternsInOneSet) {
  std::string text;
  for (int i = 0; i < 500; ++i) {
    text += "re:p" + std::to_string(i) + "-[a-z]+\\.example\\.com\n";
  }
  const DomainSet set = load_clean(text);
  EXPECT_EQ(set.match(host_of("p123-abc.example.com"), 443)->line, 124u);
  EXPECT_FALSE(set.match(host_of("p123-abc.example.org"), 443));
  EXPECT_FALSE(set.match(host_of("p1234-abc.example.com"), 443));
}

// ---- Robustness: arbitrary lines never crash, and every plain entry matches its own name ----

TEST(DomainSetRobustness, RandomLinesLoadOrAreRefused) {
  constexpr std::string_view kAlphabet = "ab.-*:[]%#,019 \t\r@/_re\x80\xc3\xa9\xff";
  std::uint64_t state = 42;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>(state >> 33);
  };
  DomainSet::Builder builder;
  std::vector<std::string> plain;  // accepted lines that name one host on every port
  for (std::uint32_t line = 1; line <= 5000; ++line) {
    std::string text;
    const std::size_t length = next() % 24;
    for (std::size_t i = 0; i < length; ++i) {
      text += kAlphabet[next() % kAlphabet.size()];
    }
    if (next() % 4 == 0) {
      text = "re:" + text;
    }
    const bool ok = !builder.add_line(text, "random", line).has_value();
    const std::string_view entry = std::string_view(text).substr(0, text.find('#'));
    if (ok && !entry.starts_with("re:") && entry.find_first_of(":*") == std::string_view::npos) {
      plain.emplace_back(entry);
    }
  }
  const DomainSet set = std::move(builder).build();
  EXPECT_GT(plain.size(), 100u);  // the alphabet still yields plenty of valid names
  for (const std::string& entry : plain) {
    const std::size_t first = entry.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
      continue;  // a blank or comment line
    }
    const std::size_t last = entry.find_last_not_of(" \t\r");
    const auto host = parse_host(std::string_view(entry).substr(first, last - first + 1));
    ASSERT_TRUE(host) << "the set accepted '" << entry << "' but parse_host does not";
    EXPECT_TRUE(set.match(*host, 1)) << entry;
  }
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const std::size_t length = next() % 16 + 1;
    for (std::size_t k = 0; k < length; ++k) {
      text += kAlphabet[next() % kAlphabet.size()];
    }
    if (auto host = parse_host(text)) {
      set.match(*host, static_cast<std::uint16_t>(next()));  // must simply not crash
    }
  }
}

}  // namespace
}  // namespace sandgate::rules

namespace sandgate::rules {
namespace {

// An IPv4 address written as IPv4-mapped IPv6 is that IPv4 address: the entry matches the dotted
// form (how destinations are matched).
TEST(DomainSetIpEntries, MappedEntriesMatchTheIpv4Address) {
  std::vector<LoadIssue> issues;
  const DomainSet set = DomainSet::parse(
      "::ffff:127.0.0.1\n[::ffff:203.0.113.9]:443\n::ffff:7f00:2\n", "blocked.txt", issues);
  ASSERT_TRUE(issues.empty());
  auto match = [&set](std::string_view text, std::uint16_t port) -> std::optional<RuleMatch> {
    auto host = parse_host(text);
    return host ? set.match(*host, port) : std::nullopt;
  };
  ASSERT_TRUE(match("127.0.0.1", 80));
  EXPECT_EQ(match("127.0.0.1", 80)->line, 1u);
  EXPECT_EQ(match("127.0.0.1", 80)->entry, "::ffff:127.0.0.1");
  EXPECT_TRUE(match("203.0.113.9", 443));
  EXPECT_FALSE(match("203.0.113.9", 80));
  EXPECT_TRUE(match("127.0.0.2", 80));
  EXPECT_FALSE(match("127.0.0.3", 80));
}

TEST(DomainSetMessage, AMatchCarriesItsEntrysMessage) {
  std::vector<LoadIssue> issues;
  DomainSet::Builder builder;
  builder.add_text(
      "plain.example\n"
      "github.com:22  #! SSH pushes are blocked here; use an https:// remote\n"
      "re:.*\\.ngrok-free\\.app  #! tunnels to your laptop are not allowed\n"
      "# a comment line #! that is not an entry\n",
      "blocked.txt", issues);
  builder.add_text("other.example  #! from the second file\n", "more.txt", issues);
  const DomainSet set = std::move(builder).build();
  ASSERT_TRUE(issues.empty());
  auto match = [&set](const char* host, std::uint16_t port) {
    return set.match(*parse_host(host), port);
  };
  auto ssh = match("github.com", 22);
  ASSERT_TRUE(ssh.has_value());
  EXPECT_EQ(ssh->message, "SSH pushes are blocked here; use an https:// remote");
  EXPECT_EQ(ssh->entry, "github.com:22");
  EXPECT_FALSE(match("github.com", 443).has_value());
  auto plain = match("plain.example", 443);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->message, "");
  auto pattern = match("x.ngrok-free.app", 443);
  ASSERT_TRUE(pattern.has_value());
  EXPECT_EQ(pattern->message, "tunnels to your laptop are not allowed");
  auto second = match("a.other.example", 80);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->source, "more.txt");
  EXPECT_EQ(second->message, "from the second file");
}

TEST(DomainSetMessage, ABadLineKeepsNoMessage) {
  std::vector<LoadIssue> issues;
  const DomainSet set =
      DomainSet::parse("bad..example  #! never shown\ngood.example\n", "b.txt", issues);
  ASSERT_EQ(issues.size(), 1u);
  auto good = set.match(*parse_host("good.example"), 443);
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->message, "");
}

}  // namespace
}  // namespace sandgate::rules
