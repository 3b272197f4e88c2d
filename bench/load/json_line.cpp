// One-line JSON writer (see json_line.hpp).
#include "bench/load/json_line.hpp"

#include <cmath>
#include <cstdio>

namespace sandgate::load {

json_line::json_line() : text_("{") {}

void json_line::append_escaped(std::string_view text) {
  text_ += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      text_ += '\\';
      text_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      text_ += escaped;
    } else {
      text_ += c;
    }
  }
  text_ += '"';
}

void json_line::key(std::string_view name) {
  if (!first_) {
    text_ += ',';
  }
  first_ = false;
  append_escaped(name);
  text_ += ':';
}

json_line& json_line::field(std::string_view name, std::string_view value) {
  key(name);
  append_escaped(value);
  return *this;
}

json_line& json_line::field(std::string_view name, const char* value) {
  return field(name, std::string_view(value));
}

json_line& json_line::field(std::string_view name, double value) {
  key(name);
  if (!std::isfinite(value)) {
    text_ += "null";
    return *this;
  }
  char number[40];
  std::snprintf(number, sizeof number, "%.6g", value);
  text_ += number;
  return *this;
}

json_line& json_line::field(std::string_view name, std::uint64_t value) {
  key(name);
  text_ += std::to_string(value);
  return *this;
}

json_line& json_line::field(std::string_view name, std::int64_t value) {
  key(name);
  text_ += std::to_string(value);
  return *this;
}

json_line& json_line::field(std::string_view name, unsigned value) {
  return field(name, static_cast<std::uint64_t>(value));
}

json_line& json_line::field(std::string_view name, int value) {
  return field(name, static_cast<std::int64_t>(value));
}

json_line& json_line::field(std::string_view name, bool value) {
  key(name);
  text_ += value ? "true" : "false";
  return *this;
}

json_line& json_line::null_field(std::string_view name) {
  key(name);
  text_ += "null";
  return *this;
}

json_line& json_line::open(std::string_view name) {
  key(name);
  text_ += '{';
  first_ = true;
  return *this;
}

json_line& json_line::close() {
  text_ += '}';
  first_ = false;
  return *this;
}

std::string json_line::str() {
  text_ += '}';
  return std::move(text_);
}

}  // namespace sandgate::load
