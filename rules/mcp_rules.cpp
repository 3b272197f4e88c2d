// MCP rules: the patterns, the groups and the decision (see mcp_rules.hpp).
//
// Patterns are compiled to RE2 (linear time whatever the name), as path patterns are: an allow
// line's pattern matches with its case, a deny line's in any ASCII case. Groups are picked by
// one DomainSet holding each group's HOST entry once, as for the HTTP lines.
#include "rules/mcp_rules.hpp"

#include <re2/re2.h>

#include <array>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sandgate::rules {
namespace {

constexpr std::array<std::string_view, kMcpKindCount> kWords = {"mcp-tool", "mcp-prompt",
                                                                "mcp-resource"};
constexpr std::array<std::string_view, kMcpKindCount> kNouns = {"tool", "prompt", "resource"};

std::size_t index_of(McpKind kind) { return static_cast<std::size_t>(kind); }

bool printable_ascii(unsigned char byte) { return byte > 0x20 && byte < 0x7f; }

// A dot segment anywhere in a URI's path part: `/./`, `/../`, or one at the end.
bool has_dot_segment(std::string_view uri) {
  for (std::string_view dots : {"/./", "/../"}) {
    if (uri.find(dots) != std::string_view::npos) {
      return true;
    }
  }
  return uri.ends_with("/.") || uri.ends_with("/..");
}

// Valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    }
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
      code = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      code = lead & 0x0F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      code = lead & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) {
      return false;
    }
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) {
        return false;
      }
      code = (code << 6) | (next & 0x3F);
    }
    const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
    if (overlong || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

// A pattern as an RE2 pattern matching the whole name: for names `*` is any run; for URIs `*`
// stays within a segment and `**` crosses them. `any_case`: deny lines.
std::string pattern_to_regex(McpKind kind, std::string_view pattern, bool any_case) {
  std::string out = any_case ? "(?i)" : "";
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '*') {
      out += RE2::QuoteMeta(std::string_view(&pattern[i], 1));
      continue;
    }
    if (kind != McpKind::resource) {
      out += ".*";
    } else if (i + 1 < pattern.size() && pattern[i + 1] == '*') {
      out += ".*";
      ++i;
    } else {
      out += "[^/]*";
    }
  }
  return out;
}

RE2::Options pattern_options() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);  // names are matched as bytes
  options.set_log_errors(false);
  options.set_dot_nl(true);  // `*` matches every byte, a newline too (deny lines see odd names)
  return options;
}

struct CompiledRule {
  McpRule rule;
  std::unique_ptr<RE2> pattern;

  bool matches(std::string_view name, bool plain) const {
    if (rule.literal && rule.pattern == name) {
      return true;
    }
    // Patterns allow only plain names; deny patterns stop any.
    if (rule.allow && !plain) {
      return false;
    }
    return RE2::FullMatch(name, *pattern);
  }
};

struct Group {
  std::string host;  // the HOST entry as first written
  std::string source;
  std::array<std::uint32_t, kMcpKindCount> first_line{};  // 0: no line of that word
  std::array<std::vector<std::size_t>, kMcpKindCount> rules;
};

// "\"d\\xD0\\xB5lete\"": bytes outside printable ASCII escaped, so a log line or a sentence
// shows what the name holds.
std::string escaped(std::string_view name) {
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7f && byte != '"' && byte != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out + "\"";
}

}  // namespace

std::string_view mcp_word(McpKind kind) { return kWords[index_of(kind)]; }
std::string_view mcp_noun(McpKind kind) { return kNouns[index_of(kind)]; }

std::optional<McpKind> parse_mcp_word(std::string_view word) {
  for (std::size_t i = 0; i < kMcpKindCount; ++i) {
    if (word == kWords[i]) {
      return static_cast<McpKind>(i);
    }
  }
  return std::nullopt;
}

bool plain_name(McpKind kind, std::string_view name) {
  if (name.empty() || name.size() > kMaxMcpName) {
    return false;
  }
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (!printable_ascii(byte) || byte == '#' || byte == '*') {
      return false;
    }
    if (kind == McpKind::resource && (byte == '%' || byte == '\\')) {
      return false;
    }
  }
  return kind != McpKind::resource || !has_dot_segment(name);
}

std::optional<std::string> mcp_pattern_problem(McpKind kind, std::string_view pattern) {
  if (pattern.empty()) {
    return "an " + std::string(mcp_word(kind)) + " line needs a pattern";
  }
  if (pattern.size() > kMaxMcpName) {
    return "the pattern is longer than " + std::to_string(kMaxMcpName) + " bytes";
  }
  if (kind == McpKind::resource && pattern.find("***") != std::string_view::npos) {
    return "'***' in a resource pattern (use '*' within a segment, '**' across segments)";
  }
  bool ascii = true;
  for (const char c : pattern) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return "a control byte in the pattern";
    }
    ascii = ascii && byte < 0x80;
  }
  if (!ascii) {
    if (!valid_utf8(pattern)) {
      return "the pattern is not valid UTF-8";
    }
    if (pattern.find('*') != std::string_view::npos) {
      return "a pattern with characters outside ASCII must name one name exactly (no '*'): "
             "lookalikes are allowed only by their own line";
    }
  }
  return std::nullopt;
}

std::string shown_name(McpKind kind, std::string_view name) {
  return plain_name(kind, name) ? std::string(name) : escaped(name);
}

struct McpRules::Impl {
  std::vector<CompiledRule> rules;
  std::vector<Group> groups;
  std::unordered_map<std::string, std::size_t> group_of;  // while building
  std::string source;                                     // while building
  DomainSet hosts;  // one entry per group; its match's line is the group's index + 1

  const Group* group_for(const Host& host, std::uint16_t port) const {
    const auto match = hosts.match(host, port);
    if (!match || match->line == 0 || match->line > groups.size()) {
      return nullptr;
    }
    return &groups[match->line - 1];
  }
};

McpRules::McpRules() : impl_(std::make_unique<Impl>()) {}
McpRules::~McpRules() = default;
McpRules::McpRules(McpRules&&) noexcept = default;
McpRules& McpRules::operator=(McpRules&&) noexcept = default;

McpRules::Builder::Builder() : rules_(std::make_unique<McpRules>()) {}
McpRules::Builder::~Builder() = default;

std::optional<std::string> McpRules::Builder::add(std::string_view group_key, McpRule rule) {
  if (auto problem = mcp_pattern_problem(rule.kind, rule.pattern)) {
    return problem;
  }
  Impl& impl = *rules_->impl_;
  CompiledRule compiled;
  compiled.pattern = std::make_unique<RE2>(pattern_to_regex(rule.kind, rule.pattern, !rule.allow),
                                           pattern_options());
  if (!compiled.pattern->ok()) {
    return "the pattern '" + rule.pattern + "' cannot be compiled";
  }
  rule.literal = rule.pattern.find('*') == std::string::npos;
  auto [it, fresh] = impl.group_of.emplace(std::string(group_key), impl.groups.size());
  if (fresh) {
    impl.groups.push_back(Group{rule.host, rule.source, {}, {}});
  }
  Group& group = impl.groups[it->second];
  const std::size_t word = index_of(rule.kind);
  if (group.first_line[word] == 0) {
    group.first_line[word] = rule.line;
  }
  group.rules[word].push_back(impl.rules.size());
  compiled.rule = std::move(rule);
  impl.rules.push_back(std::move(compiled));
  return std::nullopt;
}

McpRules McpRules::Builder::build() && {
  Impl& impl = *rules_->impl_;
  DomainSet::Builder hosts;
  for (std::size_t i = 0; i < impl.groups.size(); ++i) {
    // Parsed once already by the request-rules file's reader: cannot fail here.
    (void)hosts.add_line(impl.groups[i].host, impl.groups[i].source,
                         static_cast<std::uint32_t>(i + 1));
  }
  impl.hosts = std::move(hosts).build();
  impl.group_of.clear();
  return std::move(*rules_);
}

bool McpRules::judges(const Host& host, std::uint16_t port) const {
  return impl_->group_for(host, port) != nullptr;
}

bool McpRules::judges(const Host& host, std::uint16_t port, McpKind kind) const {
  const Group* group = impl_->group_for(host, port);
  return group != nullptr && !group->rules[index_of(kind)].empty();
}

McpVerdict McpRules::decide(const Host& host, std::uint16_t port, McpKind kind,
                            std::string_view name) const {
  McpVerdict verdict;
  verdict.about = kind;
  const Group* group = impl_->group_for(host, port);
  if (group == nullptr || group->rules[index_of(kind)].empty()) {
    return verdict;
  }
  verdict.group = group->host;
  verdict.group_source = group->source;
  verdict.group_line = group->first_line[index_of(kind)];
  const bool plain = plain_name(kind, name);
  for (const std::size_t index : group->rules[index_of(kind)]) {
    const CompiledRule& compiled = impl_->rules[index];
    if (compiled.matches(name, plain)) {
      verdict.kind = compiled.rule.allow ? McpVerdict::Kind::allowed : McpVerdict::Kind::denied;
      verdict.rule = &compiled.rule;
      return verdict;
    }
  }
  verdict.kind = McpVerdict::Kind::not_allowed;
  return verdict;
}

std::string McpRules::explain(const McpVerdict& verdict, std::string_view host,
                              std::string_view name) const {
  const std::string what = std::string(mcp_noun(verdict.about)) + " " +
                           shown_name(verdict.about, name) + " on " + std::string(host);
  switch (verdict.kind) {
    case McpVerdict::Kind::unruled:
      return what + " is allowed: no " + std::string(mcp_word(verdict.about)) +
             " rules for the host.";
    case McpVerdict::Kind::allowed:
      return what + " is allowed by the request rule '" + verdict.rule->text + "' (" +
             verdict.rule->source + " line " + std::to_string(verdict.rule->line) + ").";
    case McpVerdict::Kind::denied: {
      std::string sentence = what + " is denied by the request rule '" + verdict.rule->text +
                             "' (" + verdict.rule->source + " line " +
                             std::to_string(verdict.rule->line) + ").";
      if (!verdict.rule->message.empty()) {
        sentence += " " + verdict.rule->message;
      }
      return sentence;
    }
    case McpVerdict::Kind::not_allowed: {
      std::string sentence = what + " is not allowed: no " + std::string(mcp_word(verdict.about)) +
                             " rule for '" + std::string(verdict.group) + "' (" +
                             std::string(verdict.group_source) + " line " +
                             std::to_string(verdict.group_line) + ") allows it.";
      if (!plain_name(verdict.about, name)) {
        sentence += " The name is not plain ASCII (or holds a space, '#', '*'";
        sentence += verdict.about == McpKind::resource ? ", '%', '\\' or a dot segment)" : ")";
        sentence += ": only a line naming it exactly can allow it.";
      }
      return sentence;
    }
  }
  return what;
}

std::size_t McpRules::size() const { return impl_->rules.size(); }

std::string mcp_rule_text(const McpVerdict& verdict) {
  if (verdict.rule != nullptr) {
    return verdict.rule->source + ":" + std::to_string(verdict.rule->line) + " " +
           verdict.rule->text;
  }
  if (verdict.kind == McpVerdict::Kind::not_allowed) {
    return std::string(verdict.group_source) + ":" + std::to_string(verdict.group_line) + " " +
           std::string(verdict.group) + " " + std::string(mcp_word(verdict.about)) +
           " (no line allows it)";
  }
  return {};
}

}  // namespace sandgate::rules
