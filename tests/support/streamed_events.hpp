// The check that a streamed reply streams: the origin's /sse sends server-sent events apart in
// time, each carrying its "index" and when it was sent ("sent_us", epoch microseconds); the
// client's output, each line stamped with when it arrived, shows every event reaching the client
// before the origin sent the next. An order of events, not a time limit: a gate that held an
// event until more came would deliver it after the next was sent.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <utility>

namespace sandgate::testing {

// A shell filter (`curl ... | ` + kLineStamper) that prefixes each line with when it arrived
// (epoch microseconds). One process for the whole stream: a shell loop forking `date` per line
// was itself late under load, and made an event look held.
inline constexpr const char* kLineStamper =
    R"(/usr/bin/python3 -u -c 'import sys, time
for line in iter(sys.stdin.readline, ""):
    sys.stdout.write("%d %s" % (time.time_ns() // 1000, line))')";

// Checks that `stamped` (a reply through kLineStamper) holds `count` events and that each but the
// last arrived before the next was sent. A fatal failure when the events are not all there: wrap
// the call in ASSERT_NO_FATAL_FAILURE to stop the test there.
inline void expect_each_event_before_the_next(const std::string& stamped, std::size_t count) {
  // Per event index: when the origin sent it and when the client printed it.
  std::map<int, std::pair<long long, long long>> events;
  std::istringstream lines(stamped);
  for (std::string line; std::getline(lines, line);) {
    const auto index = line.find("\"index\":");
    const auto sent = line.find("\"sent_us\":");
    if (index == std::string::npos || sent == std::string::npos) {
      continue;
    }
    events[std::atoi(line.c_str() + index + 8)] = {
        std::strtoll(line.c_str() + sent + 10, nullptr, 10),
        std::strtoll(line.c_str(), nullptr, 10)};
  }
  ASSERT_EQ(events.size(), count) << stamped;
  for (int i = 0; i + 1 < static_cast<int>(count); ++i) {
    EXPECT_LT(events[i].second, events[i + 1].first)
        << "event " << i << " waited for the next one:\n"
        << stamped;
  }
}

}  // namespace sandgate::testing
