// Log-linear histogram: bucket arithmetic and percentile walk (see histogram.hpp).
#include "bench/load/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sandgate::load {

namespace {
constexpr std::uint64_t top_value(unsigned max_bits) { return (std::uint64_t{1} << max_bits) - 1; }
}  // namespace

histogram::histogram() : counts_(index_of(top_value(max_bits_)) + 1, 0) {}

// Bucket b holds values whose highest set bit is precision_bits + b; within it the value is
// shifted right by b, which leaves a sub-bucket in [half, 2*half). Index b*half + (v >> b) makes
// the buckets contiguous: b = 0 covers [0, 2*half) exactly, each later one adds `half` counters.
std::size_t histogram::index_of(std::uint64_t value) {
  value = std::min(value, top_value(max_bits_));
  const unsigned msb = value == 0 ? 0 : static_cast<unsigned>(std::bit_width(value)) - 1;
  const unsigned shift = msb > precision_bits_ ? msb - precision_bits_ : 0;
  return static_cast<std::size_t>(shift * half_count_ + (value >> shift));
}

std::uint64_t histogram::highest_equivalent(std::size_t index) {
  if (index < 2 * half_count_) {
    return index;
  }
  const std::uint64_t shift = index / half_count_ - 1;
  const std::uint64_t sub = index - shift * half_count_;
  return (sub << shift) + ((std::uint64_t{1} << shift) - 1);
}

void histogram::record(std::uint64_t value) {
  ++counts_[index_of(value)];
  ++count_;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  sum_ += static_cast<long double>(value);
}

void histogram::merge(const histogram& other) {
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    counts_[i] += other.counts_[i];
  }
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

double histogram::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ / static_cast<long double>(count_));
}

std::uint64_t histogram::value_at_percentile(double percentile) const {
  if (count_ == 0) {
    return 0;
  }
  const double clamped = std::clamp(percentile, 0.0, 100.0);
  // The rank of the wanted value, 1-based: the smallest rank covering `percentile` of the count.
  auto rank = static_cast<std::uint64_t>(std::ceil(clamped / 100.0 * static_cast<double>(count_)));
  rank = std::max<std::uint64_t>(rank, 1);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      return std::min(highest_equivalent(i), max_);
    }
  }
  return max_;
}

}  // namespace sandgate::load
