// MCP rules: which tools, prompts and resources of a remote MCP server (Streamable HTTP) an agent
// may use. They are lines of the request-rules file (rules/request_rules.hpp) whose METHODS word
// is one of the MCP words, with the name (or URI) pattern in the PATH column:
//
//   allow  mcp.example.com  mcp-tool      search
//   allow  mcp.example.com  mcp-tool      read_*
//   deny   mcp.example.com  mcp-tool      delete_*          #! agents never delete
//   allow  mcp.example.com  mcp-prompt    summarise
//   allow  mcp.example.com  mcp-resource  repo://docs/**
//
//   WORD     := mcp-tool     a `tools/call`, by the tool's name
//             | mcp-prompt   a `prompts/get`, by the prompt's name
//             | mcp-resource a `resources/read` or `resources/subscribe`, by the resource's URI
//   PATTERN  := for names, `*` matches any run of characters; for URIs, `*` matches within one
//               `/`-separated segment and `**` across segments. Nothing else is special.
//
// How a call is decided: the MCP lines are grouped by their HOST entry (apart from the HTTP
// lines: a host's HTTP requests are judged by its HTTP lines alone, so a host with only MCP
// lines has its HTTP requests unjudged), the most specific entry matching the host picks the
// group, and the first line of the group of the call's word whose pattern matches decides. A
// host whose group has lines of a word and matches none of them denies the call (an allow-list);
// a host without lines of that word does not judge it (prompts and resources pass unless lines
// name them; tools too, on a host with only prompt or resource lines).
//
// Names are judged as the server reads them, strictly:
//   - an allow line matches with the case as written (`allow search` does not allow `SEARCH`,
//     which a case-sensitive server may hold as another tool); a deny line matches in any ASCII
//     case (`deny delete_*` also stops `DELETE_repo`);
//   - a name that is not plain (plain_name()) is allowed only by a line that names it exactly,
//     byte for byte (no pattern), never by a pattern: a non-ASCII lookalike (`dеlete`, with a
//     Cyrillic е) or a name with spaces or control bytes is not what a person read in a line;
//     deny patterns still match it.
// URIs likewise, and a URI with a `%` escape, a `\`, or a `.`/`..` segment is not plain (a server
// may decode it into another URI than the one judged).
//
// A built McpRules is immutable; everything here is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rules/domain_set.hpp"
#include "rules/host.hpp"
#include "rules/rule_line.hpp"

namespace sandgate::rules {

// What an MCP line (and a call) is about.
enum class McpKind : std::uint8_t { tool, prompt, resource };
inline constexpr std::size_t kMcpKindCount = 3;

std::string_view mcp_word(McpKind kind);  // "mcp-tool", "mcp-prompt", "mcp-resource"
std::string_view mcp_noun(McpKind kind);  // "tool", "prompt", "resource"
// The kind a METHODS word names; nothing for any other word.
std::optional<McpKind> parse_mcp_word(std::string_view word);

// True when `name` can be matched by patterns, asked about and written in a rule line: printable
// ASCII without spaces, '#' or '*' (and for a resource's URI, without '%', '\' or dot segments).
bool plain_name(McpKind kind, std::string_view name);

// The longest name or URI a call may carry; a longer one is not judged (refused).
inline constexpr std::size_t kMaxMcpName = 4096;

// One MCP line of the file.
struct McpRule {
  bool allow = false;
  McpKind kind = McpKind::tool;
  std::string source;
  std::uint32_t line = 0;
  std::string text;      // the line's entry as written (comment stripped)
  std::string host;      // the HOST as written
  std::string message;   // the `#!` message, or empty
  std::string pattern;   // the name or URI pattern as written
  bool literal = false;  // the pattern has no `*`: it names one name
};

// What the MCP rules say of one call.
struct McpVerdict {
  enum class Kind : std::uint8_t {
    unruled,      // the host has no lines of the call's word: not judged here
    allowed,      // an allow line matched
    denied,       // a deny line matched
    not_allowed,  // the host has lines of the word and none matched
  };
  Kind kind = Kind::unruled;
  McpKind about = McpKind::tool;
  const McpRule* rule = nullptr;  // the line that matched (allowed, denied)
  std::string_view group;         // the group's HOST entry (not unruled)
  std::string_view group_source;
  std::uint32_t group_line = 0;  // the group's first line of the call's word

  bool permits() const { return kind == Kind::unruled || kind == Kind::allowed; }
};

class McpRules {
 public:
  McpRules();
  ~McpRules();
  McpRules(McpRules&&) noexcept;
  McpRules& operator=(McpRules&&) noexcept;

  // Collects the MCP lines while the request-rules file is read (RequestRules::parse).
  class Builder {
   public:
    Builder();
    ~Builder();
    // The line's HOST entry as parsed, its group key (one per spelling of one entry), the rule.
    // The error sentence when the pattern is bad (the line is then skipped by the caller).
    std::optional<std::string> add(std::string_view group_key, McpRule rule);
    McpRules build() &&;

   private:
    std::unique_ptr<McpRules> rules_;
  };

  // True when host:port has MCP lines of any word: its connections are inspected and its POST
  // bodies read as JSON-RPC.
  bool judges(const Host& host, std::uint16_t port) const;
  // True when host:port has lines of `kind`: such calls are judged, and lists of them filtered.
  bool judges(const Host& host, std::uint16_t port, McpKind kind) const;

  McpVerdict decide(const Host& host, std::uint16_t port, McpKind kind,
                    std::string_view name) const;

  // One sentence for a verdict, e.g. "tool delete_repo on mcp.example.com is denied by the
  // request rule 'deny mcp.example.com mcp-tool delete_*' (requests.txt line 3). agents never
  // delete". `name` is shown escaped when it is not plain.
  std::string explain(const McpVerdict& verdict, std::string_view host,
                      std::string_view name) const;

  std::size_t size() const;  // lines loaded

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses the PATTERN field of an MCP line: the error sentence, or nothing.
std::optional<std::string> mcp_pattern_problem(McpKind kind, std::string_view pattern);

// A name as sentences and logs show it: as it is when plain, otherwise quoted with every byte
// outside printable ASCII as \xHH ("\"d\\xD0\\xB5lete\"").
std::string shown_name(McpKind kind, std::string_view name);

// The rule that decided, as the log shows it: "source:line: text"; empty for none.
std::string mcp_rule_text(const McpVerdict& verdict);

}  // namespace sandgate::rules
