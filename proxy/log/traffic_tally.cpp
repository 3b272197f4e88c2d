// Bytes per destination. See traffic_tally.hpp.
#include "proxy/log/traffic_tally.hpp"

#include <algorithm>

namespace sandgate::log {
namespace {

constexpr std::size_t kMaxHost =
    512;  // a host is at most 255 bytes; what failed parsing may not be

}  // namespace

void TrafficTally::add(const Record& record) {
  // An inspected connection's own end line repeats its requests' bytes: counted there.
  if (record.event != Record::Event::end || record.host.empty() || record.host == "-" ||
      record.repeats_requests) {
    return;
  }
  std::pair<std::string, std::uint16_t> key{std::string(record.host.substr(0, kMaxHost)),
                                            record.port};
  std::lock_guard lock(mutex_);
  auto found = rows_.find(key);
  DestinationTraffic* row = &others_;
  if (found != rows_.end()) {
    row = &found->second;
  } else if (rows_.size() < max_destinations_) {
    row = &rows_.emplace(key, DestinationTraffic{key.first, key.second, 0, 0, 0}).first->second;
  }
  row->sent += record.bytes_up;
  row->received += record.bytes_down;
  ++row->connections;
}

TrafficCounts TrafficTally::counts() const {
  TrafficCounts out;
  {
    std::lock_guard lock(mutex_);
    out.others = others_;
    for (const auto& [key, row] : rows_) {
      out.destinations.push_back(row);
    }
  }
  std::stable_sort(out.destinations.begin(), out.destinations.end(),
                   [](const DestinationTraffic& a, const DestinationTraffic& b) {
                     return a.sent + a.received > b.sent + b.received;
                   });
  return out;
}

}  // namespace sandgate::log
