// The idle timeouts of a worker's tunnels, kept by one timer for all of them instead of one timer
// (and one pending wait) per tunnel: at 1,000 idle tunnels that is about 250 bytes a tunnel
// (bench/results/2026-11-27/README.md, "where an idle tunnel's memory goes").
//
// A watched relay is looked at every `period` and ended (outcome idle_timeout) once no byte has
// moved for its idle timeout, so a tunnel ends between its timeout and its timeout plus one
// period. The period is an eighth of the shortest idle timeout watched, between 50 ms and 1 s,
// and the timer runs only while a relay is watched. What is watched is an IdleSweep::Entry (a
// base of TunnelRelay): the watched form an intrusive list, so watching costs no allocation.
//
// Worker thread only; nothing here is thread-safe.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <optional>

namespace sandgate::relay {

class IdleSweep {
 public:
  // What the sweep watches: an idle clock, and what ends its owner when it runs out.
  class Entry {
   public:
    std::chrono::seconds idle_timeout{0};                 // none when zero
    std::chrono::steady_clock::time_point last_activity;  // the last byte moved

   protected:
    Entry() = default;
    ~Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    // The idle timeout ran out; the sweep has already let go of this entry.
    virtual void expire_idle() = 0;

   private:
    friend IdleSweep;
    Entry* prev_ = nullptr;
    Entry* next_ = nullptr;
    bool watched_ = false;
  };

  IdleSweep() = default;
  IdleSweep(const IdleSweep&) = delete;
  IdleSweep& operator=(const IdleSweep&) = delete;
  ~IdleSweep();

  // Starts (or stops) looking at `entry`'s idle time. The timer is made on the executor of the
  // first entry watched: every relay of a worker runs on the worker's one loop. Both are no-ops
  // when the entry is already watched (not watched).
  void watch(Entry& entry, const boost::asio::any_io_executor& executor);
  void forget(Entry& entry);

  // The worker is shutting down: the timer is cancelled and never armed again, so that it does
  // not keep the worker's loop alive (entries may still be forgotten).
  void stop();

  std::size_t watched() const { return count_; }
  std::chrono::milliseconds period() const { return period_; }

 private:
  void arm();
  void sweep();

  std::optional<boost::asio::steady_timer> timer_;
  Entry* head_ = nullptr;
  std::size_t count_ = 0;
  std::chrono::milliseconds period_{1000};
  bool armed_ = false;
  bool stopped_ = false;
};

}  // namespace sandgate::relay
