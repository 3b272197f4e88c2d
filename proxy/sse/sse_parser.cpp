#include "proxy/sse/sse_parser.hpp"

#include <algorithm>
#include <charconv>

namespace sandgate::sse {

namespace {

std::string limit_clause(const std::string& limit_name) {
  return limit_name.empty() ? std::string() : " (the size limit, " + limit_name + ")";
}

}  // namespace

SseParser::SseParser(std::size_t max_line, std::size_t max_event, std::string limit_name)
    : max_line_(max_line), max_event_(max_event), limit_name_(std::move(limit_name)) {}

bool SseParser::feed(std::string_view bytes, const Handlers& handlers) {
  if (failed()) {
    return false;
  }
  if (at_start_) {
    // A UTF-8 byte order mark at the very start is skipped; it may arrive split across chunks.
    constexpr std::string_view kBom = "\xEF\xBB\xBF";
    while (!bytes.empty() && bom_held_.size() < kBom.size()) {
      bom_held_.push_back(bytes.front());
      bytes.remove_prefix(1);
      if (!kBom.starts_with(bom_held_)) {
        break;
      }
    }
    if (kBom.starts_with(bom_held_)) {
      if (bom_held_.size() < kBom.size()) {
        return true;  // wait for the rest of a possible BOM
      }
      at_start_ = false;
      bom_held_.clear();
    } else {
      at_start_ = false;
      const std::string held = std::move(bom_held_);
      bom_held_.clear();
      if (!consume(held, handlers)) {
        return false;
      }
    }
  }
  return consume(bytes, handlers);
}

bool SseParser::consume(std::string_view bytes, const Handlers& handlers) {
  while (!bytes.empty()) {
    if (last_was_cr_ && bytes.front() == '\n') {
      bytes.remove_prefix(1);  // the LF of a CRLF whose CR ended the previous chunk's line
    }
    last_was_cr_ = false;
    const auto end = bytes.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      if (partial_.size() + bytes.size() > max_line_) {
        error_ = "event stream line longer than " + std::to_string(max_line_) + " bytes" +
                 limit_clause(limit_name_);
        return false;
      }
      partial_.append(bytes);
      return true;
    }
    if (partial_.size() + end > max_line_) {
      error_ = "event stream line longer than " + std::to_string(max_line_) + " bytes" +
               limit_clause(limit_name_);
      return false;
    }
    std::string_view text = bytes.substr(0, end);
    if (!partial_.empty()) {
      partial_.append(text);
      text = partial_;
    }
    const bool cr = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
    if (cr) {
      if (!bytes.empty() && bytes.front() == '\n') {
        bytes.remove_prefix(1);
      } else if (bytes.empty()) {
        last_was_cr_ = true;
      }
    }
    std::string copy;
    if (text.data() == partial_.data()) {
      copy = std::move(partial_);
      partial_.clear();
      text = copy;
    }
    line(text, handlers);
    if (failed()) {
      return false;
    }
  }
  return true;
}

void SseParser::line(std::string_view text, const Handlers& handlers) {
  if (text.empty()) {
    // Dispatch. An event without data is dropped (the format says so), its fields reset.
    if (have_data_) {
      SseEvent out = std::move(event_);
      if (handlers.on_event) {
        handlers.on_event(std::move(out));
      }
    } else if (have_id_ && handlers.on_id_only) {
      handlers.on_id_only(std::move(event_.id));
    }
    event_ = SseEvent{};
    have_data_ = false;
    have_id_ = false;
    return;
  }
  if (text.front() == ':') {
    if (handlers.on_comment) {
      handlers.on_comment();
    }
    return;
  }
  std::string_view field = text;
  std::string_view value;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    field = text.substr(0, colon);
    value = text.substr(colon + 1);
    if (value.starts_with(' ')) {
      value.remove_prefix(1);
    }
  }
  if (field == "event") {
    event_.type = std::string(value);
  } else if (field == "data") {
    if (event_.data.size() + value.size() + 1 > max_event_) {
      error_ = "event stream event larger than " + std::to_string(max_event_) + " bytes" +
               limit_clause(limit_name_);
      return;
    }
    if (have_data_) {
      event_.data.push_back('\n');
    }
    event_.data.append(value);
    have_data_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) {
      event_.id = std::string(value);
      have_id_ = true;
    }
  } else if (field == "retry") {
    std::size_t ms = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec == std::errc{} && end == value.data() + value.size() && !value.empty()) {
      retry_ms_ = ms;
      if (handlers.on_retry) {
        handlers.on_retry(ms);
      }
    }
  }
  // Other fields are ignored, as the format requires.
}

}  // namespace sandgate::sse
