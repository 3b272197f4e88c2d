// The per-destination count of denials. See denial_tally.hpp.
#include "proxy/log/denial_tally.hpp"

#include <algorithm>

namespace sandgate::log {
namespace {

// A host is at most 255 bytes (a raw target that failed parsing can be longer); a rule is a
// file path and an entry. Kept text is capped so that a row's size is bounded whatever a
// client sent.
constexpr std::size_t kMaxText = 512;

std::string capped(std::string_view text) { return std::string(text.substr(0, kMaxText)); }

bool is_denial(const Record& record) {
  if (record.verdict != "deny" && record.verdict != "would-deny") {
    return false;
  }
  if (record.event == Record::Event::end && record.outcome != "revoked" &&
      record.outcome != "budget-exhausted") {
    return false;  // an end line repeats its decision line's verdict
  }
  // Requests refused before they named a destination (connection limit, a client that left)
  // have nothing to allow.
  return !record.host.empty() && record.host != "-";
}

}  // namespace

void DenialTally::add(const Record& record) {
  if (!is_denial(record)) {
    return;
  }
  Key key{std::string(record.verdict), capped(record.host), record.port, capped(record.reason)};
  std::lock_guard lock(mutex_);
  ++total_;
  auto found = rows_.find(key);
  if (found == rows_.end()) {
    if (rows_.size() >= max_destinations_) {
      ++untracked_;
      return;
    }
    found = rows_.emplace(std::move(key), Row{capped(record.rule), 0}).first;
  }
  ++found->second.count;
}

DenialCounts DenialTally::counts() const {
  DenialCounts out;
  {
    std::lock_guard lock(mutex_);
    out.total = total_;
    out.untracked = untracked_;
    out.destinations.reserve(rows_.size());
    for (const auto& [key, row] : rows_) {
      const auto& [verdict, host, port, reason] = key;
      out.destinations.push_back({verdict, host, port, reason, row.rule, row.count});
    }
  }
  // The map's order already breaks ties by (verdict, host, port, reason): a stable sort by count
  // keeps it.
  std::stable_sort(
      out.destinations.begin(), out.destinations.end(),
      [](const DeniedDestination& a, const DeniedDestination& b) { return a.count > b.count; });
  return out;
}

}  // namespace sandgate::log
