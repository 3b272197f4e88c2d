// Per-domain mode (goose's): the flag is a boolean evaluated for each destination domain, the
// domain being the context key. Only `true` allows.
//
// Answers are cached per domain (TTL, bounded, least recently used first); lookups of one
// domain that overlap share one request; an expired answer keeps serving while LaunchDarkly is
// unreachable. At most `ld_max_lookups` requests are out at once (a burst of new domains waits
// its turn in order instead of opening a TLS connection each), over kept-alive connections.
//
// Threads: answer_locally() runs on a worker's thread under one short mutex; lookup() and
// everything after it run on the client's thread (Client::io()).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proxy/launchdarkly/client.hpp"

namespace sandgate::launchdarkly {

class DomainMode {
 public:
  using Deliver = std::function<void(Answer)>;

  explicit DomainMode(Client& client);

  // A worker's thread: the answer when it needs no request (a fresh cached answer, or a known
  // outage); nothing when LaunchDarkly must be asked.
  std::optional<Answer> answer_locally(const std::string& domain);

  // The client's thread: answers `domain` through `deliver`, once, on the client's thread
  // (merged with a request already out for it, queued behind the cap, or at once).
  void lookup(std::string domain, Deliver deliver);

  // After the client's thread stopped: every waiter gets the failover answer.
  void fail_pending(std::string_view why);

 private:
  struct CacheEntry {
    bool allowed;
    std::chrono::steady_clock::time_point fetched;
    std::list<std::string>::iterator lru;
  };
  struct Queued {
    std::string domain;
    std::chrono::steady_clock::time_point since;
    bool probe;  // the request that checks whether LaunchDarkly is back
  };

  boost::asio::awaitable<void> evaluate(std::string domain, bool probe);
  void start_next();
  void store(const std::string& domain, bool allowed);
  Answer cached_answer(bool allowed, Source source, const std::string& domain) const;
  // While LaunchDarkly cannot answer: the expired answer for `domain` if one is held, otherwise
  // the failover answer; counted. The caller holds mutex_.
  Answer outage_answer_locked(const std::string& domain, std::string_view why);
  void answer_everyone(std::string_view why);

  Client& client_;
  const settings::Settings& settings_;

  // Shared between workers and the client's thread, under mutex_.
  std::mutex mutex_;
  std::unordered_map<std::string, CacheEntry> cache_;
  std::list<std::string> lru_;  // front: most recently used

  // The client's thread only.
  std::unordered_map<std::string, std::vector<Deliver>> pending_;  // asked or queued
  std::deque<Queued> queue_;  // domains waiting for a free request slot, oldest first
  std::size_t in_flight_ = 0;
  bool probing_ = false;            // while down: the one request that checks whether it is back
  bool over_budget_noted_ = false;  // a refusal by the reply budget was logged; reset by a reply
};

}  // namespace sandgate::launchdarkly
