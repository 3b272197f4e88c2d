// Per-worker counters. See metrics.hpp.
#include "proxy/metrics/metrics.hpp"

#include <stdexcept>

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

std::size_t reason_index(std::string_view code) {
  if (const auto reason = rules::find_reason(code)) {
    return rules::reason_index(*reason);
  }
  throw std::out_of_range("no reason code '" + std::string(code) + "' in rules/reason.hpp");
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
