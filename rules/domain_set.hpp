// A set of domain rules, used for the blocklist and the allowlist alike.
//
// Syntax of a rules file (a superset of goose's blocked.txt; parsed by rules/rule_line.hpp), one
// entry a line:
//   example.com          example.com and every subdomain of it
//   *.example.com        only subdomains of example.com
//   re:PATTERN           an RE2 pattern that must match the whole normalised host
//   203.0.113.7          an IP literal (any spelling; matches that address only)
//   ENTRY:443            any of the above, only for port 443 (`:22,2222` for several ports)
//   # comment            '#' starts a comment anywhere on a line; blank lines are ignored
// Names are normalised like hosts (case, one trailing dot, IDN to punycode), so `ÉVIL.com.`
// and `xn--vil-9la.com` are one entry.
//
// Lookups cost O(labels of the host), independent of the number of entries: names live in one
// open-addressing hash table keyed on each suffix at a label boundary, and all `re:` patterns
// are compiled into one RE2::Set. A built set is immutable and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/host.hpp"
#include "rules/rule_line.hpp"  // LoadIssue

namespace sandgate::rules {

// The rule that matched: where it was written, and its text as written (comment stripped).
struct RuleMatch {
  std::string_view source;  // the file's path (or another label given to the builder)
  std::uint32_t line = 0;   // 1-based
  std::string_view entry;   // e.g. "*.evil.com:443"
  // The entry's message for whoever it denies (its `#!` comment), or empty.
  std::string_view message;
};

class DomainSet {
 public:
  class Builder;

  DomainSet();  // empty: matches nothing
  DomainSet(DomainSet&&) noexcept;
  DomainSet& operator=(DomainSet&&) noexcept;
  ~DomainSet();

  // Parses a whole rules file. Bad lines are appended to `issues` and skipped.
  static DomainSet parse(std::string_view text, std::string_view source,
                         std::vector<LoadIssue>& issues);

  // The most specific rule matching `host` on `port`, if any. For a DNS name, a plain entry
  // matches the name and its subdomains, a `*.` entry only subdomains; an IP entry matches only
  // that address; `re:` entries are tried after names, on the normalised text.
  std::optional<RuleMatch> match(const Host& host, std::uint16_t port) const;

  std::size_t size() const;          // entries loaded
  std::size_t memory_bytes() const;  // approximate heap held, for benchmarks and metrics

 private:
  struct Impl;
  explicit DomainSet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Builds a set line by line, or from several sources into one set.
class DomainSet::Builder {
 public:
  Builder();
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // Adds every line of `text`; returns the number of entries added. Bad lines go to `issues`.
  std::size_t add_text(std::string_view text, std::string_view source,
                       std::vector<LoadIssue>& issues);
  // Adds one line (`line_number` is reported back in matches). Returns the error message, if the
  // line is bad, or nothing (also for blank and comment lines).
  std::optional<std::string> add_line(std::string_view line, std::string_view source,
                                      std::uint32_t line_number);

  DomainSet build() &&;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sandgate::rules
