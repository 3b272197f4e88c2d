// What the gate counts, per worker thread, without a lock or an atomic read-modify-write on the
// connection path: each worker alone writes its counters (relaxed store of load+1, a plain move
// on x86); the admin endpoint reads and sums them on scrape.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rules/reason.hpp"

namespace sandgate::metrics {

// A counter written by one thread and read by others.
class Counter {
 public:
  void add(std::uint64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// A level written by one thread and read by others.
class Gauge {
 public:
  void set(std::uint64_t value) { value_.store(value, std::memory_order_relaxed); }
  std::uint64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// Latency histogram with fixed buckets (seconds), Prometheus-style (cumulative on render).
class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  void observe(std::chrono::steady_clock::duration elapsed);
  std::array<std::uint64_t, kBounds.size() + 1> buckets() const;  // last: +Inf
  double sum_seconds() const;
  std::uint64_t count() const;

 private:
  std::array<Counter, kBounds.size() + 1> buckets_;
  Counter sum_micros_;
  Counter count_;
};

// Decisions are counted per (reason, verdict) in a fixed table indexed by the reason table
// (rules/reason.hpp): no look-up per decision, and every reason has its own counter.
inline constexpr std::size_t kVerdictCount = 3;  // rules::Verdict: allow, deny, error

// The row of `code` in WorkerMetrics::decisions, for tests that read a counter by its code.
// Throws std::out_of_range for a code that is not in the table.
std::size_t reason_index(std::string_view code);

// A recent denial, for /denials.
struct Denial {
  std::int64_t unix_millis = 0;
  std::uint64_t connection_id = 0;
  std::string client;
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  std::string verdict;  // "deny", "would-deny" (report-only mode), "error"
  std::string reason;
  std::string rule;
  std::string detail;
};

// One worker's counters.
struct WorkerMetrics {
  // Indexed [rules::reason_index(reason)][verdict]: verdict 0 allow, 1 deny, 2 error.
  std::array<std::array<Counter, kVerdictCount>, rules::kReasonCount> decisions;
  Counter bytes_up;
  Counter bytes_down;
  Counter tunnels_open_total;    // tunnels established
  Counter tunnels_closed_total;  // tunnels ended
  Counter http_requests_total;   // plain-HTTP requests forwarded
  Counter dns_failures_total;
  Counter dns_cache_hits;          // names answered from the DNS cache
  Counter dns_cache_misses;        // names that took a query (or joined one in flight)
  Counter dns_hosts_file_answers;  // names answered from the hosts file
  Gauge dns_cache_entries;         // names the worker's DNS cache holds
  Histogram upstream_connect;
  Histogram dns_lookup;
  // Dials of the parent proxy, by outcome: its 2xx to the gate's CONNECT (or the plain request
  // sent to it), a non-2xx answer, no usable answer (ParentDial).
  enum class ParentDial : std::uint8_t { connected, refused, unreachable };
  std::array<Counter, 3> parent_dials;
  void count_parent_dial(ParentDial outcome) {
    parent_dials[static_cast<std::size_t>(outcome)].add();
  }

  // Denials report-only mode let through (the log's `would-deny`), by reason: /metrics shows
  // them as verdict="deny" with enforced="false". Not counted in `decisions`.
  std::array<Counter, rules::kReasonCount> would_deny;

  // One decision (or a denial that came after one: a revocation, a refused tunnel); `enforced`
  // false for a denial report-only mode let through. Worker thread.
  void count_decision(rules::Verdict verdict, rules::Reason reason, bool enforced = true) {
    if (!enforced && verdict == rules::Verdict::deny) {
      would_deny[rules::reason_index(reason)].add();
      return;
    }
    decisions[rules::reason_index(reason)][static_cast<std::size_t>(verdict)].add();
  }

  // The most recent denials (bounded). The mutex is taken only when a denial is recorded and on
  // scrape, never on an allowed connection.
  void record_denial(Denial denial);
  std::vector<Denial> recent_denials() const;

 private:
  mutable std::mutex denials_mutex_;
  std::deque<Denial> denials_;
};

inline constexpr std::size_t kDenialsKept = 200;

}  // namespace sandgate::metrics
