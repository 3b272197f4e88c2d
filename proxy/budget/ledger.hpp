// What has been spent of each egress budget (rules/budgets.hpp), gate-wide: one Account per
// limit, kept under the limit's key (entry, kind, window), so that a reload keeps what was spent
// (and a raised amount applies to it at once). Every connection counts into the same accounts,
// whichever worker serves it.
//
// A rolling window (minute, hour, day) is kept in 60 slots of a sixtieth of it: what was spent
// leaves the window a slot at a time. `run` never forgets.
//
// Threads: every member function is thread-safe (one mutex per account, held for a few
// instructions; the ledger's own only to find or make an account).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rules/budgets.hpp"

namespace sandgate::budget {

using Clock = std::chrono::steady_clock;

class Account {
 public:
  explicit Account(rules::BudgetWindow window);
  Account(const Account&) = delete;
  Account& operator=(const Account&) = delete;

  // The amount in force (a reload may change it).
  void set_amount(std::uint64_t amount);
  // Takes up to `wanted` of what is left in the window now; returns what it took (0: spent).
  std::uint64_t take(std::uint64_t wanted, Clock::time_point now = Clock::now());
  // Takes `wanted` whatever is left (bytes already sent, report-only mode); true when that went
  // over the amount (or it was spent already).
  bool take_anyway(std::uint64_t wanted, Clock::time_point now = Clock::now());
  // Gives back what was taken and not used.
  void give_back(std::uint64_t amount, Clock::time_point now = Clock::now());
  // A person allowed `more` beyond the amount (--unknown=ask): kept for the gate's life, on top
  // of whatever amount a reload sets.
  void grant(std::uint64_t more);

  struct State {
    std::uint64_t amount = 0;  // in force: the limit's amount and what people granted
    std::uint64_t spent = 0;   // in the window now
    std::uint64_t total = 0;   // everything counted since the gate started
    std::uint64_t stops = 0;   // times something was refused or cut by it
  };
  State state(Clock::time_point now = Clock::now()) const;
  // Counts a refusal or cut it caused (for /metrics).
  void count_stop();

 private:
  void advance(Clock::time_point now) const;  // mutex held: forgets the slots that left
  void add_locked(std::uint64_t amount);      // mutex held: counts it in the window now

  mutable std::mutex mutex_;
  const rules::BudgetWindow window_;
  const std::int64_t slot_ms_;  // 0 for run
  std::uint64_t amount_ = 0;
  std::uint64_t granted_ = 0;
  std::uint64_t limit() const { return amount_ + granted_; }  // mutex held
  // What the window holds now: everything for `run`, the sum of the slots for the others (kept
  // beside them, so that a read of the relay costs no sum over 60 slots).
  mutable std::uint64_t window_spent_ = 0;
  mutable std::array<std::uint64_t, 60> slots_{};
  mutable std::int64_t head_ = 0;  // the slot `now` falls in, counted from the clock's epoch
  std::uint64_t total_ = 0;
  std::uint64_t stops_ = 0;
};

class Ledger {
 public:
  // The account of `limit`, made on first use, with the limit's amount in force.
  std::shared_ptr<Account> account(const rules::BudgetLimit& limit);
  // The account kept under `key`, if any (for /metrics and `run`'s summary).
  std::shared_ptr<Account> find(const std::string& key) const;

  // /metrics: per limit of `rules`, the amount, what was spent in its window and in all, and
  // how often it refused or cut something.
  std::string render_prometheus(const rules::BudgetRules& rules) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Account>, std::less<>> accounts_;
};

}  // namespace sandgate::budget
