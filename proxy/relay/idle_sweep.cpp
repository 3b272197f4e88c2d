// One timer for a worker's idle timeouts. See idle_sweep.hpp.
#include "proxy/relay/idle_sweep.hpp"

#include <algorithm>

namespace sandgate::relay {
namespace {

constexpr std::chrono::milliseconds kShortestPeriod{50};
constexpr std::chrono::milliseconds kLongestPeriod{1000};

}  // namespace

IdleSweep::~IdleSweep() {
  // Entries still watched (a worker torn down without a drain) must not point here any more.
  for (Entry* entry = head_; entry != nullptr;) {
    Entry* next = entry->next_;
    entry->prev_ = entry->next_ = nullptr;
    entry->watched_ = false;
    entry = next;
  }
}

void IdleSweep::watch(Entry& entry, const boost::asio::any_io_executor& executor) {
  if (entry.watched_) {
    return;
  }
  entry.watched_ = true;
  entry.prev_ = nullptr;
  entry.next_ = head_;
  if (head_ != nullptr) {
    head_->prev_ = &entry;
  }
  head_ = &entry;
  ++count_;
  const auto eighth = std::chrono::duration_cast<std::chrono::milliseconds>(entry.idle_timeout) / 8;
  period_ = std::min(period_, std::clamp(eighth, kShortestPeriod, kLongestPeriod));
  if (!timer_) {
    timer_.emplace(executor);
  }
  if (!armed_) {
    arm();
  }
}

void IdleSweep::forget(Entry& entry) {
  if (!entry.watched_) {
    return;
  }
  if (entry.prev_ != nullptr) {
    entry.prev_->next_ = entry.next_;
  } else {
    head_ = entry.next_;
  }
  if (entry.next_ != nullptr) {
    entry.next_->prev_ = entry.prev_;
  }
  entry.prev_ = entry.next_ = nullptr;
  entry.watched_ = false;
  --count_;
  // The timer is left to expire once more and find nothing: cancelling it here would cost a
  // system call for every tunnel's end (at shutdown, stop() cancels it).
}

void IdleSweep::stop() {
  stopped_ = true;
  if (timer_ && armed_) {
    timer_->cancel();
  }
}

void IdleSweep::arm() {
  if (stopped_) {
    return;
  }
  armed_ = true;
  timer_->expires_after(period_);
  timer_->async_wait([this](boost::system::error_code error) {
    armed_ = false;
    if (error) {
      return;  // the worker is going away
    }
    sweep();
  });
}

void IdleSweep::sweep() {
  const auto now = std::chrono::steady_clock::now();
  for (Entry* entry = head_; entry != nullptr;) {
    // Ending an entry may unlink it (never another one): take the next first.
    Entry* next = entry->next_;
    if (now >= entry->last_activity + entry->idle_timeout) {
      forget(*entry);
      entry->expire_idle();
    }
    entry = next;
  }
  if (count_ > 0) {
    arm();
  }
}

}  // namespace sandgate::relay
