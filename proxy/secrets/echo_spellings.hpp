// The spellings an echo may give a character that is not a letter or digit (`/` as `%2F`,
// `\/`, `&#x2F;`, `&sol;`, `%252F`, ...), in which redaction.cpp looks for a value's
// punctuation. One table for the process, made when a set of forms is (masked_secrets.cpp's
// stamp()), not by the first body an echo may be in: made there, on the thread relaying that body,
// it held a streamed reply back past the origin's next event (a tenth of a second under a
// sanitizer, most of a second on a loaded machine).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace sandgate::secrets {

// The kind of a spelling: a replaced character written again in the same kind keeps its length.
enum class Family : unsigned char {
  literal,
  percent_upper,
  percent_lower,
  json_upper,  // \u00XX
  json_lower,
  entity_hex_upper,  // &#xXX;
  entity_hex_lower,
  other,  // a spelling of its own length: \/ \" \\, &#NN;, a named entity, a space for '+'
};

// How a character is spelled at some place of the data.
struct Spelling {
  std::size_t length = 0;  // 0: none matched
  Family family = Family::literal;
};

inline constexpr char kUpperHex[] = "0123456789ABCDEF";
inline constexpr char kLowerHex[] = "0123456789abcdef";

using Spellings = std::vector<std::pair<std::string, Family>>;

// Every spelling of `c` (not a letter or digit) an echo may give it, in one layer of escaping or
// two; its own first.
const Spellings& spellings_of(char c);

// Makes the table spellings_of() reads, if it is not made yet.
void make_echo_spellings();
// Whether it is made.
bool echo_spellings_made();

}  // namespace sandgate::secrets
