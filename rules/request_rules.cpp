// Request rules: the file's grammar, the path normal form, git's smart-HTTP requests, and the
// decision (see request_rules.hpp).
//
// Host entries are matched by one DomainSet holding each group's entry once (its line number
// there is the group's index), so picking the group costs what a blocklist lookup costs. Paths
// are matched by RE2 (a glob compiled to a linear-time pattern), so no pattern and no path can
// make a match slow.
#include "rules/request_rules.hpp"

#include "rules/ascii.hpp"
#include "rules/percent_escape.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>

namespace sandgate::rules {
namespace {

constexpr std::string_view kSpaces = " \t";

// The fields of an entry, split on spaces and tabs.
std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t start = text.find_first_not_of(kSpaces, at);
    if (start == std::string_view::npos) {
      break;
    }
    std::size_t end = text.find_first_of(kSpaces, start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    fields.push_back(text.substr(start, end - start));
    at = end;
  }
  return fields;
}

bool is_upper_method(std::string_view method) {
  return !method.empty() && std::all_of(method.begin(), method.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

std::string byte_name(unsigned char byte) {
  if (byte >= 0x21 && byte < 0x7f) {
    return std::string("'") + static_cast<char>(byte) + "'";
  }
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 15];
}

// Bytes that must not reach a path judged by rules, written or escaped: they would let an
// origin read another path than the one judged (';' parameters, '\' as a separator, '%'
// decoded twice, non-ASCII bytes that some origins fold into ASCII: an overlong UTF-8 '.', a
// fullwidth '．') or are no part of a path at all.
bool refused_in_path(unsigned char byte) {
  return byte < 0x20 || byte >= 0x7f || byte == '\\' || byte == ';' || byte == '?' || byte == '#';
}

// The glob of a PATH as an RE2 pattern matching the whole path, ASCII case ignored.
std::string glob_to_regex(std::string_view glob) {
  std::string out = "(?i)";
  bool any_tail = false;
  if (glob.size() >= 3 && glob.substr(glob.size() - 3) == "/**") {
    glob.remove_suffix(3);
    any_tail = true;
  }
  for (std::size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '*') {
      if (i + 1 < glob.size() && glob[i + 1] == '*') {
        out += ".*";
        ++i;
      } else {
        out += "[^/]*";
      }
      continue;
    }
    out += RE2::QuoteMeta(std::string_view(&glob[i], 1));
  }
  if (any_tail) {
    out += "(?:/.*)?";
  }
  return out;
}

RE2::Options path_options() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);  // paths are bytes
  options.set_log_errors(false);
  return options;
}

// A PATH as written: the error sentence, or nothing.
std::optional<std::string> path_pattern_problem(std::string_view pattern) {
  if (pattern.empty() || pattern.front() != '/') {
    return "a path pattern starts with '/' (got '" + std::string(pattern) + "')";
  }
  if (pattern.find("***") != std::string_view::npos) {
    return "'***' in a path pattern (use '*' within a segment, '**' across segments)";
  }
  for (unsigned char c : pattern) {
    if (c == '%') {
      return "'%' in a path pattern (write the character itself: paths are matched decoded)";
    }
    if (refused_in_path(c) || c >= 0x80) {
      return byte_name(c) + " in a path pattern";
    }
  }
  return std::nullopt;
}

// Methods are case-sensitive tokens (RFC 9110), but some origins upper-case what they get: a
// rule's method matches the request's in any case, so `delete` cannot pass a `deny DELETE`.
bool same_method(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return ascii_upper(x) == ascii_upper(y);
         });
}

// One line, compiled.
struct CompiledRule {
  RequestRule rule;
  std::unique_ptr<RE2> path;
  std::unique_ptr<RE2> repository;  // for git-fetch and git-push: the pattern without `.git`

  bool matches_method(std::string_view method) const {
    if (rule.methods.empty() && !rule.git_fetch && !rule.git_push) {
      return true;
    }
    return std::any_of(rule.methods.begin(), rule.methods.end(),
                       [method](const std::string& m) { return same_method(m, method); });
  }
  bool matches(const RequestFacts& request, const GitRequest& git) const {
    if (matches_method(request.method) && RE2::FullMatch(request.path, *path)) {
      return true;
    }
    const bool git_service = (rule.git_fetch && git.service == GitService::fetch) ||
                             (rule.git_push && git.service == GitService::push);
    return git_service && RE2::FullMatch(git.repository, *repository);
  }
};

struct Group {
  std::string host;  // the HOST entry as first written
  std::string source;
  std::uint32_t line = 0;          // its first line
  std::vector<std::size_t> rules;  // indexes into Impl::rules, in file order
};

// The key that makes two spellings of one HOST entry one group: its normal form and ports.
std::string group_key(const RuleEntry& entry) {
  std::string key;
  switch (entry.kind) {
    case EntryKind::name_and_subdomains:
      key = "n:" + entry.host.display();
      break;
    case EntryKind::subdomains_only:
      key = "s:" + entry.host.display();
      break;
    case EntryKind::address:
      key = "a:" + entry.host.display();
      break;
    case EntryKind::pattern:
      key = "r:" + std::string(entry.pattern);
      break;
  }
  for (std::uint16_t port : entry.ports) {
    key += ":" + std::to_string(port);
  }
  return key;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The media type of a Content-Type value, without its parameters or surrounding spaces.
std::string_view media_type(std::string_view content_type) {
  return trim_ows(content_type.substr(0, content_type.find(';')));
}

// The repository without its `.git` suffixes, in any case and however many (git hosts answer
// `/o/r.GIT` and `/o/r.git.git` as `/o/r`, so a deny line for `/o/r` must meet them).
std::string without_dot_git(std::string_view path) {
  const auto dot_git = [](std::string_view text) {
    if (text.size() <= 4) {
      return false;
    }
    const std::string_view tail = text.substr(text.size() - 4);
    return tail[0] == '.' && (tail[1] | 0x20) == 'g' && (tail[2] | 0x20) == 'i' &&
           (tail[3] | 0x20) == 't';
  };
  while (dot_git(path)) {
    path.remove_suffix(4);
  }
  return std::string(path);
}

}  // namespace

std::string_view to_string(GitService service) {
  switch (service) {
    case GitService::none:
      return "";
    case GitService::fetch:
      return "git-fetch";
    case GitService::push:
      return "git-push";
  }
  return "";
}

std::vector<std::string> query_method_overrides(std::string_view query) {
  std::vector<std::string> methods;
  while (!query.empty()) {
    // `;` separates parameters too for some servers (Rack 2, older Go and Python).
    const std::size_t end = query.find_first_of("&;");
    const std::string_view pair = query.substr(0, end);
    query = end == std::string_view::npos ? std::string_view{} : query.substr(end + 1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      continue;
    }
    // The name as frameworks may read it: PHP turns a leading ' ', '.' or '[' (and '+', a
    // space) into '_', and case is ignored here to be safe.
    std::string name = percent_decoded(pair.substr(0, eq));
    for (char& c : name) {
      c = c == ' ' || c == '.' || c == '[' || c == '+' ? '_' : ascii_lower(c);
    }
    if (name == "_method") {
      methods.push_back(percent_decoded(pair.substr(eq + 1)));
    }
  }
  return methods;
}

bool is_method_token(std::string_view text) {
  constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

GitRequest classify_git(const RequestFacts& request) {
  GitRequest git;
  const std::string_view path = request.path;
  constexpr std::string_view kRefs = "/info/refs";
  constexpr std::string_view kUpload = "/git-upload-pack";
  constexpr std::string_view kReceive = "/git-receive-pack";
  std::string_view repository;
  if (same_method(request.method, "GET") && ends_with(path, kRefs)) {
    repository = path.substr(0, path.size() - kRefs.size());
    // The service asked for: several `service` parameters (which an origin might read either
    // way) count as a push, the stricter of the two.
    git.service = GitService::fetch;
    bool receive = false;
    std::string_view query = request.query;
    while (!query.empty()) {
      const std::size_t amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
      const std::size_t eq = pair.find('=');
      if (percent_decoded(pair.substr(0, eq)) != "service") {
        continue;
      }
      const std::string value =
          eq == std::string_view::npos ? std::string() : percent_decoded(pair.substr(eq + 1));
      if (value != "git-upload-pack") {
        receive = true;  // git-receive-pack, or a service nobody can tell
      }
    }
    if (receive) {
      git.service = GitService::push;
    }
  } else if (same_method(request.method, "POST") && ends_with(path, kUpload) &&
             same_method(media_type(request.content_type),
                         "application/x-git-upload-pack-request")) {
    // Only what git sends is a fetch: another POST to such a path may be read by the origin as
    // something else, and is judged as the POST it is. (A push is a push whatever its type:
    // the stricter reading.)
    repository = path.substr(0, path.size() - kUpload.size());
    git.service = GitService::fetch;
  } else if (same_method(request.method, "POST") && ends_with(path, kReceive)) {
    repository = path.substr(0, path.size() - kReceive.size());
    git.service = GitService::push;
  } else {
    return git;
  }
  if (repository.empty()) {
    return GitRequest{};
  }
  git.repository = without_dot_git(repository);
  return git;
}

Expected<NormalPath, std::string> normalise_path(std::string_view origin_form) {
  NormalPath normal;
  const std::size_t question = origin_form.find('?');
  std::string_view raw = origin_form.substr(0, question);
  if (question != std::string_view::npos) {
    normal.query = std::string(origin_form.substr(question + 1));
  }
  if (raw == "*") {  // OPTIONS *
    normal.path = "*";
    return normal;
  }
  if (raw.empty() || raw.front() != '/') {
    return Unexpected{std::string("the request's path does not start with '/'")};
  }
  std::string& path = normal.path;
  path.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto byte = static_cast<unsigned char>(raw[i]);
    if (byte != '%') {
      if (refused_in_path(byte)) {
        return Unexpected{"the request's path holds " + byte_name(byte) +
                          ", which origins read in different ways"};
      }
      path += static_cast<char>(byte);
      continue;
    }
    const int high = i + 1 < raw.size() ? hex_value(raw[i + 1]) : -1;
    const int low = i + 2 < raw.size() ? hex_value(raw[i + 2]) : -1;
    if (high < 0 || low < 0) {
      return Unexpected{std::string("the request's path has a '%' that starts no escape")};
    }
    const auto decoded = static_cast<unsigned char>(high * 16 + low);
    if (decoded == '/' || decoded == '%' || refused_in_path(decoded)) {
      return Unexpected{"the request's path has an escaped " + byte_name(decoded) +
                        ", which origins read in different ways"};
    }
    path += static_cast<char>(decoded);
    i += 2;
  }
  // Segments: none empty (but a trailing slash), none `.` or `..`.
  std::size_t at = 1;
  while (at <= path.size()) {
    std::size_t end = path.find('/', at);
    if (end == std::string::npos) {
      end = path.size();
    }
    const std::string_view segment = std::string_view(path).substr(at, end - at);
    if (segment.empty() && end != path.size()) {
      return Unexpected{std::string("the request's path has an empty segment ('//')")};
    }
    if (segment == "." || segment == "..") {
      return Unexpected{"the request's path has a '" + std::string(segment) + "' segment"};
    }
    at = end + 1;
  }
  return normal;
}

struct RequestRules::Impl {
  std::vector<CompiledRule> rules;
  std::vector<Group> groups;
  DomainSet hosts;    // one entry per group; its match's line is the group's index + 1
  DomainSet inspect;  // SANDGATE_INSPECT
  McpRules mcp;       // the MCP lines (mcp-tool, mcp-prompt, mcp-resource)
  std::size_t inspect_patterns = 0;

  const Group* group_for(const Host& host, std::uint16_t port) const {
    const auto match = hosts.match(host, port);
    if (!match || match->line == 0 || match->line > groups.size()) {
      return nullptr;
    }
    return &groups[match->line - 1];
  }
};

RequestRules::RequestRules() : impl_(std::make_unique<Impl>()) {}
RequestRules::~RequestRules() = default;
RequestRules::RequestRules(RequestRules&&) noexcept = default;
RequestRules& RequestRules::operator=(RequestRules&&) noexcept = default;

namespace {

// The MCP word of an entry's METHODS field (`allow HOST mcp-tool NAME`), if it has one.
std::optional<McpKind> mcp_word_of(std::string_view text) {
  const std::vector<std::string_view> fields = split_fields(text);
  return fields.size() >= 3 ? parse_mcp_word(fields[2]) : std::nullopt;
}

// Parses one non-empty MCP entry (`VERB HOST WORD PATTERN`) into `rule`; the error sentence, or
// nothing.
std::optional<std::string> parse_mcp_rule(std::string_view text, McpRule& rule, RuleEntry& entry,
                                          std::vector<std::uint16_t>& ports) {
  const std::vector<std::string_view> fields = split_fields(text);
  const McpKind kind = *parse_mcp_word(fields[2]);
  const std::string grammar = "an MCP rule is: allow|deny HOST " + std::string(mcp_word(kind)) +
                              (kind == McpKind::resource ? " URI-PATTERN" : " NAME-PATTERN");
  if (fields.size() != 4) {
    return fields.size() < 4 ? grammar
                             : "too many fields ('" + std::string(fields[4]) + "'): " + grammar;
  }
  if (fields[0] != "allow" && fields[0] != "deny") {
    return "a request rule starts with allow or deny (got '" + std::string(fields[0]) + "')";
  }
  rule.allow = fields[0] == "allow";
  rule.kind = kind;
  auto parsed = parse_entry(fields[1], ports);
  if (!parsed) {
    return parsed.error();
  }
  entry = parsed.value();
  rule.host = std::string(fields[1]);
  rule.pattern = std::string(fields[3]);
  return mcp_pattern_problem(kind, rule.pattern);
}

// Parses one non-empty entry into `rule`; the error sentence, or nothing.
std::optional<std::string> parse_rule(std::string_view text, RequestRule& rule, RuleEntry& entry,
                                      std::vector<std::uint16_t>& ports) {
  const std::vector<std::string_view> fields = split_fields(text);
  if (fields.size() < 2) {
    return std::string("a request rule is: allow|deny HOST [METHODS [PATH]]");
  }
  if (fields.size() > 4) {
    return "too many fields ('" + std::string(fields[4]) +
           "'): a request rule is allow|deny HOST [METHODS [PATH]]";
  }
  if (fields[0] == "allow") {
    rule.allow = true;
  } else if (fields[0] == "deny") {
    rule.allow = false;
  } else {
    return "a request rule starts with allow or deny (got '" + std::string(fields[0]) + "')";
  }
  auto parsed = parse_entry(fields[1], ports);
  if (!parsed) {
    return parsed.error();
  }
  entry = parsed.value();
  rule.host = std::string(fields[1]);
  if (fields.size() >= 3 && fields[2] != "*") {
    std::string_view methods = fields[2];
    while (!methods.empty()) {
      const std::size_t comma = methods.find(',');
      const std::string_view method = methods.substr(0, comma);
      methods = comma == std::string_view::npos ? std::string_view{} : methods.substr(comma + 1);
      if (method == "git-fetch") {
        rule.git_fetch = true;
      } else if (method == "git-push") {
        rule.git_push = true;
      } else if (is_upper_method(method)) {
        rule.methods.emplace_back(method);
      } else {
        return "bad method '" + std::string(method) +
               "' (an HTTP method in upper case, git-fetch, git-push, or * for any)";
      }
    }
  }
  if (fields.size() == 4) {
    if (auto problem = path_pattern_problem(fields[3])) {
      return problem;
    }
    rule.path_pattern = std::string(fields[3]);
  }
  return std::nullopt;
}

}  // namespace

RequestRules RequestRules::parse(std::string_view text, std::string_view source,
                                 const std::vector<std::string>& inspect,
                                 std::string_view inspect_source, std::vector<LoadIssue>& issues) {
  RequestRules result;
  Impl& impl = *result.impl_;
  std::unordered_map<std::string, std::size_t> group_of;
  McpRules::Builder mcp;
  std::vector<std::uint16_t> ports;
  std::uint32_t line_number = 0;
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    text.remove_prefix(3);
  }
  std::size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view line = text.substr(at, end - at);
    ++line_number;
    at = end + 1;
    const std::string_view entry_part = entry_text(line);
    if (!entry_part.empty() && mcp_word_of(entry_part)) {
      McpRule rule;
      RuleEntry entry;
      auto problem = parse_mcp_rule(entry_part, rule, entry, ports);
      if (!problem) {
        rule.source = std::string(source);
        rule.line = line_number;
        rule.text = std::string(entry_part);
        rule.message = agent_message(line);
        problem = mcp.add(group_key(entry), std::move(rule));
      }
      if (problem) {
        issues.push_back(LoadIssue{std::string(source), line_number,
                                   std::string(trim_ascii_space(line)), std::move(*problem)});
      }
    } else if (!entry_part.empty()) {
      CompiledRule compiled;
      RuleEntry entry;
      auto problem = parse_rule(entry_part, compiled.rule, entry, ports);
      if (!problem) {
        compiled.path =
            std::make_unique<RE2>(glob_to_regex(compiled.rule.path_pattern), path_options());
        compiled.repository = std::make_unique<RE2>(
            glob_to_regex(without_dot_git(compiled.rule.path_pattern)), path_options());
        if (!compiled.path->ok() || !compiled.repository->ok()) {
          problem = "the path pattern '" + compiled.rule.path_pattern + "' cannot be compiled";
        }
      }
      if (problem) {
        issues.push_back(LoadIssue{std::string(source), line_number,
                                   std::string(trim_ascii_space(line)), std::move(*problem)});
      } else {
        compiled.rule.source = std::string(source);
        compiled.rule.line = line_number;
        compiled.rule.text = std::string(entry_part);
        compiled.rule.message = agent_message(line);
        const std::string key = group_key(entry);
        auto [it, fresh] = group_of.emplace(key, impl.groups.size());
        if (fresh) {
          impl.groups.push_back(Group{compiled.rule.host, std::string(source), line_number, {}});
        }
        impl.groups[it->second].rules.push_back(impl.rules.size());
        impl.rules.push_back(std::move(compiled));
      }
    }
    if (end == text.size()) {
      break;
    }
  }
  DomainSet::Builder hosts;
  for (std::size_t i = 0; i < impl.groups.size(); ++i) {
    // Parsed once already: cannot fail here.
    (void)hosts.add_line(impl.groups[i].host, source, static_cast<std::uint32_t>(i + 1));
  }
  impl.hosts = std::move(hosts).build();
  impl.mcp = std::move(mcp).build();

  DomainSet::Builder inspected;
  for (const std::string& pattern : inspect) {
    const std::string_view entry = trim_ascii_space(pattern);
    if (entry.empty()) {
      continue;
    }
    if (auto error = inspected.add_line(entry, inspect_source, 0)) {
      issues.push_back(LoadIssue{std::string(inspect_source), 0, std::string(entry), *error});
    } else {
      ++impl.inspect_patterns;
    }
  }
  impl.inspect = std::move(inspected).build();
  return result;
}

bool RequestRules::judges(const Host& host, std::uint16_t port) const {
  return impl_->group_for(host, port) != nullptr;
}

bool RequestRules::inspects(const Host& host, std::uint16_t port) const {
  return judges(host, port) || impl_->mcp.judges(host, port) ||
         impl_->inspect.match(host, port).has_value();
}

bool RequestRules::guards(const Host& host, std::uint16_t port) const {
  return judges(host, port) || impl_->mcp.judges(host, port);
}

const McpRules& RequestRules::mcp() const { return impl_->mcp; }

RequestVerdict RequestRules::decide(const Host& host, std::uint16_t port,
                                    const RequestFacts& request) const {
  RequestVerdict verdict;
  const Group* group = impl_->group_for(host, port);
  if (group == nullptr) {
    return verdict;
  }
  verdict.group = group->host;
  verdict.group_source = group->source;
  verdict.group_line = group->line;
  const GitRequest git = classify_git(request);
  for (std::size_t index : group->rules) {
    const CompiledRule& compiled = impl_->rules[index];
    if (compiled.matches(request, git)) {
      verdict.kind =
          compiled.rule.allow ? RequestVerdict::Kind::allowed : RequestVerdict::Kind::denied;
      verdict.rule = &compiled.rule;
      return verdict;
    }
  }
  verdict.kind = RequestVerdict::Kind::not_allowed;
  return verdict;
}

std::string describe_request(std::string_view host, const RequestFacts& request) {
  const GitRequest git = classify_git(request);
  if (git.service == GitService::push) {
    return "git push to " + std::string(host) + git.repository;
  }
  if (git.service == GitService::fetch) {
    return "git fetch from " + std::string(host) + git.repository;
  }
  return std::string(request.method) + " " + std::string(host) + std::string(request.path);
}

std::string RequestRules::explain(const RequestVerdict& verdict, std::string_view host,
                                  const RequestFacts& request) const {
  const std::string what = describe_request(host, request);
  switch (verdict.kind) {
    case RequestVerdict::Kind::unruled:
    case RequestVerdict::Kind::allowed:
      return what + " is allowed.";
    case RequestVerdict::Kind::denied: {
      std::string sentence = what + " is denied by the request rule '" + verdict.rule->text +
                             "' (" + verdict.rule->source + " line " +
                             std::to_string(verdict.rule->line) + ").";
      if (!verdict.rule->message.empty()) {
        sentence += " " + verdict.rule->message;
      }
      return sentence;
    }
    case RequestVerdict::Kind::not_allowed:
      return what + " is not allowed: no request rule for '" + std::string(verdict.group) + "' (" +
             std::string(verdict.group_source) + " line " + std::to_string(verdict.group_line) +
             ") allows it.";
  }
  return what;
}

std::size_t RequestRules::size() const { return impl_->rules.size() + impl_->mcp.size(); }
bool RequestRules::has_inspect_patterns() const { return impl_->inspect_patterns > 0; }

std::string request_rule_text(const RequestVerdict& verdict) {
  if (verdict.rule != nullptr) {
    return verdict.rule->source + ":" + std::to_string(verdict.rule->line) + " " +
           verdict.rule->text;
  }
  if (verdict.kind == RequestVerdict::Kind::not_allowed) {
    return std::string(verdict.group_source) + ":" + std::to_string(verdict.group_line) + " " +
           std::string(verdict.group) + " (no line allows it)";
  }
  return {};
}

}  // namespace sandgate::rules
