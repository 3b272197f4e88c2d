// The MCP lines of the request-rules file (rules/mcp_rules.hpp): their grammar and issues, the
// decision (groups apart from the HTTP lines, first line wins, an allow-list per word), case and
// odd names, and what makes a host inspected.
#include "rules/mcp_rules.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/request_rules.hpp"

namespace sandgate::rules {
namespace {

Host host(std::string_view text) { return parse_host(text).value(); }

struct Loaded {
  RequestRules rules;
  std::vector<LoadIssue> issues;
};

Loaded load(std::string_view text) {
  Loaded loaded;
  loaded.rules = RequestRules::parse(text, "requests.txt", {}, "SANDGATE_INSPECT", loaded.issues);
  return loaded;
}

using Kind = McpVerdict::Kind;

Kind tool(const Loaded& loaded, std::string_view name, std::string_view on = "mcp.example.com") {
  return loaded.rules.mcp().decide(host(on), 443, McpKind::tool, name).kind;
}

constexpr std::string_view kGitHubLike =
    "allow mcp.example.com mcp-tool search\n"
    "allow mcp.example.com mcp-tool read_*\n"
    "deny  mcp.example.com mcp-tool delete_*   #! agents never delete\n"
    "allow mcp.example.com mcp-tool *_issue\n";

TEST(McpRules, AToolGroupIsAnAllowListFirstLineWins) {
  const auto loaded = load(kGitHubLike);
  ASSERT_TRUE(loaded.issues.empty());
  EXPECT_EQ(tool(loaded, "search"), Kind::allowed);
  EXPECT_EQ(tool(loaded, "read_file"), Kind::allowed);
  EXPECT_EQ(tool(loaded, "read_"), Kind::allowed);
  EXPECT_EQ(tool(loaded, "create_issue"), Kind::allowed);
  // The deny line comes before `*_issue`: first line wins.
  EXPECT_EQ(tool(loaded, "delete_issue"), Kind::denied);
  EXPECT_EQ(tool(loaded, "delete_repo"), Kind::denied);
  // No line: not allowed (the group is an allow-list).
  EXPECT_EQ(tool(loaded, "push_files"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "searchx"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "xsearch"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, ""), Kind::not_allowed);
  // Subdomains are the entry's too; another host is not judged.
  EXPECT_EQ(tool(loaded, "search", "eu.mcp.example.com"), Kind::allowed);
  EXPECT_EQ(tool(loaded, "delete_repo", "other.example.com"), Kind::unruled);
}

TEST(McpRules, DenyLinesMatchAnyCaseAllowLinesOnlyTheirOwn) {
  const auto loaded = load(kGitHubLike);
  // A case-insensitive server would run these as delete_repo: stopped.
  EXPECT_EQ(tool(loaded, "DELETE_repo"), Kind::denied);
  EXPECT_EQ(tool(loaded, "Delete_Repo"), Kind::denied);
  // A case-sensitive server may hold SEARCH as another tool: not what `allow search` names.
  EXPECT_EQ(tool(loaded, "SEARCH"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "Read_file"), Kind::not_allowed);
}

TEST(McpRules, OddNamesAreAllowedOnlyByALineNamingThemExactly) {
  const auto loaded = load(
      "allow mcp.example.com mcp-tool *\n"
      "allow mcp.example.com mcp-tool r\xC3\xA9sum\xC3\xA9\n");
  ASSERT_TRUE(loaded.issues.empty()) << loaded.issues[0].message;
  EXPECT_EQ(tool(loaded, "anything_plain"), Kind::allowed);
  // A Cyrillic е in `dеlete`, a space, a control byte, a '#', a '*': no pattern allows them.
  EXPECT_EQ(tool(loaded, "d\xD0\xB5lete"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "two words"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, std::string("nul\0byte", 8)), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "tab\there"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "hash#tag"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "star*"), Kind::not_allowed);
  EXPECT_EQ(tool(loaded, std::string(kMaxMcpName + 1, 'a')), Kind::not_allowed);
  // The one line that names it byte for byte allows it; its decomposed spelling is another name.
  EXPECT_EQ(tool(loaded, "r\xC3\xA9sum\xC3\xA9"), Kind::allowed);
  EXPECT_EQ(tool(loaded, "re\xCC\x81sume\xCC\x81"), Kind::not_allowed);
}

TEST(McpRules, DenyPatternsStopOddNamesToo) {
  const auto loaded = load(
      "deny  mcp.example.com mcp-tool delete*\n"
      "allow mcp.example.com mcp-tool delete\xE2\x80\x8B\n");
  ASSERT_TRUE(loaded.issues.empty());
  // A zero-width space after `delete`: the deny pattern comes first.
  EXPECT_EQ(tool(loaded, "delete\xE2\x80\x8B"), Kind::denied);
  EXPECT_EQ(tool(loaded, "DELETE\n"), Kind::denied);
}

TEST(McpRules, PromptsAndResourcesAreJudgedOnlyWhereLinesNameThem) {
  const auto loaded = load(
      "allow mcp.example.com mcp-tool search\n"
      "allow docs.example.com mcp-prompt summarise\n"
      "allow docs.example.com mcp-resource repo://docs/**\n"
      "allow docs.example.com mcp-resource file:///pub/*.txt\n"
      "deny  docs.example.com mcp-resource repo://docs/secret/**  #! not for agents\n");
  ASSERT_TRUE(loaded.issues.empty());
  const McpRules& mcp = loaded.rules.mcp();
  const Host docs = host("docs.example.com");
  const Host tools = host("mcp.example.com");
  // mcp.example.com has tool lines only: its prompts and resources pass.
  EXPECT_EQ(mcp.decide(tools, 443, McpKind::prompt, "anything").kind, Kind::unruled);
  EXPECT_EQ(mcp.decide(tools, 443, McpKind::resource, "file:///etc/passwd").kind, Kind::unruled);
  EXPECT_TRUE(mcp.judges(tools, 443, McpKind::tool));
  EXPECT_FALSE(mcp.judges(tools, 443, McpKind::prompt));
  // docs.example.com has no tool lines: its tools pass; prompts and resources are allow-lists.
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::tool, "delete_everything").kind, Kind::unruled);
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::prompt, "summarise").kind, Kind::allowed);
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::prompt, "other").kind, Kind::not_allowed);
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::resource, "repo://docs/a/b.md").kind, Kind::allowed);
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::resource, "repo://docs").kind, Kind::not_allowed);
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::resource, "file:///pub/a.txt").kind, Kind::allowed);
  // `*` stays within a segment in a URI.
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::resource, "file:///pub/a/b.txt").kind,
            Kind::not_allowed);
  // A URI a server may decode into another is not plain: patterns do not allow it.
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::resource, "repo://docs/../secret/k").kind,
            Kind::not_allowed);
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::resource, "repo://docs/%2e%2e/secret/k").kind,
            Kind::not_allowed);
  EXPECT_EQ(mcp.decide(docs, 443, McpKind::resource, "repo://docs/a\\b").kind, Kind::not_allowed);
}

TEST(McpRules, TheDeniedSentenceNamesTheRuleAndItsMessage) {
  const auto loaded = load(kGitHubLike);
  const McpRules& mcp = loaded.rules.mcp();
  const auto verdict = mcp.decide(host("mcp.example.com"), 443, McpKind::tool, "delete_repo");
  EXPECT_EQ(mcp.explain(verdict, "mcp.example.com", "delete_repo"),
            "tool delete_repo on mcp.example.com is denied by the request rule 'deny  "
            "mcp.example.com mcp-tool delete_*' (requests.txt line 3). agents never delete");
  EXPECT_EQ(mcp_rule_text(verdict), "requests.txt:3 deny  mcp.example.com mcp-tool delete_*");
  const auto none = mcp.decide(host("mcp.example.com"), 443, McpKind::tool, "d\xD0\xB5lete");
  EXPECT_EQ(mcp.explain(none, "mcp.example.com", "d\xD0\xB5lete"),
            "tool \"d\\xD0\\xB5lete\" on mcp.example.com is not allowed: no mcp-tool rule for "
            "'mcp.example.com' (requests.txt line 1) allows it. The name is not plain ASCII (or "
            "holds a space, '#', '*'): only a line naming it exactly can allow it.");
  EXPECT_EQ(mcp_rule_text(none), "requests.txt:1 mcp.example.com mcp-tool (no line allows it)");
}

TEST(McpRules, BadLinesAreIssuesNamingFileAndLine) {
  const auto loaded = load(
      "allow mcp.example.com mcp-tool\n"
      "allow mcp.example.com mcp-tool a b\n"
      "permit mcp.example.com mcp-tool a\n"
      "allow mcp.example.com:0 mcp-tool a\n"
      "allow mcp.example.com mcp-tool r\xC3\xA9*\n"
      "allow mcp.example.com mcp-tool \xC3\n"
      "allow mcp.example.com mcp-resource a/***\n"
      "allow mcp.example.com mcp-tool,GET a\n"
      "allow mcp.example.com mcp-tool ok\n");
  ASSERT_EQ(loaded.issues.size(), 8u);
  EXPECT_EQ(loaded.rules.mcp().size(), 1u);
  const std::vector<std::string> expected = {
      "an MCP rule is: allow|deny HOST mcp-tool NAME-PATTERN",
      "too many fields ('b'): an MCP rule is: allow|deny HOST mcp-tool NAME-PATTERN",
      "a request rule starts with allow or deny (got 'permit')",
      "",  // the HOST entry's own message
      "a pattern with characters outside ASCII must name one name exactly (no '*'): lookalikes "
      "are allowed only by their own line",
      "the pattern is not valid UTF-8",
      "'***' in a resource pattern (use '*' within a segment, '**' across segments)",
      "bad method 'mcp-tool' (an HTTP method in upper case, git-fetch, git-push, or * for any)",
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(loaded.issues[i].source, "requests.txt");
    EXPECT_EQ(loaded.issues[i].line, i + 1);
    if (!expected[i].empty()) {
      EXPECT_EQ(loaded.issues[i].message, expected[i]) << i;
    }
  }
}

TEST(McpRules, AHostWithOnlyMcpLinesIsInspectedButItsHttpRequestsAreNotJudged) {
  const auto loaded = load("allow mcp.example.com mcp-tool search\n");
  const RequestRules& rules = loaded.rules;
  EXPECT_TRUE(rules.inspects(host("mcp.example.com"), 443));
  EXPECT_TRUE(rules.guards(host("mcp.example.com"), 443));
  EXPECT_FALSE(rules.judges(host("mcp.example.com"), 443));
  EXPECT_FALSE(rules.inspects(host("example.org"), 443));
  const RequestFacts facts{"POST", "/mcp", "", "application/json"};
  EXPECT_EQ(rules.decide(host("mcp.example.com"), 443, facts).kind, RequestVerdict::Kind::unruled);
  EXPECT_FALSE(rules.empty());
  EXPECT_EQ(rules.size(), 1u);
}

TEST(McpRules, HttpLinesOfTheSameHostStayTheirOwnAllowList) {
  const auto loaded = load(
      "allow mcp.example.com POST /mcp\n"
      "allow mcp.example.com mcp-tool search\n");
  ASSERT_TRUE(loaded.issues.empty());
  const RequestRules& rules = loaded.rules;
  EXPECT_EQ(rules.decide(host("mcp.example.com"), 443, {"POST", "/mcp", "", ""}).kind,
            RequestVerdict::Kind::allowed);
  EXPECT_EQ(rules.decide(host("mcp.example.com"), 443, {"GET", "/mcp", "", ""}).kind,
            RequestVerdict::Kind::not_allowed);
  EXPECT_EQ(tool(loaded, "search"), Kind::allowed);
  EXPECT_EQ(tool(loaded, "other"), Kind::not_allowed);
}

TEST(McpRules, PlainNames) {
  EXPECT_TRUE(plain_name(McpKind::tool, "create_pull_request"));
  EXPECT_TRUE(plain_name(McpKind::tool, "github.search-code/v2"));
  EXPECT_FALSE(plain_name(McpKind::tool, ""));
  EXPECT_FALSE(plain_name(McpKind::tool, "a b"));
  EXPECT_FALSE(plain_name(McpKind::tool, "caf\xC3\xA9"));
  EXPECT_TRUE(plain_name(McpKind::tool, "100%"));
  EXPECT_FALSE(plain_name(McpKind::resource, "file:///a%20b"));
  EXPECT_FALSE(plain_name(McpKind::resource, "file:///a/."));
  EXPECT_TRUE(plain_name(McpKind::resource, "file:///a/.b"));
  EXPECT_EQ(shown_name(McpKind::tool, "a b"), "\"a\\x20b\"");
}

}  // namespace
}  // namespace sandgate::rules
