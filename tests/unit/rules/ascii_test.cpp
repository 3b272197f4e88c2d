// Table-driven tests for rules/ascii.hpp: case folding touches ASCII letters only (never a byte
// outside ASCII, whatever the locale), and each trim takes exactly its own set of characters.
#include "rules/ascii.hpp"

#include <gtest/gtest.h>

#include <clocale>
#include <string>
#include <string_view>

namespace sandgate::rules {
namespace {

TEST(Ascii, CaseFoldingChangesAsciiLettersOnly) {
  struct Case {
    std::string_view in, lower, upper;
  };
  const Case cases[] = {
      {"", "", ""},
      {"Example.COM", "example.com", "EXAMPLE.COM"},
      {"get", "get", "GET"},
      {"@[`{", "@[`{", "@[`{"},  // the neighbours of A-Z and a-z
      {"0-9_ \t", "0-9_ \t", "0-9_ \t"},
      {"\xc3\x89T\xc3\xa9", "\xc3\x89t\xc3\xa9", "\xc3\x89T\xc3\xa9"},  // UTF-8 bytes stay
      {std::string_view("A\0b", 3), std::string_view("a\0b", 3), std::string_view("A\0B", 3)},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ascii_lower(c.in), c.lower) << c.in;
    EXPECT_EQ(ascii_upper(c.in), c.upper) << c.in;
  }
  static_assert(ascii_lower('Z') == 'z' && ascii_lower('z') == 'z' && ascii_upper('a') == 'A');
}

TEST(Ascii, CaseFoldingIgnoresTheLocale) {
  // A single-byte locale would fold 0xC0 to 0xE0 through tolower(); these never do.
  const char* previous = std::setlocale(LC_CTYPE, nullptr);
  const std::string saved = previous != nullptr ? previous : "C";
  if (std::setlocale(LC_CTYPE, "C.UTF-8") == nullptr) {
    std::setlocale(LC_CTYPE, "");
  }
  EXPECT_EQ(ascii_lower("\xc0\xdf"), "\xc0\xdf");
  EXPECT_EQ(ascii_upper("\xe0\xff"), "\xe0\xff");
  std::setlocale(LC_CTYPE, saved.c_str());
}

TEST(Ascii, EachTrimTakesItsOwnCharactersFromBothEndsOnly) {
  struct Case {
    std::string_view in, ows, space;
  };
  const Case cases[] = {
      {"", "", ""},
      {"   ", "", ""},
      {" \t value \t ", "value", "value"},
      {"a b", "a b", "a b"},                                // never inside
      {"\r\nvalue\r\n", "\r\nvalue\r\n", "value"},          // CR and LF are not HTTP's OWS
      {"\v\fvalue\f\v", "\v\fvalue\f\v", "value"},          // VT and FF are ASCII space
      {" \r value", "\r value", "value"},                   // OWS stops at the first other byte
      {"\xc2\xa0value", "\xc2\xa0value", "\xc2\xa0value"},  // no-break space is not ASCII
      {std::string_view("\0 x", 3), std::string_view("\0 x", 3), std::string_view("\0 x", 3)},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(trim_ows(c.in), c.ows) << c.in;
    EXPECT_EQ(trim_ascii_space(c.in), c.space) << c.in;
  }
  static_assert(trim_ows(" x\t") == "x" && trim_ascii_space("\nx\r") == "x");
}

}  // namespace
}  // namespace sandgate::rules
