// The bytes of LaunchDarkly replies the gate holds at once, gate-wide. Each reply is bounded by
// SANDGATE_LD_MAX_PAYLOAD, but up to SANDGATE_LD_MAX_LOOKUPS are read at once, so without a sum
// a hostile or broken endpoint (or a relay in front of it) sending large replies to many new
// domains grows the gate by their product (eight 30 MiB replies: a quarter of a GiB). The
// budget bounds the sum: a reply is charged before its body is read when it states its length
// (Content-Length), and as its bytes arrive when it does not (chunked, or up to the close), and
// the charge is given back once the reply has been parsed. A reply that does not fit is not
// read: the lookup counts as no answer (the failover mode applies), LaunchDarkly is not counted
// as down for it, and the refusal is counted (sandgate_launchdarkly_replies_over_budget_total).
//
// Parsing needs no budget of its own: replies are parsed one at a time, on the client's thread,
// each at most one reply's size.
//
// Threads: take(), give_back() and Charge belong to the LaunchDarkly client's thread; in_use(),
// peak() and refusals() may be read from any thread (relaxed atomics, for /metrics and tests).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sandgate::launchdarkly {

class ReplyBudget {
 public:
  // The budget for a given per-reply limit: twice it (64 MiB with the default 32 MiB), so that
  // one reply of the largest size always fits, and two at once do.
  static std::size_t for_payload_limit(std::size_t max_payload) { return 2 * max_payload; }

  explicit ReplyBudget(std::size_t total) : total_(total) {}
  ReplyBudget(const ReplyBudget&) = delete;
  ReplyBudget& operator=(const ReplyBudget&) = delete;

  // Takes `bytes` more; false, with nothing taken and the refusal counted, when they would take
  // the sum past the budget.
  bool take(std::size_t bytes);
  void give_back(std::size_t bytes);

  std::size_t total() const { return total_; }
  std::size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  std::size_t peak() const { return peak_.load(std::memory_order_relaxed); }
  std::uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

  // What one reply holds of the budget, given back when it is destroyed (after parsing).
  // Move-only.
  class Charge {
   public:
    Charge() = default;
    explicit Charge(ReplyBudget& budget) : budget_(&budget) {}
    Charge(Charge&& other) noexcept;
    Charge& operator=(Charge&& other) noexcept;
    ~Charge() { release(); }

    // Raises this reply's charge to `bytes` (never lowers it); false when the budget refuses,
    // the charge then unchanged.
    bool grow_to(std::size_t bytes);
    std::size_t bytes() const { return bytes_; }
    void release();

   private:
    ReplyBudget* budget_ = nullptr;
    std::size_t bytes_ = 0;
  };

 private:
  const std::size_t total_;
  std::atomic<std::size_t> in_use_{0};
  std::atomic<std::size_t> peak_{0};
  std::atomic<std::uint64_t> refusals_{0};
};

}  // namespace sandgate::launchdarkly
