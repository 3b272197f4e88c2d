// What went to and came from each destination since the gate started, counted from the end
// lines of the decision log (every connection and exchange ends with one, bytes included): what
// `sandgate run` lists per destination beside its budgets when its command exits.
//
// Bounded like the denial tally: at most a number of distinct destinations, the rest counted
// together. Thread-safe: one short lock per end line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "proxy/log/record.hpp"

namespace sandgate::log {

struct DestinationTraffic {
  std::string host;  // as logged: normalised, `[v6]` for IPv6
  std::uint16_t port = 0;
  std::uint64_t sent = 0;         // client to destination, heads included
  std::uint64_t received = 0;     // destination to client
  std::uint64_t connections = 0;  // end lines: tunnels, plain and inspected exchanges
};

struct TrafficCounts {
  // Most bytes first (sent and received together), then by host and port.
  std::vector<DestinationTraffic> destinations;
  // Destinations that came after the bound was reached, together (host empty).
  DestinationTraffic others;
};

class TrafficTally {
 public:
  static constexpr std::size_t kDefaultMaxDestinations = 1000;

  explicit TrafficTally(std::size_t max_destinations = kDefaultMaxDestinations)
      : max_destinations_(max_destinations) {}

  // Counts an end line that names a destination; ignores every other line.
  void add(const Record& record);
  TrafficCounts counts() const;

 private:
  const std::size_t max_destinations_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::uint16_t>, DestinationTraffic> rows_;
  DestinationTraffic others_;
};

}  // namespace sandgate::log
