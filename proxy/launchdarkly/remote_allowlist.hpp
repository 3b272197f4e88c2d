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
// LaunchDarkly counts as down and is retried with backoff (1 s doubling to 30 s, jittered, or
// longer when a Retry-After asks); while down, lookups take the failover answer at once instead
// of waiting. A final HTTP error (a 4xx other than 400, 408 and 429, as LaunchDarkly's SDKs
// decide) stops the client for good: the failover mode decides until the gate restarts.
//
// This class fronts the two modes (domain_mode.hpp, list_mode.hpp) over the client they share
// (client.hpp: the thread, connections, backoff and failover state, counters).
//
// Threads: the client runs on a thread of its own (its io_context). Workers call check() from
// their coroutines: a cache hit, a list match or a known outage is answered on the worker's
// thread under one short mutex; a miss posts to the client's thread and resumes the worker's
// coroutine on the worker's own executor. A client that disconnects while its lookup is pending
// costs nothing: its coroutine resumes later and finds the socket closed.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/launchdarkly/answer.hpp"
#include "proxy/launchdarkly/flag_payload.hpp"
#include "proxy/launchdarkly/reply_budget.hpp"
#include "proxy/launchdarkly/retry_policy.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/host.hpp"
#include "rules/policy.hpp"
#include "rules/reason.hpp"

namespace sandgate::launchdarkly {

class Client;
class DomainMode;
class ListMode;

// One line saying how the allowlist is set up, for the start-up log and `sandgate check`.
std::string describe_configuration(const settings::Settings& settings);

class RemoteAllowlist {
 public:
  // Where the client reports what it does (state changes, lists applied, bad events): a level
  // ("error", "warning", "info") and a sentence. The gate passes its decision log's note().
  using Note = std::function<void(std::string_view level, std::string_view text)>;

  // `timing`: the SDKs' backoff and stream timing by default; tests shrink it.
  RemoteAllowlist(const settings::Settings& settings, Note note, const Timing& timing = {});
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

  const Counters& counters() const;
  // The gate-wide budget of buffered replies: its total, what it holds, its refusals.
  const ReplyBudget& reply_budget() const;
  bool reachable() const;
  // List mode: entries in the list in force; -1 while there is none.
  long list_entries() const;
  // Prometheus text for the LaunchDarkly series (appended to /metrics).
  std::string render_prometheus() const;

  // The failover answer in force (exposed for tests and `check`).
  Answer failover_answer(std::string_view why) const;

 private:
  boost::asio::awaitable<Answer> ask_client_thread(std::string domain);

  const settings::Settings& settings_;
  // The client first: the modes hold a reference to it and go before it.
  std::unique_ptr<Client> client_;
  std::unique_ptr<DomainMode> domain_;  // per-domain mode, or
  std::unique_ptr<ListMode> list_;      // list mode
};

}  // namespace sandgate::launchdarkly
