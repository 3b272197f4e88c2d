// The live feed of the decision log's records. See event_feed.hpp.
#include "proxy/log/event_feed.hpp"

#include <algorithm>
#include <utility>

namespace sandgate::log {

EventFeed::Subscription::~Subscription() { feed_.leave(this); }

EventFeed::Batch EventFeed::Subscription::take() {
  Batch batch;
  std::lock_guard lock(feed_.mutex_);
  for (std::string& line : queue_) {
    batch.lines += line;
  }
  queue_.clear();
  queued_bytes_ = 0;
  batch.dropped = std::exchange(dropped_, 0);
  return batch;
}

bool EventFeed::push(std::deque<std::string>& queue, std::size_t& bytes, std::string line,
                     std::size_t max_bytes) {
  if (bytes + line.size() > max_bytes) {
    return false;
  }
  bytes += line.size();
  queue.push_back(std::move(line));
  return true;
}

std::unique_ptr<EventFeed::Subscription> EventFeed::subscribe() {
  std::lock_guard lock(mutex_);
  if (subscriptions_.size() >= limits_.max_subscribers) {
    return nullptr;
  }
  std::unique_ptr<Subscription> subscription(new Subscription(*this));
  // The newest history lines that fit the queue, in order.
  std::size_t bytes = 0;
  auto first = history_.end();
  while (first != history_.begin() &&
         bytes + std::prev(first)->size() <= limits_.max_queued_bytes) {
    --first;
    bytes += first->size();
  }
  subscription->queue_.assign(first, history_.end());
  subscription->queued_bytes_ = bytes;
  subscriptions_.push_back(subscription.get());
  return subscription;
}

void EventFeed::publish(std::string_view text) {
  if (!enabled()) {
    return;
  }
  std::string line;
  line.reserve(text.size() + 1);
  line.append(text).push_back('\n');
  std::lock_guard lock(mutex_);
  for (Subscription* subscription : subscriptions_) {
    if (!push(subscription->queue_, subscription->queued_bytes_, line, limits_.max_queued_bytes)) {
      ++subscription->dropped_;
    }
  }
  // The history forgets its oldest lines first.
  history_bytes_ += line.size();
  history_.push_back(std::move(line));
  while (!history_.empty() &&
         (history_.size() > limits_.history_lines || history_bytes_ > limits_.max_history_bytes)) {
    history_bytes_ -= history_.front().size();
    history_.pop_front();
  }
}

std::size_t EventFeed::subscribers() const {
  std::lock_guard lock(mutex_);
  return subscriptions_.size();
}

void EventFeed::leave(Subscription* subscription) {
  std::lock_guard lock(mutex_);
  std::erase(subscriptions_, subscription);
}

}  // namespace sandgate::log
