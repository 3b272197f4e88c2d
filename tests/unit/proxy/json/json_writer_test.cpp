// The one JSON escaping function (proxy/json/json_writer.hpp): a table of hostile and tricky
// byte strings with the exact literal each must become, then exhaustive sweeps over short byte
// strings checked against Boost.JSON's strict parser (the output always parses; well-formed text
// reads back unchanged; is_valid_utf8 agrees with Boost.JSON's own UTF-8 validation).
#include "proxy/json/json_writer.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::json_writer {
namespace {

using namespace std::string_view_literals;

// A printable rendering of bytes for failure messages.
std::string hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
    out += ' ';
  }
  return out;
}

std::string literal(std::string_view bytes) {
  std::string out;
  append_string(out, bytes);
  return out;
}

// Strict parse (Boost.JSON validates UTF-8 unless told not to); nullopt when it refuses.
std::optional<boost::json::value> parse(std::string_view text) {
  boost::system::error_code error;
  boost::json::value value =
      boost::json::parse(boost::json::string_view(text.data(), text.size()), error);
  if (error) {
    return std::nullopt;
  }
  return value;
}

// The bytes a JSON string literal decodes to.
std::optional<std::string> decoded(std::string_view text) {
  auto value = parse(text);
  if (!value || !value->is_string()) {
    return std::nullopt;
  }
  return std::string(value->as_string().data(), value->as_string().size());
}

// Independent oracle for well-formedness: the bytes as a JSON string with only what JSON itself
// requires escaped, given to Boost.JSON's validating parser.
bool boost_json_accepts_as_utf8(std::string_view bytes) {
  std::string text = "\"";
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\' || c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      text += escaped;
    } else {
      text += ch;
    }
  }
  text += '"';
  return parse(text).has_value();
}

struct Case {
  const char* name;
  std::string_view bytes;
  std::string_view json;  // the literal, quotes included
};

// Replacement: one \ufffd per maximal subpart (Unicode 15, section 3.9, Table 3-8).
const Case kCases[] = {
    // Plain text and what JSON itself requires.
    {"empty", ""sv, R"("")"sv},
    {"ascii", "api.example.com:443"sv, R"("api.example.com:443")"sv},
    {"quote_and_backslash", "a\"b\\c"sv, R"("a\"b\\c")"sv},
    {"slash_unescaped", "a/b"sv, R"("a/b")"sv},
    {"tilde_last_plain_ascii", "~"sv, R"("~")"sv},
    // Control characters: short escapes where JSON has them, \u00XX otherwise.
    {"nul", "a\0b"sv, R"("a\u0000b")"sv},
    {"newline_return_tab", "\n\r\t"sv, R"("\n\r\t")"sv},
    {"backspace_formfeed", "\b\f"sv, R"("\b\f")"sv},
    {"other_c0", "\x01\x1b\x1f"sv, R"("\u0001\u001b\u001f")"sv},
    {"del", "\x7f"sv, R"("\u007f")"sv},
    {"c1_controls", "\xc2\x80\xc2\x9b\xc2\x9f"sv, R"("\u0080\u009b\u009f")"sv},
    {"line_separators", "\xe2\x80\xa8|\xe2\x80\xa9"sv, R"("\u2028|\u2029")"sv},
    // Well-formed multi-byte text is copied, at every boundary of Table 3-7.
    {"two_byte_first_non_c1", "\xc2\xa0"sv, "\"\xc2\xa0\""sv},
    {"two_byte", "caf\xc3\xa9"sv, "\"caf\xc3\xa9\""sv},
    {"two_byte_last", "\xdf\xbf"sv, "\"\xdf\xbf\""sv},
    {"three_byte_first", "\xe0\xa0\x80"sv, "\"\xe0\xa0\x80\""sv},
    {"three_byte_euro", "\xe2\x82\xac"sv, "\"\xe2\x82\xac\""sv},
    // U+2027 as it is; U+202A, a bidirectional control, escaped (see the test of those below).
    {"three_byte_near_2028", "\xe2\x80\xa7\xe2\x80\xaa"sv, "\"\xe2\x80\xa7\\u202a\""sv},
    {"last_before_surrogates", "\xed\x9f\xbf"sv, "\"\xed\x9f\xbf\""sv},
    {"first_after_surrogates", "\xee\x80\x80"sv, "\"\xee\x80\x80\""sv},
    {"three_byte_last", "\xef\xbf\xbf"sv, "\"\xef\xbf\xbf\""sv},
    {"replacement_character_sent", "\xef\xbf\xbd"sv, "\"\xef\xbf\xbd\""sv},
    {"four_byte_first", "\xf0\x90\x80\x80"sv, "\"\xf0\x90\x80\x80\""sv},
    {"four_byte_emoji", "\xf0\x9f\x98\x80"sv, "\"\xf0\x9f\x98\x80\""sv},
    {"four_byte_last", "\xf4\x8f\xbf\xbf"sv, "\"\xf4\x8f\xbf\xbf\""sv},
    {"idn_u_label", "m\xc3\xbcnchen.example"sv, "\"m\xc3\xbcnchen.example\""sv},
    // Bytes that never occur in UTF-8.
    {"issue_14_host", "\xff\xfe.example"sv, R"("\ufffd\ufffd.example")"sv},
    {"ff_alone", "\xff"sv, R"("\ufffd")"sv},
    {"f5_to_ff", "\xf5\xf8\xfc"sv, R"("\ufffd\ufffd\ufffd")"sv},
    {"stray_continuations", "\x80\xbf"sv, R"("\ufffd\ufffd")"sv},
    {"latin1_e_acute", "caf\xe9"sv, R"("caf\ufffd")"sv},
    // Overlong forms: the lead byte or the second byte is out of range, each byte one subpart.
    {"overlong_slash_c0", "\xc0\xaf"sv, R"("\ufffd\ufffd")"sv},
    {"overlong_nul_c0", "\xc0\x80"sv, R"("\ufffd\ufffd")"sv},
    {"overlong_c1", "\xc1\xbf"sv, R"("\ufffd\ufffd")"sv},
    {"overlong_three_byte", "\xe0\x80\xaf"sv, R"("\ufffd\ufffd\ufffd")"sv},
    {"overlong_three_byte_max", "\xe0\x9f\xbf"sv, R"("\ufffd\ufffd\ufffd")"sv},
    {"overlong_four_byte", "\xf0\x80\x80\xaf"sv, R"("\ufffd\ufffd\ufffd\ufffd")"sv},
    {"overlong_four_byte_max", "\xf0\x8f\xbf\xbf"sv, R"("\ufffd\ufffd\ufffd\ufffd")"sv},
    // Surrogates encoded as if they were characters (CESU-8, WTF-8): not UTF-8.
    {"surrogate_high_first", "\xed\xa0\x80"sv, R"("\ufffd\ufffd\ufffd")"sv},
    {"surrogate_low_last", "\xed\xbf\xbf"sv, R"("\ufffd\ufffd\ufffd")"sv},
    {"surrogate_pair_cesu8", "\xed\xa0\xbd\xed\xb2\xa9"sv,
     R"("\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd")"sv},
    // Beyond U+10FFFF, and the old 5- and 6-byte forms.
    {"above_10ffff", "\xf4\x90\x80\x80"sv, R"("\ufffd\ufffd\ufffd\ufffd")"sv},
    {"five_byte_form", "\xf8\x88\x80\x80\x80"sv, R"("\ufffd\ufffd\ufffd\ufffd\ufffd")"sv},
    {"six_byte_form", "\xfc\x84\x80\x80\x80\x80"sv, R"("\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd")"sv},
    // Sequences cut short: the prefix is one subpart, and what follows is read afresh.
    {"truncated_two_byte_at_end", "a\xc3"sv, R"("a\ufffd")"sv},
    {"truncated_three_byte_at_end", "a\xe2\x82"sv, R"("a\ufffd")"sv},
    {"truncated_four_byte_at_end", "\xf0\x9f\x98"sv, R"("\ufffd")"sv},
    {"truncated_then_ascii", "\xe2\x82z"sv, R"("\ufffdz")"sv},
    {"truncated_then_quote", "\xc3\""sv, R"("\ufffd\"")"sv},
    {"truncated_then_valid", "\xf0\x9f\xc3\xa9"sv, "\"\\ufffd\xc3\xa9\""sv},
    {"truncated_then_nul", "\xe2\0"sv, R"("\ufffd\u0000")"sv},
    // Unicode Table 3-8, the standard's own example.
    {"unicode_table_3_8", "\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64"sv,
     R"("a\ufffd\ufffd\ufffdb\ufffdc\ufffd\ufffdd")"sv},
};

class AppendString : public ::testing::TestWithParam<Case> {};

TEST_P(AppendString, WritesTheExactLiteral) {
  const Case& c = GetParam();
  const std::string json = literal(c.bytes);
  EXPECT_EQ(json, c.json) << "input: " << hex(c.bytes);
  // And what it writes is valid JSON that decodes to the input when the input is well-formed.
  auto value = decoded(json);
  ASSERT_TRUE(value.has_value()) << "Boost.JSON refuses " << json;
  if (is_valid_utf8(c.bytes)) {
    EXPECT_EQ(*value, c.bytes);
  } else {
    EXPECT_NE(value->find("\xef\xbf\xbd"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, AppendString, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

// Hostile review: a host with U+202E (right-to-left override) read backwards in a log viewer or a
// terminal. The bidirectional controls and zero-width characters are escaped in JSON and shown
// as '?' in text, like control characters; other characters beyond ASCII are kept.
TEST(AppendString, InvisibleCharactersThatReorderTextAreEscaped) {
  std::string json;
  append_string(json,
                "xn--\xe2\x80\xae.test \xe2\x81\xa6"
                "a\xe2\x80\x8b \xef\xbb\xbf \xd8\x9c \xc3\xa9");
  EXPECT_EQ(json, "\"xn--\\u202e.test \\u2066a\\u200b \\ufeff \\u061c \xc3\xa9\"");
  std::string text;
  append_text(text, "xn--\xe2\x80\xae.test \xe2\x81\xa9 \xc3\xa9");
  EXPECT_EQ(text, "xn--?.test ? \xc3\xa9");
}

TEST(AppendString, AppendsToWhatIsThere) {
  std::string out = "x=";
  append_string(out, "\xff");
  EXPECT_EQ(out, R"(x="\ufffd")");
}

TEST(IsValidUtf8, AgreesWithTheTable) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("a\0\x7f"sv));
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf\xed\x9f\xbf\xc2\x80"));
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc0\x80"));
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("ok\xff"));
}

// Checks one input against the invariants; returns false (after recording a failure) so that
// a sweep stops at its first broken input instead of printing thousands.
bool holds_for(std::string_view bytes) {
  const std::string json = literal(bytes);
  auto value = decoded(json);
  if (!value) {
    ADD_FAILURE() << "Boost.JSON refuses the literal for " << hex(bytes) << ": " << json;
    return false;
  }
  const bool valid = is_valid_utf8(bytes);
  if (valid != boost_json_accepts_as_utf8(bytes)) {
    ADD_FAILURE() << "is_valid_utf8 says " << valid << ", Boost.JSON the opposite, for "
                  << hex(bytes);
    return false;
  }
  if (valid && *value != bytes) {
    ADD_FAILURE() << "well-formed " << hex(bytes) << " reads back as " << hex(*value);
    return false;
  }
  for (const char ch : json) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      ADD_FAILURE() << "a raw control byte in the literal for " << hex(bytes);
      return false;
    }
  }
  return true;
}

TEST(AppendString, EveryOneAndTwoByteInputParses) {
  for (int a = 0; a < 256; ++a) {
    const char one[] = {static_cast<char>(a)};
    ASSERT_TRUE(holds_for({one, 1}));
    for (int b = 0; b < 256; ++b) {
      const char two[] = {static_cast<char>(a), static_cast<char>(b)};
      ASSERT_TRUE(holds_for({two, 2}));
    }
  }
}

// Every lead byte from C0 up, with each edge of the continuation ranges of Table 3-7 (80-BF, and
// the narrower 80-8F, 90-BF, 80-9F and A0-BF some leads allow), a byte on either side of each
// edge, and their neighbours 7F and C0, in the later positions: every range boundary in three and
// four bytes. (The bytes between two edges are read alike; all of 7F-C0 made this 30 times longer.)
TEST(AppendString, EveryMultiByteBoundaryParses) {
  const std::vector<int> follow = {0x7f, 0x80, 0x81, 0x8e, 0x8f, 0x90, 0x91,
                                   0x9e, 0x9f, 0xa0, 0xa1, 0xbe, 0xbf, 0xc0};
  const int tail[] = {0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xe2};
  for (int lead = 0xc0; lead < 0x100; ++lead) {
    for (const int second : follow) {
      for (const int third : follow) {
        const char three[] = {static_cast<char>(lead), static_cast<char>(second),
                              static_cast<char>(third)};
        ASSERT_TRUE(holds_for({three, 3}));
        for (const int fourth : tail) {
          const char four[] = {static_cast<char>(lead), static_cast<char>(second),
                               static_cast<char>(third), static_cast<char>(fourth)};
          ASSERT_TRUE(holds_for({four, 4}));
        }
      }
    }
  }
}

TEST(ObjectWriter, WritesFieldsInOrder) {
  std::string out;
  ObjectWriter object(out);
  object.string("host", "\xff.example")
      .number("port", std::uint16_t{443})
      .number("unix_ms", std::int64_t{-5})
      .number("big", std::numeric_limits<std::uint64_t>::max())
      .fixed("ms", 1.23456, 3);
  object.close();
  EXPECT_EQ(out, R"({"host":"\ufffd.example","port":443,"unix_ms":-5,"big":18446744073709551615,)"
                 R"("ms":1.235})");
  ASSERT_TRUE(parse(out).has_value());
}

TEST(ObjectWriter, EmptyObject) {
  std::string out;
  ObjectWriter(out).close();
  EXPECT_EQ(out, "{}");
}

// JSON has no NaN or infinity: a number it cannot hold is null, never `nan` or `inf`.
TEST(ObjectWriter, NonFiniteNumbersAreNull) {
  std::string out;
  ObjectWriter object(out);
  object.fixed("a", std::nan(""), 3)
      .fixed("b", std::numeric_limits<double>::infinity(), 3)
      .fixed("c", -std::numeric_limits<double>::infinity(), 3)
      .fixed("d", std::numeric_limits<double>::max(), 9)
      .fixed("e", -0.0, 0);
  object.close();
  auto value = parse(out);
  ASSERT_TRUE(value.has_value()) << out;
  EXPECT_TRUE(value->at("a").is_null());
  EXPECT_TRUE(value->at("b").is_null());
  EXPECT_TRUE(value->at("c").is_null());
  EXPECT_TRUE(value->at("d").is_double());
  EXPECT_EQ(value->at("e").to_number<double>(), 0);
}

}  // namespace
}  // namespace sandgate::json_writer

namespace sandgate::json_writer {
namespace {

// Plain text for the gate's own reply bodies: valid UTF-8, no control characters.
TEST(AppendText, ReplacesIllFormedBytesAndControls) {
  const struct {
    std::string_view in;
    std::string_view out;
  } rows[] = {
      {"plain host.example", "plain host.example"},
      {"\xff\xfe.example", "\xef\xbf\xbd\xef\xbf\xbd.example"},
      {"caf\xc3\xa9", "caf\xc3\xa9"},
      {"esc\x1b[31m", "esc?[31m"},
      {"bell\x07 del\x7f c1\xc2\x9b", "bell? del? c1?"},
      {std::string_view("nul\0x", 5), "nul?x"},
      {"cut \xe2\x82", "cut \xef\xbf\xbd"},
  };
  for (const auto& row : rows) {
    std::string out;
    append_text(out, row.in);
    EXPECT_EQ(out, row.out);
    EXPECT_TRUE(is_valid_utf8(out));
  }
}

}  // namespace
}  // namespace sandgate::json_writer
