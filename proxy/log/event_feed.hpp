// The decision log's records as a live feed of JSON lines, for `sandgate watch` (GET /events on
// the admin endpoint and on `run`'s private socket). Off until enable(): a gate that nobody can
// watch formats nothing for it.
//
// Bounded everywhere: at most max_subscribers readers at once (one more is refused: subscribe()
// gives null), each with a queue of at most max_queued_bytes; a line that does not fit a
// reader's queue is dropped for that reader only and counted, so a slow or stuck reader costs
// the gate a fixed amount of memory and never slows the connection path (publish() takes one
// short lock and copies the line into each queue). The last history_lines lines (at most
// max_history_bytes) are kept, so a reader that attaches sees what happened just before.
//
// Thread-safe: publish() from any thread (the gate's sessions), subscribe() and a
// Subscription's take() from any other (the admin thread). A Subscription ends its place in
// the feed when destroyed; the feed must outlive its subscriptions (the gate's log outlives its
// admin endpoints).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::log {

struct EventFeedLimits {
  std::size_t max_subscribers = 8;
  std::size_t max_queued_bytes = 256 * 1024;  // per subscriber
  std::size_t history_lines = 200;
  std::size_t max_history_bytes = 128 * 1024;
};

class EventFeed {
 public:
  explicit EventFeed(EventFeedLimits limits = {}) : limits_(limits) {}
  EventFeed(const EventFeed&) = delete;
  EventFeed& operator=(const EventFeed&) = delete;

  // What a reader takes at once: the lines in order (each ends with '\n') and how many lines
  // were dropped for it since its last take.
  struct Batch {
    std::string lines;
    std::uint64_t dropped = 0;
  };

  class Subscription {
   public:
    ~Subscription();
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    Batch take();

   private:
    friend class EventFeed;
    explicit Subscription(EventFeed& feed) : feed_(feed) {}
    EventFeed& feed_;
    // Guarded by feed_.mutex_.
    std::deque<std::string> queue_;
    std::size_t queued_bytes_ = 0;
    std::uint64_t dropped_ = 0;
  };

  // From now on publish() keeps lines (a watchable endpoint exists). Idempotent.
  void enable() { enabled_.store(true, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // A new reader, its queue filled with the history (the newest lines that fit); null when
  // max_subscribers are reading already.
  std::unique_ptr<Subscription> subscribe();

  // One JSON line, without its newline. Ignored until enable().
  void publish(std::string_view line);

  std::size_t subscribers() const;

 private:
  static bool push(std::deque<std::string>& queue, std::size_t& bytes, std::string line,
                   std::size_t max_bytes);
  void leave(Subscription* subscription);

  const EventFeedLimits limits_;
  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;  // guards what follows and every subscription's queue
  std::vector<Subscription*> subscriptions_;
  std::deque<std::string> history_;
  std::size_t history_bytes_ = 0;
};

}  // namespace sandgate::log
