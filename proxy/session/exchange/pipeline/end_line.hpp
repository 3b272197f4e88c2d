// The end line of an admitted exchange, whatever its wire (an HTTP/1.1 request, an HTTP/2 stream):
// it repeats the request's allow, with how the exchange ended and what it carried. An exchange a
// budget ended is counted as the denial it is.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "proxy/log/record.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/reason.hpp"

namespace sandgate::session::exchange {

struct EndLine {
  std::string_view method;
  std::string_view host;
  std::uint16_t port = 0;
  std::string_view path;
  std::string_view outcome;
  std::optional<rules::Reason> reason;  // none: it ended normally
  std::string_view detail;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::chrono::steady_clock::time_point started;
  std::string_view rule;  // a budget's line, when one ended the exchange
};

// The line's record (the request's allow repeated), for a front that writes it another way.
log::Record end_record(const SessionContext& context, const EndLine& line);

// Writes the end line; a budget's end is counted as a denial.
void write_end_line(SessionContext& context, const EndLine& line);

}  // namespace sandgate::session::exchange
