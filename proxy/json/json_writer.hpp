// The one place the gate writes JSON text. Every JSON document it emits (the decision log's JSON
// lines, the admin endpoint's /denials, LaunchDarkly context bodies) is assembled with these, so
// that whatever bytes a client or an origin sent, the output is valid UTF-8 JSON (RFC 8259) that
// a strict reader accepts: strings are escaped here and nowhere else.
//
// What a string becomes (append_string):
//   - `"` and `\` are escaped; \n \r \t \b \f as such, every other C0 control, DEL (0x7f) and the
//     C1 controls (U+0080..U+009F) as \u00XX, so that a line stays one line and a terminal never
//     sees a control character;
//   - U+2028 and U+2029 as \u2028 \u2029 (JavaScript and some line readers end lines there);
//   - every other well-formed UTF-8 sequence (Unicode Table 3-7: no overlong form, no surrogate,
//     nothing above U+10FFFF) is copied as it is;
//   - each ill-formed stretch becomes one \ufffd (U+FFFD REPLACEMENT CHARACTER), one per maximal
//     subpart as Unicode 15 section 3.9 recommends (the WHATWG Encoding Standard and Python's
//     errors="replace" do the same). `\xff\xfe` is two of them, a sequence cut short (`\xe2\x82`)
//     one. The replacement is written as the escape `\ufffd`, never as raw bytes: in the text of a
//     line, `\ufffd` means "the gate replaced bytes here", while a U+FFFD the client itself sent
//     appears as the raw character. A decoded value cannot tell them apart; the raw bytes are
//     not kept (the text log format writes them as received).
//
// Pure functions on the caller's buffer; thread-safe. No allocation beyond `out` growing.
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

namespace sandgate::json_writer {

// Appends `bytes` (any bytes) as a JSON string literal, quotes included.
void append_string(std::string& out, std::string_view bytes);

// Appends `bytes` (any bytes) as plain UTF-8 text for a person to read (the body of the gate's
// own replies, labelled `text/plain; charset=utf-8`): well-formed UTF-8 is copied; each
// ill-formed stretch becomes one U+FFFD (as raw UTF-8, chosen as in append_string); C0 and C1
// controls and DEL become '?', so that no control sequence reaches a terminal.
void append_text(std::string& out, std::string_view bytes);

// Whether `bytes` is well-formed UTF-8 (Table 3-7). append_string copies such text unchanged
// but for the escapes above.
bool is_valid_utf8(std::string_view bytes);

// Writes one JSON object into `out`, field by field:
//   ObjectWriter object(out);
//   object.string("host", host).number("port", port);
//   object.close();
// Names are escaped like values (they are constants in the gate). Fields are written in call
// order; nothing checks for duplicate names.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out);  // appends '{'

  ObjectWriter& string(std::string_view name, std::string_view value);
  template <std::integral Integer>
  ObjectWriter& number(std::string_view name, Integer value) {
    char text[24];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    this->name(name);
    out_.append(text, end);
    return *this;
  }
  // `value` with `decimals` digits after the point (at most 9). A value JSON cannot hold (NaN,
  // an infinity) is written as null.
  ObjectWriter& fixed(std::string_view name, double value, int decimals);
  ObjectWriter& boolean(std::string_view name, bool value);
  // Appends '}'. Nothing may be added after it.
  void close();

 private:
  void name(std::string_view name);

  std::string& out_;
  bool first_ = true;
};

}  // namespace sandgate::json_writer
