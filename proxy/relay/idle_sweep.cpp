// One timer for a worker's idle timeouts. See idle_sweep.hpp.
#include "proxy/relay/idle_sweep.hpp"

#include <algorithm>

#include "proxy/relay/tunnel_relay.hpp"

namespace sandgate::relay {
namespace {

constexpr std::chrono::milliseconds kShortestPeriod{50};
constexpr std::chrono::milliseconds kLongestPeriod{1000};

}  // namespace

IdleSweep::~IdleSweep() {
  // Relays still watched (a worker torn down without a drain) must not point here any more.
  for (TunnelRelay* relay = head_; relay != nullptr;) {
    TunnelRelay* next = relay->idle_next_;
    relay->idle_prev_ = relay->idle_next_ = nullptr;
    relay->idle_watched_ = false;
    relay = next;
  }
}

void IdleSweep::watch(TunnelRelay& relay, const boost::asio::any_io_executor& executor) {
  if (relay.idle_watched_) {
    return;
  }
  relay.idle_watched_ = true;
  relay.idle_prev_ = nullptr;
  relay.idle_next_ = head_;
  if (head_ != nullptr) {
    head_->idle_prev_ = &relay;
  }
  head_ = &relay;
  ++count_;
  const auto eighth =
      std::chrono::duration_cast<std::chrono::milliseconds>(relay.idle_timeout_) / 8;
  period_ = std::min(period_, std::clamp(eighth, kShortestPeriod, kLongestPeriod));
  if (!timer_) {
    timer_.emplace(executor);
  }
  if (!armed_) {
    arm();
  }
}

void IdleSweep::forget(TunnelRelay& relay) {
  if (!relay.idle_watched_) {
    return;
  }
  if (relay.idle_prev_ != nullptr) {
    relay.idle_prev_->idle_next_ = relay.idle_next_;
  } else {
    head_ = relay.idle_next_;
  }
  if (relay.idle_next_ != nullptr) {
    relay.idle_next_->idle_prev_ = relay.idle_prev_;
  }
  relay.idle_prev_ = relay.idle_next_ = nullptr;
  relay.idle_watched_ = false;
  --count_;
  // The timer is left to expire once more and find nothing: cancelling it here would cost a
  // system call for every tunnel's end.
}

void IdleSweep::arm() {
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
  for (TunnelRelay* relay = head_; relay != nullptr;) {
    // Ending a relay may unlink it (never another one): take the next first.
    TunnelRelay* next = relay->idle_next_;
    if (now >= relay->last_activity_ + relay->idle_timeout_) {
      relay->expire_idle();
    }
    relay = next;
  }
  if (count_ > 0) {
    arm();
  }
}

}  // namespace sandgate::relay
