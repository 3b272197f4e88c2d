// The JSON writer. See json_writer.hpp.
#include "proxy/json/json_writer.hpp"

#include <algorithm>
#include <cmath>
#include <system_error>

namespace sandgate::json_writer {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// \uXXXX for a code point of the Basic Multilingual Plane.
void append_u_escape(std::string& out, std::uint32_t code) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) {
    out += kHex[(code >> shift) & 0xf];
  }
}

// The code point of a well-formed sequence of 2 or 3 bytes (4-byte ones are never format
// characters).
std::uint32_t code_point(const unsigned char* p, std::size_t length) {
  if (length == 2) {
    return ((p[0] & 0x1fU) << 6) | (p[1] & 0x3fU);
  }
  if (length == 3) {
    return ((p[0] & 0x0fU) << 12) | ((p[1] & 0x3fU) << 6) | (p[2] & 0x3fU);
  }
  return 0;
}

// Invisible characters that reorder or hide what a reader sees around them: the bidirectional
// controls (a host can be made to read backwards: U+202E) and the zero-width ones. Written
// escaped in JSON and as '?' in text, like control characters, so that a log line, an event or
// a reply shows what the bytes are.
bool is_format_spoofer(std::uint32_t code) {
  return code == 0x061c || (code >= 0x200b && code <= 0x200f) ||
         (code >= 0x202a && code <= 0x202e) || (code >= 0x2060 && code <= 0x2064) ||
         (code >= 0x2066 && code <= 0x2069) || code == 0xfeff;
}

// What starts at a position: a well-formed sequence of `length` bytes, or (`valid` false) an
// ill-formed stretch of `length` bytes, its maximal subpart, to be replaced by one U+FFFD.
struct Sequence {
  std::size_t length;
  bool valid;
};

// Unicode Table 3-7 read from the lead byte: it fixes the length of the sequence and the range
// of the second byte (which is what rules out overlong forms, surrogates and code points above
// U+10FFFF); every later byte is 80..BF. The maximal subpart of an ill-formed stretch ends before
// the first byte that breaks these ranges: that byte may start the next sequence (Table 3-8).
// `left` >= 1.
Sequence next_sequence(const unsigned char* p, std::size_t left) {
  const unsigned char lead = p[0];
  if (lead < 0x80) {
    return {1, true};
  }
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead == 0xe0) {
    length = 3;
    low = 0xa0;  // below: an overlong form of U+0000..U+07FF
  } else if ((lead >= 0xe1 && lead <= 0xec) || lead == 0xee || lead == 0xef) {
    length = 3;
  } else if (lead == 0xed) {
    length = 3;
    high = 0x9f;  // above: the surrogates U+D800..U+DFFF (CESU-8 / WTF-8, not UTF-8)
  } else if (lead == 0xf0) {
    length = 4;
    low = 0x90;  // below: an overlong form of U+0000..U+FFFF
  } else if (lead >= 0xf1 && lead <= 0xf3) {
    length = 4;
  } else if (lead == 0xf4) {
    length = 4;
    high = 0x8f;  // above: beyond U+10FFFF
  } else {
    return {1, false};  // 80..BF (a stray continuation), C0, C1 (overlong), F5..FF: no lead byte
  }
  for (std::size_t i = 1; i < length; ++i) {
    if (i >= left) {
      return {i, false};  // cut short by the end of the text
    }
    const unsigned char c = p[i];
    const bool in_range = i == 1 ? c >= low && c <= high : c >= 0x80 && c <= 0xbf;
    if (!in_range) {
      return {i, false};
    }
  }
  return {length, true};
}

// The escape for an ASCII byte that cannot appear raw in a JSON string (or should not: DEL).
void append_ascii_escape(std::string& out, unsigned char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      append_u_escape(out, c);
  }
}

}  // namespace

void append_string(std::string& out, std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  out.reserve(out.size() + size + 2);
  out += '"';
  // Bytes that need nothing are copied in runs: most text is plain ASCII.
  std::size_t run = 0;
  std::size_t i = 0;
  while (i < size) {
    const unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    out.append(bytes.data() + run, i - run);
    if (c < 0x80) {
      append_ascii_escape(out, c);
      ++i;
    } else {
      const Sequence sequence = next_sequence(p + i, size - i);
      if (!sequence.valid) {
        append_u_escape(out, 0xfffd);
      } else if (c == 0xc2 && p[i + 1] <= 0x9f) {
        append_u_escape(out, p[i + 1]);  // C1 control U+0080..U+009F
      } else if (c == 0xe2 && p[i + 1] == 0x80 && (p[i + 2] == 0xa8 || p[i + 2] == 0xa9)) {
        append_u_escape(out, 0x2000u + p[i + 2] - 0x80u);  // U+2028, U+2029
      } else if (const std::uint32_t code = code_point(p + i, sequence.length);
                 is_format_spoofer(code)) {
        append_u_escape(out, code);
      } else {
        out.append(bytes.data() + i, sequence.length);
      }
      i += sequence.length;
    }
    run = i;
  }
  out.append(bytes.data() + run, size - run);
  out += '"';
}

void append_text(std::string& out, std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  out.reserve(out.size() + size);
  std::size_t i = 0;
  while (i < size) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
      ++i;
      continue;
    }
    const Sequence sequence = next_sequence(p + i, size - i);
    if (!sequence.valid) {
      out += "\xef\xbf\xbd";  // U+FFFD
    } else if (c == 0xc2 && p[i + 1] <= 0x9f) {
      out += '?';  // a C1 control
    } else if (is_format_spoofer(code_point(p + i, sequence.length))) {
      out += '?';
    } else {
      out.append(bytes.data() + i, sequence.length);
    }
    i += sequence.length;
  }
}

bool is_valid_utf8(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const Sequence sequence = next_sequence(p + i, bytes.size() - i);
    if (!sequence.valid) {
      return false;
    }
    i += sequence.length;
  }
  return true;
}

ObjectWriter::ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }

void ObjectWriter::name(std::string_view name) {
  if (!first_) {
    out_ += ',';
  }
  first_ = false;
  append_string(out_, name);
  out_ += ':';
}

ObjectWriter& ObjectWriter::string(std::string_view name, std::string_view value) {
  this->name(name);
  append_string(out_, value);
  return *this;
}

ObjectWriter& ObjectWriter::boolean(std::string_view name, bool value) {
  this->name(name);
  out_ += value ? "true" : "false";
  return *this;
}

ObjectWriter& ObjectWriter::fixed(std::string_view name, double value, int decimals) {
  this->name(name);
  if (!std::isfinite(value)) {
    out_ += "null";  // JSON has no NaN or infinity
    return *this;
  }
  // The longest: '-', 309 digits of DBL_MAX, '.', 9 decimals.
  char text[330];
  const auto result = std::to_chars(text, text + sizeof text, value, std::chars_format::fixed,
                                    std::clamp(decimals, 0, 9));
  if (result.ec != std::errc{}) {
    out_ += "null";  // cannot happen with this buffer; never write a partial number
    return *this;
  }
  out_.append(text, result.ptr);
  return *this;
}

void ObjectWriter::close() { out_ += '}'; }

}  // namespace sandgate::json_writer
