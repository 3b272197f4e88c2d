// Where an HTTP/1 head ends. See http_lines.hpp.
#include "rules/http_lines.hpp"

#include <algorithm>

namespace sandgate::rules {

HeadScan scan_head(std::string_view bytes, std::size_t limit) {
  HeadScan scan;
  const std::size_t size = bytes.size() < limit ? bytes.size() : limit;
  std::size_t line_start = 0;
  for (std::size_t at = 0; at < size; ++at) {
    const char c = bytes[at];
    if (c == '\n') {
      scan.status = HeadScan::Status::malformed;
      scan.problem = "a bare LF (not after CR) ends line " +
                     std::to_string(std::count(bytes.begin(), bytes.begin() + at, '\n') + 1) +
                     " of the head; every line of an HTTP/1.1 head must end in CRLF";
      return scan;
    }
    if (c != '\r') {
      continue;
    }
    if (at + 1 >= size) {
      break;  // the LF may still come
    }
    if (bytes[at + 1] != '\n') {
      scan.status = HeadScan::Status::malformed;
      scan.problem =
          "a bare CR (not before LF) in the head; every line of an HTTP/1.1 head "
          "must end in CRLF";
      return scan;
    }
    const bool empty_line = at == line_start;
    ++at;  // the LF
    line_start = at + 1;
    if (empty_line && at > 1) {
      scan.status = HeadScan::Status::complete;
      scan.length = at + 1;
      return scan;
    }
  }
  return scan;
}

}  // namespace sandgate::rules
