// The gate-wide budget of buffered LaunchDarkly replies. See reply_budget.hpp.
#include "proxy/launchdarkly/reply_budget.hpp"

#include <utility>

namespace sandgate::launchdarkly {

bool ReplyBudget::take(std::size_t bytes) {
  // One thread writes (the client's); the loads and stores need no read-modify-write.
  const std::size_t used = in_use_.load(std::memory_order_relaxed);
  if (bytes > total_ - used) {
    refusals_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  in_use_.store(used + bytes, std::memory_order_relaxed);
  if (used + bytes > peak_.load(std::memory_order_relaxed)) {
    peak_.store(used + bytes, std::memory_order_relaxed);
  }
  return true;
}

void ReplyBudget::give_back(std::size_t bytes) {
  const std::size_t used = in_use_.load(std::memory_order_relaxed);
  in_use_.store(bytes < used ? used - bytes : 0, std::memory_order_relaxed);
}

ReplyBudget::Charge::Charge(Charge&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

ReplyBudget::Charge& ReplyBudget::Charge::operator=(Charge&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool ReplyBudget::Charge::grow_to(std::size_t bytes) {
  if (budget_ == nullptr || bytes <= bytes_) {
    return true;
  }
  if (!budget_->take(bytes - bytes_)) {
    return false;
  }
  bytes_ = bytes;
  return true;
}

void ReplyBudget::Charge::release() {
  if (budget_ != nullptr && bytes_ > 0) {
    budget_->give_back(bytes_);
  }
  bytes_ = 0;
}

}  // namespace sandgate::launchdarkly
