// A minimal writer for one-line JSON objects: the load tool's machine-readable output, one object
// per run, appended to result files and read back by compare.sh with python3.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sandgate::load {

// Builds `{"key":value,...}` incrementally; nested objects with open()/close(). Keys and string
// values are escaped; doubles are written with enough digits to compare runs, NaN/inf as null.
class json_line {
 public:
  json_line();

  json_line& field(std::string_view key, std::string_view value);
  json_line& field(std::string_view key, const char* value);
  json_line& field(std::string_view key, double value);
  json_line& field(std::string_view key, std::uint64_t value);
  json_line& field(std::string_view key, std::int64_t value);
  json_line& field(std::string_view key, unsigned value);
  json_line& field(std::string_view key, int value);
  json_line& field(std::string_view key, bool value);
  json_line& null_field(std::string_view key);
  json_line& open(std::string_view key);
  json_line& close();

  // The finished text; closes the outer object. Call once.
  std::string str();

 private:
  void key(std::string_view name);
  void append_escaped(std::string_view text);

  std::string text_;
  bool first_ = true;
};

}  // namespace sandgate::load
