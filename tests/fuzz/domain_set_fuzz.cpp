// Fuzz target: the blocklist/allowlist file parser and matcher (rules/domain_set.hpp), on
// arbitrary text of up to 64 KiB (a policy file is edited by people and may hold anything).
//
// Invariants, beyond "no crash, no out-of-bounds access, no undefined behaviour":
//   - every issue names a line that exists (1-based, increasing, one issue a line at most), with
//     the line's entry text (comment stripped, trimmed) and a message;
//   - every line with an entry is either loaded or reported: size() == entries - issues;
//   - a loaded name or address entry matches what it names: `example.com:22` matches
//     example.com on port 22, `*.example.com` matches a.example.com, `10.0.0.1` matches 10.0.0.1;
//   - every match (also for hosts merely derived from the input's lines) points at a loaded
//     line and reports that line's entry text and the set's source label.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/domain_set.hpp"
#include "rules/host.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/host_invariants.hpp"

namespace {

using sandgate::fuzz::escaped;
namespace rules = sandgate::rules;

constexpr std::size_t kMaxInput = 64 * 1024;
constexpr std::size_t kMaxLinesProbed = 256;  // bounds the matching work per input
constexpr std::string_view kSource = "fuzz.txt";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

// The file as the documented syntax reads it: lines split at '\n', a leading UTF-8 byte order
// mark ignored, '#' starting a comment.
std::vector<std::string_view> entries_of(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) {
    text.remove_prefix(3);
  }
  std::vector<std::string_view> entries;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    entries.push_back(trim(line.substr(0, line.find('#'))));
  }
  return entries;
}

// What a loaded entry names, written as a host and port it must match.
struct Probe {
  std::optional<rules::Host> host;
  std::uint16_t port = 443;
};

template <typename Where>
Probe probe_for(std::string_view entry, const Where& where) {
  Probe probe;
  std::string_view rest = entry;
  const bool wildcard = rest.starts_with("*.");
  if (wildcard) {
    rest.remove_prefix(2);
  }
  std::string_view host_text = rest;
  std::optional<std::string_view> ports;
  if (rest.starts_with('[')) {
    const std::size_t close = rest.find(']');
    if (close != std::string_view::npos && close + 1 < rest.size() && rest[close + 1] == ':') {
      host_text = rest.substr(0, close + 1);
      ports = rest.substr(close + 2);
    }
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    host_text = rest.substr(0, rest.find(':'));
    ports = rest.substr(rest.find(':') + 1);
  }
  if (ports) {
    // The first port of the list (the entry loaded, so the list is valid).
    std::uint32_t port = 0;
    for (const char c : ports->substr(0, ports->find(','))) {
      port = port * 10 + static_cast<std::uint32_t>(c - '0');
    }
    FUZZ_CHECK(port >= 1 && port <= 65535, "loaded with a bad port: " + where());
    probe.port = static_cast<std::uint16_t>(port);
  }
  auto host = rules::parse_host(host_text);
  FUZZ_CHECK(host.has_value(), "loaded although its host does not parse: " + where());
  sandgate::fuzz::check_host_normal_form(*host, host_text);
  if (!wildcard) {
    probe.host = std::move(*host);
    return probe;
  }
  FUZZ_CHECK(!host->is_ip(), "wildcard on an IP address loaded: " + where());
  if (auto sub = rules::parse_host("a." + host->name)) {  // may be too long: then no probe
    probe.host = std::move(*sub);
  }
  return probe;
}

// `what` describes the lookup for a failure message: a callable returning std::string.
template <typename What>
void check_match(const std::optional<rules::RuleMatch>& match,
                 const std::vector<std::string_view>& entries, const std::vector<bool>& bad,
                 const What& what) {
  if (!match) {
    return;
  }
  FUZZ_CHECK(match->source == kSource, "wrong source for " + what());
  FUZZ_CHECK(match->line >= 1 && match->line <= entries.size(),
             "match on line " + std::to_string(match->line) + " of " +
                 std::to_string(entries.size()) + " for " + what());
  FUZZ_CHECK(!bad[match->line - 1], "match on a refused line for " + what());
  FUZZ_CHECK(match->entry == entries[match->line - 1],
             "match reports '" + escaped(match->entry) + "' for line " +
                 std::to_string(match->line) + " '" + escaped(entries[match->line - 1]) + "' for " +
                 what());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > kMaxInput) {
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<rules::LoadIssue> issues;
  const rules::DomainSet set = rules::DomainSet::parse(text, kSource, issues);
  const std::vector<std::string_view> entries = entries_of(text);

  std::vector<bool> bad(entries.size(), false);
  std::uint32_t previous = 0;
  for (const rules::LoadIssue& issue : issues) {
    const auto where = [&] {
      return "issue on line " + std::to_string(issue.line) + " of " +
             std::to_string(entries.size()) + " ('" + escaped(issue.text) + "')";
    };
    FUZZ_CHECK(issue.line > previous && issue.line <= entries.size(), where());
    previous = issue.line;
    bad[issue.line - 1] = true;
    FUZZ_CHECK(issue.source == kSource, where());
    FUZZ_CHECK(issue.text == entries[issue.line - 1],
               where() + " but the line's entry is '" + escaped(entries[issue.line - 1]) + "'");
    FUZZ_CHECK(!issue.text.empty() && !issue.message.empty(), where());
  }
  const auto with_entry = static_cast<std::size_t>(
      std::count_if(entries.begin(), entries.end(), [](std::string_view e) { return !e.empty(); }));
  FUZZ_CHECK(set.size() == with_entry - issues.size(),
             "size " + std::to_string(set.size()) + " but " + std::to_string(with_entry) +
                 " entries and " + std::to_string(issues.size()) + " issues");

  std::size_t probed = 0;
  for (std::size_t i = 0; i < entries.size() && probed < kMaxLinesProbed; ++i) {
    const std::string_view entry = entries[i];
    if (entry.empty()) {
      continue;
    }
    ++probed;
    const auto where = [&] {
      return "line " + std::to_string(i + 1) + " '" + escaped(entry) + "'";
    };
    if (!bad[i] && !entry.starts_with("re:")) {
      const Probe probe = probe_for(entry, where);
      if (probe.host) {
        const auto match = set.match(*probe.host, probe.port);
        FUZZ_CHECK(match.has_value(), "loaded " + where() + " does not match " +
                                          sandgate::fuzz::describe(*probe.host) + " port " +
                                          std::to_string(probe.port));
        check_match(match, entries, bad, where);
      }
    }
    // Hosts merely derived from the line, loaded or not: the entry (or its part before a ':'),
    // without a leading `*.` or `re:`, and a subdomain of it.
    std::string_view stem = entry;
    if (stem.starts_with("*.")) {
      stem.remove_prefix(2);
    } else if (stem.starts_with("re:")) {
      stem.remove_prefix(3);
    }
    for (const std::string& candidate :
         {std::string(stem), std::string(stem.substr(0, stem.find(':'))),
          "www." + std::string(stem.substr(0, stem.find(':')))}) {
      if (const auto host = rules::parse_host(candidate)) {
        for (const std::uint16_t port : {std::uint16_t{443}, std::uint16_t{22}}) {
          check_match(set.match(*host, port), entries, bad,
                      [&] { return "host '" + escaped(candidate) + "' derived from " + where(); });
        }
      }
    }
  }
  (void)set.memory_bytes();
  return 0;
}
