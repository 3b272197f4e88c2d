// A small log-linear latency histogram in the manner of HdrHistogram: exact percentiles to within
// 1/128 of the value, over a range from 1 ns to hours, in a fixed 38 KB of counters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sandgate::load {

// Values below 2^(precision_bits + 1) are counted exactly; each power-of-two range above that is
// split into 2^precision_bits equal sub-buckets, so a value is known to within 1/128 (0.8%) of
// itself. Recording is one bit_width and one increment, cheap enough for every operation.
// Not thread-safe: each worker thread records into its own, and they are merged at the end.
class histogram {
 public:
  histogram();

  // Records one value; values past the top of the range (about 4.8 hours in ns) are clamped to it.
  void record(std::uint64_t value);
  void merge(const histogram& other);

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ == 0 ? 0 : min_; }
  std::uint64_t max() const { return max_; }
  double mean() const;

  // The value below or at which `percentile` percent (0..100) of the recorded values lie, reported
  // as the highest value of its bucket (so it never understates, HdrHistogram's convention) and
  // capped at the exact maximum. 0 when empty.
  std::uint64_t value_at_percentile(double percentile) const;

 private:
  static constexpr unsigned precision_bits_ = 7;
  static constexpr std::uint64_t half_count_ = std::uint64_t{1} << precision_bits_;
  static constexpr unsigned max_bits_ = 44;

  static std::size_t index_of(std::uint64_t value);
  static std::uint64_t highest_equivalent(std::size_t index);

  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace sandgate::load
