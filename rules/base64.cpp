// Base64. See base64.hpp.
#include "rules/base64.hpp"

#include <array>
#include <cstdint>

namespace sandgate::rules {
namespace {

constexpr std::string_view kStandard =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlSafe =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// The standard alphabet's values; -1 for every other byte.
constexpr std::array<signed char, 256> kValues = [] {
  std::array<signed char, 256> values{};
  values.fill(-1);
  for (std::size_t i = 0; i < kStandard.size(); ++i) {
    values[static_cast<unsigned char>(kStandard[i])] = static_cast<signed char>(i);
  }
  return values;
}();

}  // namespace

std::string base64_encoded(std::string_view bytes, bool url_safe) {
  const std::string_view alphabet = url_safe ? kUrlSafe : kStandard;
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t left = bytes.size() - i;
    std::uint32_t group = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (left > 1) {
      group |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    }
    if (left > 2) {
      group |= static_cast<unsigned char>(bytes[i + 2]);
    }
    out += alphabet[(group >> 18) & 63];
    out += alphabet[(group >> 12) & 63];
    out += left > 1 ? alphabet[(group >> 6) & 63] : '=';
    out += left > 2 ? alphabet[group & 63] : '=';
  }
  return out;
}

std::optional<std::string> base64_decoded(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) {
    return std::nullopt;
  }
  std::size_t padding = 0;
  if (text.ends_with("==")) {
    padding = 2;
  } else if (text.ends_with('=')) {
    padding = 1;
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t bits = 0;
  int held = 0;
  for (std::size_t i = 0; i < text.size() - padding; ++i) {
    const signed char value = kValues[static_cast<unsigned char>(text[i])];
    if (value < 0) {
      return std::nullopt;  // outside the alphabet, or '=' before the end
    }
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out += static_cast<char>((bits >> held) & 0xff);
    }
  }
  // The bits left over must be zero: one text, one encoding.
  if ((bits & ((1u << held) - 1)) != 0) {
    return std::nullopt;
  }
  return out;
}

}  // namespace sandgate::rules
