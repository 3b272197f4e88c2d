// Request rules: which HTTP requests may be made to a host, beyond whether the host may be
// reached at all (rules/policy.hpp). They are read from the request-rules file
// (SANDGATE_REQUEST_RULES), one rule a line, and apply to plain-HTTP requests and to the
// requests inside inspected TLS connections alike:
//
//   allow  api.github.com  GET,HEAD  /repos/**
//   deny   api.github.com  DELETE                 #! the API is read-only here
//   allow  github.com      git-fetch
//   allow  github.com      git-push  /ourorg/*
//   allow  mcp.example.com mcp-tool  search       (MCP: rules/mcp_rules.hpp)
//
//   LINE    := VERB HOST [METHODS [PATH]]    ('#' starts a comment, '#!' a message, as in the
//                                             other rules files)
//   VERB    := allow | deny
//   HOST    := an entry as in the blocklist: name (and subdomains), *.name, re:PATTERN, an IP
//              literal, each optionally with :PORTS
//   METHODS := * | METHOD[,METHOD...]; a METHOD is an HTTP method in upper case, or git-fetch
//              (smart-HTTP git-upload-pack: clone, fetch, pull) or git-push (git-receive-pack);
//              or alone, one of the MCP words mcp-tool, mcp-prompt, mcp-resource, whose PATH
//              is then a name or URI pattern (rules/mcp_rules.hpp: MCP lines are grouped and
//              decided apart from the HTTP lines)
//   PATH    := a pattern starting with '/': `*` matches within one segment, `**` across
//              segments, and a trailing `/**` also matches the path without it. Default: `/**`.
//              For git-fetch and git-push it is matched against the repository's path (without
//              a trailing `.git`); otherwise against the request's path (without the query).
//              ASCII case is ignored (the big git hosts ignore it in owner and repository names,
//              so a deny rule cannot be passed by changing case).
//
// How a request is decided: the lines are grouped by their HOST entry; the most specific entry
// matching the request's host and port picks the group (as the blocklist picks its entry), and
// the first line of that group whose methods and path match decides. A request to a host that
// has a group and matches none of its lines is denied: a group is an allow-list. A host with no
// group is not judged here.
//
// A host with a group, with MCP lines, or named by the inspection patterns (SANDGATE_INSPECT),
// has its TLS connections inspected: the gate terminates them to see their requests.
//
// Paths are judged in one normal form, and a request whose path has none (normalise_path) is
// refused, so that no spelling of a path reaches an origin as another path than the one judged.
//
// A built RequestRules is immutable and shared by every worker thread; decide() is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/domain_set.hpp"
#include "rules/expected.hpp"
#include "rules/host.hpp"
#include "rules/mcp_rules.hpp"
#include "rules/rule_line.hpp"

namespace sandgate::rules {

// What a git smart-HTTP request does.
enum class GitService : std::uint8_t {
  none,   // not a git request
  fetch,  // git-upload-pack: clone, fetch, pull, ls-remote
  push,   // git-receive-pack
};
std::string_view to_string(GitService service);  // "", "git-fetch", "git-push"

// A request as the rules see it. `path` is in normal form (normalise_path).
struct RequestFacts {
  std::string_view method;
  std::string_view path;
  std::string_view query;  // without the '?'; empty when none
  // The Content-Type header: a POST is git's fetch only with git's type
  // (application/x-git-upload-pack-request).
  std::string_view content_type;
};

// The git side of a request: the service and the repository's path ("/ourorg/repo", without
// `.git`), or GitService::none.
struct GitRequest {
  GitService service = GitService::none;
  std::string repository;
};
GitRequest classify_git(const RequestFacts& request);

// The methods `_method` query parameters name (decoded), which frameworks such as Laravel and
// Symfony act on as the request's method (every one: an origin may read the first or the last).
// A parameter is taken for one whatever its case, `;` separates parameters too, and a name PHP
// reads as `_method` (` method`, `.method`, `[method`) counts.
std::vector<std::string> query_method_overrides(std::string_view query);

// True when `text` is one HTTP method token (RFC 9110): what an override must be to be judged.
bool is_method_token(std::string_view text);

// The path of an origin-form target (`/a/b?x=1`) in the normal form rules are matched against:
// percent-escapes decoded, and the query apart. The error is a sentence for the client: a path
// whose meaning an origin could read differently from the gate is refused (dot segments, empty
// segments, an escaped '/' or '\', a backslash, ';' parameters, control bytes, bytes outside
// ASCII (an overlong UTF-8 '.', a fullwidth '．'), a bad escape).
struct NormalPath {
  std::string path;
  std::string query;
};
Expected<NormalPath, std::string> normalise_path(std::string_view origin_form);

// One line of the file.
struct RequestRule {
  bool allow = false;
  std::string source;  // the file
  std::uint32_t line = 0;
  std::string text;                  // the line's entry as written (comment stripped)
  std::string host;                  // the HOST as written
  std::string message;               // the `#!` message, or empty
  std::vector<std::string> methods;  // upper-case methods; empty with the flags below: any
  bool git_fetch = false;
  bool git_push = false;
  std::string path_pattern = "/**";
};

// What the rules say of one request.
struct RequestVerdict {
  enum class Kind : std::uint8_t {
    unruled,      // the host has no group: not judged here
    allowed,      // an allow line matched
    denied,       // a deny line matched
    not_allowed,  // the host has a group and no line of it matched
  };
  Kind kind = Kind::unruled;
  const RequestRule* rule = nullptr;  // the line that matched (allowed, denied)
  std::string_view group;             // the group's HOST entry (not unruled)
  std::string_view group_source;      // where the group was written, and its first line
  std::uint32_t group_line = 0;

  bool permits() const { return kind == Kind::unruled || kind == Kind::allowed; }
};

class RequestRules {
 public:
  RequestRules();
  ~RequestRules();
  RequestRules(RequestRules&&) noexcept;
  RequestRules& operator=(RequestRules&&) noexcept;

  // Parses the request-rules file's text (`source` names it in matches and issues) and the
  // inspection patterns (SANDGATE_INSPECT: HOST entries, `inspect_source` names where they were
  // given). Bad lines go to `issues` and are skipped.
  static RequestRules parse(std::string_view text, std::string_view source,
                            const std::vector<std::string>& inspect,
                            std::string_view inspect_source, std::vector<LoadIssue>& issues);

  // True when connections to host:port are inspected: its host has a group or MCP lines, or
  // an inspection pattern names it.
  bool inspects(const Host& host, std::uint16_t port) const;
  // The MCP lines of the file (tools, prompts, resources), decided apart from the HTTP lines.
  const McpRules& mcp() const;
  // True when host:port has a group (its requests are judged).
  bool judges(const Host& host, std::uint16_t port) const;
  // True when host:port has a group or MCP lines: no connection to it may carry requests
  // unjudged (a tunnel to it that cannot be inspected is refused).
  bool guards(const Host& host, std::uint16_t port) const;

  RequestVerdict decide(const Host& host, std::uint16_t port, const RequestFacts& request) const;

  // One sentence for a verdict that does not permit, e.g. "POST /x on api.github.com is denied
  // by the request rule 'deny api.github.com POST' (requests.txt line 3)." with its message.
  std::string explain(const RequestVerdict& verdict, std::string_view host,
                      const RequestFacts& request) const;

  std::size_t size() const;  // lines loaded (HTTP and MCP)
  bool empty() const { return size() == 0 && !has_inspect_patterns(); }
  bool has_inspect_patterns() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A request as people read it: "POST api.github.com/repos/o/r/pulls", "git push to
// github.com/o/r". For sentences and questions.
std::string describe_request(std::string_view host, const RequestFacts& request);

// The rule that decided, as the log shows it: "source:line: text"; empty for none.
std::string request_rule_text(const RequestVerdict& verdict);

}  // namespace sandgate::rules
