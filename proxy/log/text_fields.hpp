// The text log's one way of writing a value, and the reader that takes a line apart again.
//
// Every value a text line holds (the method, the host, the reason, each key=value field) goes
// through append_text_value(): a value that could be mistaken for more than one value (a space,
// '=', '"', '\', a byte that is not printable ASCII, or nothing at all) is written in double
// quotes with '"' and '\' escaped as \" and \\ and every other such byte as \xHH. Escaping lives
// here, not at the call sites, so a field a client or an origin controls (a SOCKS5 domain, a raw
// CONNECT target, a parent proxy's words) can never pose as further fields of an audit line.
// Bytes outside printable ASCII are escaped too: a terminal must not be able to render the line
// other than it is (a bidi override, an escape sequence).
//
// parse_text_line() reads a line of format_record()'s text format back into its fields; the fuzz
// target (tests/fuzz/text_log_fuzz.cpp) and the unit tests hold the two to each other. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::log {

// True when `value` must be quoted to read back as one value.
bool needs_quotes(std::string_view value);

// Appends `value` as one token: as it is, or quoted and escaped (see above).
void append_text_value(std::string& out, std::string_view value);
// The same, always in quotes (a sentence, which reads as one whatever it holds).
void append_quoted_value(std::string& out, std::string_view value);

// A text line, taken apart. Which fields a line carries follows format_record().
struct TextLine {
  std::string timestamp;
  std::uint64_t connection_id = 0;
  std::string word;  // ALLOW, BLOCK, WOULD-BLOCK, FAIL or END
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  std::optional<std::string> reason;  // "(reason)" on a denial, reason= on an end line
  // Every key=value field after the host, in order ("client", "rule", "address", "why",
  // "outcome", "up", "down", "ms").
  std::vector<std::pair<std::string, std::string>> fields;

  const std::string* field(std::string_view key) const;
};

// Nothing when `line` is not a decision or end line of the text format.
std::optional<TextLine> parse_text_line(std::string_view line);

}  // namespace sandgate::log
