// Decision and end lines as the gate writes them, for the tests of what is made from the log
// (the tallies here, `sandgate run`'s summary in tests/unit/proxy/commands/).
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/log/decision_log.hpp"

namespace sandgate::log {

inline Record decision(std::string_view verdict, std::string_view host, std::uint16_t port,
                       std::string_view reason, std::string_view rule = {}) {
  Record r;
  r.event = Record::Event::decision;
  r.verdict = verdict;
  r.host = host;
  r.port = port;
  r.reason = reason;
  r.rule = rule;
  return r;
}

inline Record end_line(std::string_view host, std::uint16_t port, std::uint64_t up,
                       std::uint64_t down) {
  Record r;
  r.event = Record::Event::end;
  r.host = host;
  r.port = port;
  r.bytes_up = up;
  r.bytes_down = down;
  r.outcome = "closed";
  return r;
}

}  // namespace sandgate::log
