// The grammar of a rules file (blocklist and allowlist alike), apart from the matcher that
// stores what it yields (rules/domain_set.cpp). One entry a line:
//   example.com          example.com and every subdomain of it
//   *.example.com        only subdomains of example.com
//   re:PATTERN           an RE2 pattern that must match the whole normalised host
//   203.0.113.7          an IP literal (any spelling; matches that address only)
//   ENTRY:443            any of the above, only for port 443 (`:22,2222` for several ports)
//   # comment            '#' starts a comment anywhere on a line; blank lines are ignored
//   ENTRY  #! MESSAGE    a comment that starts with "#!" is a message for whoever is denied by
//                        the entry (an agent reading the error learns what to do instead)
// A UTF-8 byte order mark before the first line is skipped. Names are normalised like hosts
// (parse_host: case, one trailing dot, IDN to punycode); an IPv4-mapped IPv6 literal is stored
// as the IPv4 address it is. A bad line yields a message; the caller reports it as a LoadIssue
// with the file and line, and the rest of the file still loads.
//
// What is not checked here: whether a `re:` pattern compiles (that is RE2's grammar, checked by
// the builder that compiles it) and the set's own capacity limits.
//
// Pure functions on values; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"
#include "rules/host.hpp"

namespace sandgate::rules {

// A line that could not be used; the rest of the file still loads.
struct LoadIssue {
  std::string source;
  std::uint32_t line = 0;
  std::string text;     // the offending line (trimmed)
  std::string message;  // why, e.g. "user information ('@') in host"
};

enum class EntryKind : std::uint8_t {
  name_and_subdomains,  // `example.com`
  subdomains_only,      // `*.example.com`
  address,              // an IP literal: that address only
  pattern,              // `re:PATTERN`
};

// The longest normal form an entry may have. A DNS name is at most 253 octets; an IPv6 literal
// with a zone (`fe80::1%...`) may be longer, and the matcher stores the length in one byte.
constexpr std::size_t kMaxEntryName = 255;

// One parsed entry. The views point into the text given to parse_entry() and into its `ports`
// scratch vector, so they are valid until either changes.
struct RuleEntry {
  EntryKind kind = EntryKind::name_and_subdomains;
  std::string_view text;                 // the entry as written (trimmed, comment stripped)
  Host host;                             // names and addresses: the normal form
  std::string_view pattern;              // `re:` entries: the pattern, without `re:` and ports
  std::span<const std::uint16_t> ports;  // sorted and distinct; empty means any port
};

// The entry on a line: everything before '#', trimmed of ASCII white space. Empty for blank and
// comment-only lines. This is also the text reported in matches and issues.
std::string_view entry_text(std::string_view line);

// The longest message for the agent an entry may carry; a longer one is cut there.
inline constexpr std::size_t kMaxAgentMessage = 300;

// The message after "#!" on a line whose comment starts with it, trimmed, made one line of
// printable ASCII (a control byte becomes a space, any other byte '?': the message travels in
// an HTTP header) and cut at kMaxAgentMessage characters. Empty when there is none.
std::string agent_message(std::string_view line);

// Parses a non-empty entry as returned by entry_text(). `ports` is scratch storage the caller
// reuses from line to line (it saves an allocation per line on million-line files). The error is
// a sentence naming what is wrong, e.g. "bad port '0443' (1..65535, no leading zeros)".
Expected<RuleEntry, std::string> parse_entry(std::string_view text,
                                             std::vector<std::uint16_t>& ports);

// The same, into `entry`; returns the message for a bad entry (then `entry` is unspecified). For
// loops over many lines: one entry reused for every line spares the moves of a returned one,
// which cost about a tenth of the load time of a million-line file.
std::optional<std::string> parse_entry(std::string_view text, RuleEntry& entry,
                                       std::vector<std::uint16_t>& ports);

// The issue for line `line_number` of `source`, quoting the line's entry text.
LoadIssue make_issue(std::string_view source, std::uint32_t line_number, std::string_view line,
                     std::string message);

// Calls `visit(line, line_number)` for each line of a rules file, numbered from 1 (saturating at
// the largest uint32), after skipping a leading byte order mark. A final line without '\n' is
// visited; the empty text after a final '\n' is not. `line` keeps a '\r' of CRLF files, which
// entry_text() trims.
template <typename Visit>
void for_each_line(std::string_view text, Visit&& visit) {
  // A byte order mark is what some Windows editors put first; it is not part of any entry.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.starts_with(kByteOrderMark)) {
    text.remove_prefix(kByteOrderMark.size());
  }
  std::uint32_t line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line_number < std::numeric_limits<std::uint32_t>::max()) {
      ++line_number;
    }
    visit(line, line_number);
  }
}

}  // namespace sandgate::rules
