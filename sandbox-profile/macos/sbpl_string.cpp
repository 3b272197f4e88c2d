// SBPL string literals. See sbpl_string.hpp.
#include "sandbox-profile/macos/sbpl_string.hpp"

#include <array>

namespace sandgate::sandbox {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if it is not valid (overlong
// forms, surrogates and code points above U+10FFFF are invalid, as in RFC 3629).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) {
    return 1;
  }
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) {
      low = 0xA0;  // overlong
    } else if (lead == 0xED) {
      high = 0x9F;  // surrogates
    }
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) {
      low = 0x90;  // overlong
    } else if (lead == 0xF4) {
      high = 0x8F;  // above U+10FFFF
    }
  } else {
    return 0;
  }
  if (i + length > text.size()) {
    return 0;
  }
  if (byte(i + 1) < low || byte(i + 1) > high) {
    return 0;
  }
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) {
      return 0;
    }
  }
  return length;
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

}  // namespace

std::string_view describe(PathProblem problem) {
  switch (problem) {
    case PathProblem::empty:
      return "is empty";
    case PathProblem::not_absolute:
      return "is not absolute";
    case PathProblem::not_normal:
      return "is not in normal form (no '//', '/./', '/../' or trailing '/')";
    case PathProblem::nul:
      return "contains a NUL byte";
    case PathProblem::control_character:
      return "contains a control character";
    case PathProblem::invalid_utf8:
      return "is not valid UTF-8";
  }
  return "cannot be represented";
}

std::optional<PathProblem> check_path(std::string_view path) {
  if (path.empty()) {
    return PathProblem::empty;
  }
  // Bytes first: a NUL or a newline is the more telling problem, whatever else is wrong.
  for (std::size_t i = 0; i < path.size();) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (c == 0) {
      return PathProblem::nul;
    }
    if (is_control(c)) {
      return PathProblem::control_character;
    }
    const std::size_t length = utf8_length(path, i);
    if (length == 0) {
      return PathProblem::invalid_utf8;
    }
    i += length;
  }
  if (path.front() != '/') {
    return PathProblem::not_absolute;
  }
  if (path.size() > 1 && path.back() == '/') {
    return PathProblem::not_normal;
  }
  // Every component between slashes must be non-empty and neither "." nor "..".
  std::size_t start = 1;
  while (start <= path.size() && path.size() > 1) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) {
      end = path.size();
    }
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return PathProblem::not_normal;
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string sbpl_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  out += '"';
  return out;
}

Expected<std::string, PathProblem> sbpl_path(std::string_view path) {
  if (auto problem = check_path(path)) {
    return Unexpected{*problem};
  }
  return sbpl_quote(path);
}

std::string printable(std::string_view text) {
  static constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_length(text, i);
    if (length == 0 || is_control(c)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace sandgate::sandbox
