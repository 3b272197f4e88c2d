// Small ASCII text helpers every layer shares: case folding and trimming as protocols and the
// gate's files define them, never by the C library's locale (a byte outside ASCII is left as it
// is). Header-only, so that sandgate-connect (connect-proxy/, plain POSIX) may use it too.
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sandgate::rules {

// `c` in lower (upper) case when it is an ASCII letter; otherwise `c`.
constexpr char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
constexpr char ascii_upper(char c) {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

// `text` with its ASCII letters in lower (upper) case.
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = ascii_lower(c);
  }
  return out;
}
inline std::string ascii_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = ascii_upper(c);
  }
  return out;
}

// ASCII letters and digits, as islower() and the like in the C locale.
constexpr bool is_ascii_lower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
constexpr bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_ascii_alnum(char c) {
  return is_ascii_lower(c) || is_ascii_upper(c) || is_ascii_digit(c);
}

// SP or HTAB: HTTP's optional whitespace (RFC 9110, section 5.6.3).
constexpr bool is_ows(char c) { return c == ' ' || c == '\t'; }

// The six ASCII white-space characters (SP, HTAB, LF, VT, FF, CR), as isspace() in the C locale.
constexpr bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Whether `a` and `b` are the same but for ASCII letters' case (header names, tokens).
constexpr bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) {
      return false;
    }
  }
  return true;
}

// `text` without the SP and HTAB at either end: a header field's value, a parameter.
constexpr std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && is_ows(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && is_ows(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

// `text` without ASCII white space at either end: a line of a list file, a setting's value.
constexpr std::string_view trim_ascii_space(std::string_view text) {
  while (!text.empty() && is_ascii_space(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && is_ascii_space(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace sandgate::rules
