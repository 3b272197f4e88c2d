// Every destination the gate denied (or, in report-only mode, would have denied) since it
// started, counted per destination and reason: what `sandgate run` summarises when its command
// exits. Unlike the admin endpoint's /denials (the last few hundred denials, one by one), this
// counts ALL of them, aggregated, with a bound on how many distinct destinations it keeps.
//
// Fed by the decision log (DecisionLog::write sees every decision, whatever the log level), so
// every deny point that logs is counted without knowing about this. Thread-safe: one short
// lock per denial (never on an allowed connection), as /denials' ring takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "proxy/log/record.hpp"

namespace sandgate::log {

// One destination refused for one reason, and how often.
struct DeniedDestination {
  std::string verdict;  // "deny", or "would-deny" (report-only mode)
  std::string host;     // as logged: normalised, `[v6]` for IPv6
  std::uint16_t port = 0;
  std::string reason;  // the reason code
  std::string rule;    // "file:line entry" of the first such denial; empty when no list decided
  std::uint64_t count = 0;
};

struct DenialCounts {
  // Most denied first (then by host, port, reason), at most max_destinations rows.
  std::vector<DeniedDestination> destinations;
  std::uint64_t total = 0;  // every denial counted, kept rows or not
  // Denials of destinations that came after the bound was reached (not in `destinations`).
  std::uint64_t untracked = 0;
};

class DenialTally {
 public:
  // Distinct (verdict, destination, reason) rows kept: enough for any run a person reads, small
  // enough (each row under ~1.3 KiB) that a command probing a million names costs nothing.
  static constexpr std::size_t kDefaultMaxDestinations = 1000;

  explicit DenialTally(std::size_t max_destinations = kDefaultMaxDestinations)
      : max_destinations_(max_destinations) {}

  // Counts `record` when it is a denial of a destination: a decision line whose verdict is
  // `deny` or `would-deny`, or the end line of a connection a reload revoked. Anything else
  // (allows, failures, end lines, requests that named no destination) is ignored.
  void add(const Record& record);

  DenialCounts counts() const;

 private:
  // verdict, host, port, reason
  using Key = std::tuple<std::string, std::string, std::uint16_t, std::string>;
  struct Row {
    std::string rule;
    std::uint64_t count = 0;
  };
  const std::size_t max_destinations_;
  mutable std::mutex mutex_;
  std::map<Key, Row> rows_;
  std::uint64_t total_ = 0;
  std::uint64_t untracked_ = 0;
};

}  // namespace sandgate::log
