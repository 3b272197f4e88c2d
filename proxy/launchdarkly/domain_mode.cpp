#include "proxy/launchdarkly/domain_mode.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace sandgate::launchdarkly {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

}  // namespace

DomainMode::DomainMode(Client& client) : client_(client), settings_(client.settings()) {}

Answer DomainMode::cached_answer(bool allowed, Source source, const std::string& domain) const {
  Answer answer;
  answer.allowed = allowed;
  answer.source = source;
  answer.reason = allowed ? rules::Reason::allowed : rules::Reason::launchdarkly;
  answer.detail = "LaunchDarkly's flag '" + settings_.ld_flag + "' is " +
                  (allowed ? "true" : "not true") + " for " + domain;
  if (source == Source::stale_cache) {
    answer.detail += " (an expired answer, kept while LaunchDarkly is unreachable)";
  }
  return answer;
}

std::optional<Answer> DomainMode::answer_locally(const std::string& domain) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  auto found = cache_.find(domain);
  if (found != cache_.end() && now - found->second.fetched < settings_.ld_cache_ttl) {
    lru_.splice(lru_.begin(), lru_, found->second.lru);
    client_.counters().lookups_cache.fetch_add(1, std::memory_order_relaxed);
    return cached_answer(found->second.allowed, Source::cache, domain);
  }
  if (client_.halted()) {
    return outage_answer_locked(domain, client_.halt_reason());
  }
  if (const auto retry_at = client_.retry_at(); !client_.reachable() && now < retry_at) {
    // A known outage: answer now instead of waiting for a request that would fail.
    return outage_answer_locked(
        domain,
        "LaunchDarkly is unreachable; retrying in " +
            millis_text(std::chrono::duration_cast<std::chrono::milliseconds>(retry_at - now)));
  }
  return std::nullopt;
}

Answer DomainMode::outage_answer_locked(const std::string& domain, std::string_view why) {
  if (auto found = cache_.find(domain); found != cache_.end()) {
    client_.counters().lookups_stale.fetch_add(1, std::memory_order_relaxed);
    return cached_answer(found->second.allowed, Source::stale_cache, domain);
  }
  client_.counters().lookups_failover.fetch_add(1, std::memory_order_relaxed);
  return client_.failover_answer(why);
}

void DomainMode::lookup(std::string domain, Deliver deliver) {
  if (client_.stopping()) {
    deliver(client_.failover_answer("the gate is stopping"));
    return;
  }
  // The situation may have changed since the worker looked (another lookup filled the cache,
  // or LaunchDarkly went down).
  if (auto local = answer_locally(domain)) {
    deliver(std::move(*local));
    return;
  }
  if (auto waiting = pending_.find(domain); waiting != pending_.end()) {
    waiting->second.push_back(std::move(deliver));  // one request serves every waiter
    return;
  }
  bool probe = false;
  if (!client_.reachable()) {
    // Retry time has come. One probe at a time; others take the outage answer meanwhile.
    if (probing_) {
      std::lock_guard lock(mutex_);
      deliver(outage_answer_locked(domain, "LaunchDarkly is unreachable; a retry is under way"));
      return;
    }
    probing_ = true;
    probe = true;
  }
  pending_[domain].push_back(std::move(deliver));
  queue_.push_back(Queued{std::move(domain), Clock::now(), probe});
  start_next();
}

void DomainMode::start_next() {
  while (in_flight_ < settings_.ld_max_lookups && !queue_.empty()) {
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    if (pending_.find(next.domain) == pending_.end()) {
      probing_ = probing_ && !next.probe;
      continue;  // already answered (an outage answered everyone)
    }
    if (Clock::now() - next.since >= settings_.ld_timeout) {
      // Waited its whole timeout for a slot: LaunchDarkly is too slow for this many new domains
      // at once. Answered as a slow reply would be, without counting LaunchDarkly as down.
      probing_ = probing_ && !next.probe;
      auto waiters = std::move(pending_[next.domain]);
      pending_.erase(next.domain);
      std::lock_guard lock(mutex_);
      for (auto& deliver : waiters) {
        deliver(outage_answer_locked(next.domain, "no free LaunchDarkly request slot within " +
                                                      millis_text(settings_.ld_timeout) +
                                                      " (SANDGATE_LD_MAX_LOOKUPS)"));
      }
      continue;
    }
    ++in_flight_;
    asio::co_spawn(client_.io(), evaluate(std::move(next.domain), next.probe), asio::detached);
  }
}

void DomainMode::store(const std::string& domain, bool allowed) {
  std::lock_guard lock(mutex_);
  auto found = cache_.find(domain);
  if (found != cache_.end()) {
    found->second.allowed = allowed;
    found->second.fetched = Clock::now();
    lru_.splice(lru_.begin(), lru_, found->second.lru);
    return;
  }
  lru_.push_front(domain);
  cache_.emplace(domain, CacheEntry{allowed, Clock::now(), lru_.begin()});
  while (cache_.size() > settings_.ld_cache_size) {
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
}

void DomainMode::answer_everyone(std::string_view why) {
  auto all = std::move(pending_);
  pending_.clear();
  queue_.clear();
  std::lock_guard lock(mutex_);
  for (auto& [name, waiters] : all) {
    for (auto& deliver : waiters) {
      deliver(outage_answer_locked(name, why));
    }
  }
}

asio::awaitable<void> DomainMode::evaluate(std::string domain, bool probe) {
  auto state = co_await client_.evaluate(context_json(domain, client_.os_user()));
  --in_flight_;
  if (probe) {
    probing_ = false;
  }

  std::vector<Deliver> waiters;
  if (auto found = pending_.find(domain); found != pending_.end()) {
    waiters = std::move(found->second);
    pending_.erase(found);
  }
  if (state && *state) {
    over_budget_noted_ = false;
    const bool allowed = allows(**state);
    store(domain, allowed);
    client_.mark_up();
    client_.counters().lookups_network.fetch_add(waiters.size(), std::memory_order_relaxed);
    for (auto& deliver : waiters) {
      deliver(cached_answer(allowed, Source::network, domain));
    }
    start_next();
    co_return;
  }

  if (!state && state.error().over_budget) {
    // The gate's own limit, not LaunchDarkly's failure: this domain takes the outage answer
    // (a cached answer, else the failover mode), LaunchDarkly stays up, and the other lookups
    // go on. Logged once until a reply fits again; each refusal is counted.
    if (!over_budget_noted_) {
      over_budget_noted_ = true;
      client_.note("warning", "LaunchDarkly reply refused: " + state.error().why + "; failover " +
                                  failover_name(settings_.ld_failover) +
                                  " applies to the lookup (further refusals are counted in "
                                  "sandgate_launchdarkly_replies_over_budget_total)");
    }
    {
      std::lock_guard lock(mutex_);
      for (auto& deliver : waiters) {
        deliver(outage_answer_locked(domain, state.error().why));
      }
    }
    start_next();
    co_return;
  }
  Failure failure;
  if (!state) {
    failure = state.error();
  } else {
    failure.why = "the flag '" + settings_.ld_flag +
                  "' is not in LaunchDarkly's reply (does it exist, and is it available to "
                  "client-side IDs?)";
  }
  const std::string consequence = "; failover " + failover_name(settings_.ld_failover) + " applies";
  if (failure.final()) {
    client_.halt(failure, consequence);
  } else if (probe || client_.reachable()) {
    // (A request that was already out when another one found LaunchDarkly down does not
    // advance the backoff a second time.)
    client_.mark_down(failure, consequence);
  }
  // Everyone waiting, for this domain or any other, gets the outage answer now rather than at
  // the end of their own request.
  pending_[domain] = std::move(waiters);
  answer_everyone(failure.why);
}

void DomainMode::fail_pending(std::string_view why) {
  auto all = std::move(pending_);
  pending_.clear();
  queue_.clear();
  for (auto& [name, waiters] : all) {
    for (auto& deliver : waiters) {
      deliver(client_.failover_answer(why));
    }
  }
}

}  // namespace sandgate::launchdarkly
