// The digit of a percent-escape (`%2F`) and the one decoding of escapes in the project: what every
// reader of escaped text (request paths, query parameters, SigV4's canonical query, a sentinel
// in a URL) reads with. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sandgate::rules {

// The value of a hexadecimal digit, or -1 for any other character.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// `text` with each `%XX` escape decoded; a `%` not followed by two hexadecimal digits stays.
inline std::string percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace sandgate::rules
