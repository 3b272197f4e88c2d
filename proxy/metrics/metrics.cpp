// Per-worker counters. See metrics.hpp.
#include "proxy/metrics/metrics.hpp"

#include <algorithm>

namespace sandgate::metrics {

void Histogram::observe(std::chrono::steady_clock::duration elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  std::size_t bucket = 0;
  while (bucket < kBounds.size() && seconds > kBounds[bucket]) {
    ++bucket;
  }
  buckets_[bucket].add();
  sum_micros_.add(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()));
  count_.add();
}

std::array<std::uint64_t, Histogram::kBounds.size() + 1> Histogram::buckets() const {
  std::array<std::uint64_t, kBounds.size() + 1> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = buckets_[i].get();
  }
  return out;
}

double Histogram::sum_seconds() const { return static_cast<double>(sum_micros_.get()) / 1e6; }
std::uint64_t Histogram::count() const { return count_.get(); }

const std::vector<std::string_view>& known_reasons() {
  static const std::vector<std::string_view> reasons = {
      "allowed",          "invalid-host",        "loopback",
      "ip-address",       "metadata-address",    "private-address",
      "reserved-address", "blocklist",           "port-not-allowed",
      "ssh-disabled",     "ssh-non-git-host",    "not-allowlisted",
      "launchdarkly",     "launchdarkly-unreachable", "sni-mismatch",
      "protocol-mismatch", "dns-not-found",      "dns-timeout",
      "dns-error",        "connection-refused",  "connection-timeout",
      "destination-unavailable", "connection-limit", "request-timeout",
      "header-too-large", "bad-request",         "origin-form",
      "https-absolute-form", "upstream-failure", "auth-required",
      "auth-failed",      "sni-missing",         "bad-response",
      "upstream-closed",  "response-timeout",    "internal-error",
      "shutting-down",    "client-closed",       "no-request",
      "other",
  };
  return reasons;
}

std::size_t reason_index(std::string_view reason) {
  const auto& reasons = known_reasons();
  auto found = std::find(reasons.begin(), reasons.end(), reason);
  return found == reasons.end() ? reasons.size() - 1
                                : static_cast<std::size_t>(found - reasons.begin());
}

WorkerMetrics::WorkerMetrics() : decisions(known_reasons().size()) {}

void WorkerMetrics::count_decision(std::string_view verdict, std::string_view reason) {
  const std::size_t column = verdict == "allow" ? 0 : verdict == "deny" ? 1 : 2;
  decisions[reason_index(reason)][column].add();
}

void WorkerMetrics::record_denial(Denial denial) {
  std::lock_guard lock(denials_mutex_);
  denials_.push_back(std::move(denial));
  if (denials_.size() > kDenialsKept) {
    denials_.pop_front();
  }
}

std::vector<Denial> WorkerMetrics::recent_denials() const {
  std::lock_guard lock(denials_mutex_);
  return {denials_.begin(), denials_.end()};
}

}  // namespace sandgate::metrics
