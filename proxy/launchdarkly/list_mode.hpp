// List mode: one context (SANDGATE_LD_CONTEXT_KEY); the flag's value is an array of rules in
// the blocklist file syntax, compiled into a rules::DomainSet and used as an allowlist. The
// list is fetched at start and kept current by LaunchDarkly's stream (`put`, `patch` and
// `delete` in version order, `ping` re-fetches). No host name leaves the machine; a lookup
// costs a local match.
//
// Threads: answer() and entries() run on any thread under one short mutex; everything else
// runs on the client's thread (Client::io()). wait_first() blocks its caller (never the
// client's thread) and is for `sandgate check`.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "proxy/launchdarkly/client.hpp"
#include "proxy/sse/sse_parser.hpp"
#include "rules/domain_set.hpp"

namespace sandgate::launchdarkly {

using sse::SseEvent;
using sse::SseParser;

class ListMode {
 public:
  explicit ListMode(Client& client);

  // Spawns the fetch-then-stream loop on the client's event loop (before or after it runs).
  void start();

  // The answer for a connection the local rules allowed: the list's, or while there is no list,
  // the failover answer. Any thread.
  Answer answer(const rules::Host& host, std::uint16_t port);
  // Entries in the list in force; -1 while there is none. Any thread.
  long entries() const;
  // Blocks until the first outcome (a list, no list, a failure) or `timeout`. Not on the
  // client's thread.
  void wait_first(std::chrono::milliseconds timeout) const;

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> fetch(std::string how);
  boost::asio::awaitable<void> refetch_after_pings();
  void handle_event(const SseEvent& event);
  // A put, or a fetch's reply: every flag of the environment, so a missing flag means no list.
  void replace_all(const std::optional<FlagState>& state, std::string_view how);
  void apply(const FlagState& state, std::string_view how);
  void drop_list(std::string why, std::string_view level, std::string_view note);
  void halt(const Failure& failure);
  std::string outage_note() const;

  Client& client_;
  const settings::Settings& settings_;
  std::string context_;        // the context's JSON
  std::string stream_target_;  // "/eval/{id}/{base64url(context)}"

  // Shared with workers, under mutex_.
  mutable std::mutex mutex_;
  std::shared_ptr<const rules::DomainSet> rules_;  // null: no list
  std::size_t entries_ = 0;
  std::uint64_t version_ = 0;
  bool have_version_ = false;
  bool received_ = false;  // a first list arrived (until then, failover decides)
  bool answered_ = false;  // a first outcome of any kind (for wait_first)
  std::string no_list_why_ = "no list received from LaunchDarkly yet";

  // The client's thread only.
  bool fetching_ = false;     // a re-fetch is out
  bool fetch_again_ = false;  // a ping came while it was out
  Backoff stream_backoff_;
};

}  // namespace sandgate::launchdarkly
