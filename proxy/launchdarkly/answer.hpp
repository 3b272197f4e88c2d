// What the LaunchDarkly allowlist answers for one connection, and the counters behind its
// /metrics series. Shared by the two modes (domain_mode, list_mode) and the RemoteAllowlist
// that fronts them.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rules/policy.hpp"
#include "rules/reason.hpp"

namespace sandgate::launchdarkly {

// Where an answer came from, for the log, metrics and `sandgate check`.
enum class Source : std::uint8_t { network, cache, stale_cache, failover, list };
std::string_view to_string(Source);

struct Answer {
  bool allowed = true;
  // A row of the reason table (rules/reason.hpp): allowed, or, when not allowed, launchdarkly,
  // launchdarkly_unreachable or not_allowlisted (list mode). Replies and logs read that row.
  rules::Reason reason = rules::Reason::allowed;
  Source source = Source::network;
  std::string detail;  // a sentence: what LaunchDarkly said, or why it could not be asked
  std::optional<rules::RuleMatch> rule;  // list mode: the list entry that matched
};

// Counters for /metrics; read with relaxed loads.
struct Counters {
  std::atomic<std::uint64_t> lookups_network{0};
  std::atomic<std::uint64_t> lookups_cache{0};
  std::atomic<std::uint64_t> lookups_stale{0};
  std::atomic<std::uint64_t> lookups_failover{0};
  std::atomic<std::uint64_t> lookups_list{0};
  std::atomic<std::uint64_t> requests_ok{0};
  std::atomic<std::uint64_t> requests_failed{0};
  std::atomic<std::uint64_t> stream_connects{0};
  std::atomic<std::uint64_t> stream_events{0};
};

}  // namespace sandgate::launchdarkly
