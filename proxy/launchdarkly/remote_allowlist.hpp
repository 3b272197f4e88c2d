// The LaunchDarkly allowlist: the last check of a connection, which can only deny what the local
// rules allowed.
//
// Two modes (SANDGATE_LD_MODE):
//  - domain (goose's): the flag is a boolean evaluated per destination domain, the domain being
//    the context key. Answers are cached per domain (TTL, bounded, least recently used first);
//    concurrent lookups of one domain share one request; an expired answer keeps serving while
//    LaunchDarkly is unreachable.
//  - list: one context; the flag's value is an array of rules in the blocklist file syntax,
//    compiled into a rules::DomainSet and kept current by the streaming endpoint. No host name
//    leaves the machine; lookups cost a local match.
//
// When there is no usable answer (refused, DNS or TLS failure, timeout, HTTP error, a body that
// is not the expected JSON, the flag missing), GOOSE_SANDBOX_LD_FAILOVER decides. After a failure
// LaunchDarkly counts as down and is retried with backoff (1 s doubling to 30 s, jittered); while
// down, lookups take the failover answer at once instead of waiting.
//
// Threads: the client runs on a thread of its own (its io_context). Workers call check() from
// their coroutines: a cache hit, a list match or a known outage is answered on the worker's
// thread under one short mutex; a miss posts to the client's thread and resumes the worker's
// coroutine on the worker's own executor. A client that disconnects while its lookup is pending
// costs nothing: its coroutine resumes later and finds the socket closed.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "proxy/launchdarkly/flag_payload.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/host.hpp"
#include "rules/policy.hpp"
#include "rules/reason.hpp"

namespace sandgate::launchdarkly {

class HttpsClient;

// Where an answer came from, for the log, metrics and `sandgate check`.
enum class Source : std::uint8_t { network, cache, stale_cache, failover, list };
std::string_view to_string(Source);

struct Answer {
  bool allowed = true;
  // A row of the reason table (rules/reason.hpp): allowed, or, when not allowed, launchdarkly,
  // launchdarkly_unreachable or not_allowlisted (list mode). Replies and logs read that row.
  rules::Reason reason = rules::Reason::allowed;
  Source source = Source::network;
  std::string detail;  // a sentence: what LaunchDarkly said, or why it could not be asked
  std::optional<rules::RuleMatch> rule;  // list mode: the list entry that matched
};

// Counters for /metrics; read with relaxed loads.
struct Counters {
  std::atomic<std::uint64_t> lookups_network{0};
  std::atomic<std::uint64_t> lookups_cache{0};
  std::atomic<std::uint64_t> lookups_stale{0};
  std::atomic<std::uint64_t> lookups_failover{0};
  std::atomic<std::uint64_t> lookups_list{0};
  std::atomic<std::uint64_t> requests_ok{0};
  std::atomic<std::uint64_t> requests_failed{0};
  std::atomic<std::uint64_t> stream_connects{0};
  std::atomic<std::uint64_t> stream_events{0};
};

// One line saying how the allowlist is set up, for the start-up log and `sandgate check`.
std::string describe_configuration(const settings::Settings& settings);

class RemoteAllowlist {
 public:
  // Where the client reports what it does (state changes, lists applied, bad events): a level
  // ("info", "warning") and a sentence. The gate passes its decision log's note().
  using Note = std::function<void(std::string_view level, std::string_view text)>;

  RemoteAllowlist(const settings::Settings& settings, Note note);
  ~RemoteAllowlist();
  RemoteAllowlist(const RemoteAllowlist&) = delete;
  RemoteAllowlist& operator=(const RemoteAllowlist&) = delete;

  // Starts the client's thread (list mode: the first fetch and the stream).
  void start();
  // Stops the thread; lookups still pending get the failover answer (delivered to their
  // executors). Idempotent.
  void stop();

  // The answer for a connection the local rules allowed. Runs on the caller's executor.
  boost::asio::awaitable<Answer> check(const rules::Host& host, std::uint16_t port);

  // For `sandgate check`: the answer, waiting up to the timeout (list mode: for the first list).
  Answer check_blocking(const rules::Host& host, std::uint16_t port);

  const Counters& counters() const { return counters_; }
  bool reachable() const { return up_.load(std::memory_order_relaxed); }
  // List mode: entries in the list in force; -1 while there is none.
  long list_entries() const;
  // Prometheus text for the LaunchDarkly series (appended to /metrics).
  std::string render_prometheus() const;

  // The failover answer in force (exposed for tests and `check`).
  Answer failover_answer(std::string_view why) const;

 private:
  using Deliver = std::function<void(Answer)>;
  struct CacheEntry {
    bool allowed;
    std::chrono::steady_clock::time_point fetched;
    std::list<std::string>::iterator lru;
  };
  struct ListState {
    std::shared_ptr<const rules::DomainSet> rules;  // null: no list (deleted or never received)
    std::size_t entries = 0;
    std::uint64_t version = 0;
    bool have_version = false;
  };

  std::optional<Answer> answer_locally(const std::string& domain, const rules::Host& host,
                                       std::uint16_t port);
  boost::asio::awaitable<Answer> ask_client_thread(std::string domain);
  void lookup_on_client_thread(std::string domain, Deliver deliver);
  boost::asio::awaitable<void> evaluate(std::string domain);
  Expected<FlagState, std::string> interpret(
      const Expected<struct HttpReply, std::string>& reply) const;
  void mark_down(const std::string& why);
  void mark_up();
  std::chrono::milliseconds next_backoff();
  Answer cached_answer(bool allowed, Source source, const std::string& domain) const;
  // While LaunchDarkly cannot answer: the expired answer for `domain` if one is held, otherwise
  // the failover answer; counted. The caller holds mutex_.
  Answer outage_answer_locked(const std::string& domain, std::string_view why);

  // List mode.
  boost::asio::awaitable<void> run_list_mode();
  boost::asio::awaitable<bool> fetch_list();
  std::string list_outage_note() const;
  void apply_list(const FlagState& state, std::string_view how);
  void handle_event(const struct SseEvent& event);

  const settings::Settings& settings_;
  Note note_;
  std::string context_key_;   // list mode
  std::string os_user_;
  std::string flag_path_;     // "/sdk/evalx/{id}/context"

  // Declared before io_ so that it outlives it: coroutines left in io_ when it is destroyed
  // still hold TLS streams made from the client's context.
  std::unique_ptr<HttpsClient> http_;
  boost::asio::io_context io_{1};
  std::thread thread_;
  std::atomic<bool> stopped_{false};

  // Shared between workers and the client's thread, under mutex_.
  mutable std::mutex mutex_;
  std::unordered_map<std::string, CacheEntry> cache_;
  std::list<std::string> lru_;  // front: most recently used
  std::chrono::steady_clock::time_point retry_at_{};
  ListState list_;
  bool list_received_ = false;  // a first list arrived (until then, failover decides)
  std::atomic<bool> up_{true};

  // The client's thread only.
  std::unordered_map<std::string, std::vector<Deliver>> pending_;
  bool probing_ = false;
  std::chrono::milliseconds backoff_{1000};
  std::uint64_t jitter_state_;

  Counters counters_;
};

}  // namespace sandgate::launchdarkly
