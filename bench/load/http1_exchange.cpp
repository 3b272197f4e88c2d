// HTTP/1.1 response heads as the load tool reads them (see http1_exchange.hpp).
#include "bench/load/http1_exchange.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace sandgate::load {

namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool contains_ignoring_case(std::string_view text, std::string_view word) {
  for (std::size_t i = 0; i + word.size() <= text.size(); ++i) {
    if (equals_ignoring_case(text.substr(i, word.size()), word)) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool parse_response_head(std::string_view head, response_head& out) {
  out = {};
  out.status = parse_http_status(head);
  if (out.status == 0) {
    return false;
  }
  const bool http10 = head.starts_with("HTTP/1.0");
  bool keep_alive = false;
  bool have_length = false;
  std::size_t pos = head.find("\r\n") + 2;
  while (pos < head.size()) {
    const std::size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos || end == pos) {
      break;
    }
    const std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    const std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    if (equals_ignoring_case(name, "content-length")) {
      const auto [ptr, ec] =
          std::from_chars(value.data(), value.data() + value.size(), out.content_length);
      have_length = ec == std::errc{};
    } else if (equals_ignoring_case(name, "transfer-encoding")) {
      return false;
    } else if (equals_ignoring_case(name, "connection")) {
      out.close = out.close || contains_ignoring_case(value, "close");
      keep_alive = keep_alive || contains_ignoring_case(value, "keep-alive");
    }
  }
  // HTTP/1.0 closes unless it says keep-alive; HTTP/1.1 keeps alive unless it says close.
  out.close = out.close || (http10 && !keep_alive);
  return have_length;
}

}  // namespace sandgate::load
