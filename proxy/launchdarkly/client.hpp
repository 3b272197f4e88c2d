// The LaunchDarkly client both modes share: its thread and event loop, the HTTPS connections
// (kept alive, TLS verified), the evaluation request, whether LaunchDarkly counts as up, down
// (with a backoff before the next try) or halted (a final HTTP error: no more requests), the
// failover answer, the notes it logs and the counters behind /metrics.
//
// The modes on top (domain_mode.hpp, list_mode.hpp) hold what differs: per-domain answers and
// their cache, or the one list and its stream.
//
// Threads: start() runs the event loop on a thread of its own. evaluate(), mark_down(),
// mark_up(), halt() and the backoff belong to that thread. reachable(), halted(),
// retry_at() and failover_answer() may be read from any thread (atomics; the halt reason is
// written once, before the flag that publishes it).
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "proxy/launchdarkly/answer.hpp"
#include "proxy/launchdarkly/flag_payload.hpp"
#include "proxy/launchdarkly/https_client.hpp"
#include "proxy/launchdarkly/reply_budget.hpp"
#include "proxy/launchdarkly/retry_policy.hpp"
#include "proxy/settings/settings.hpp"

namespace sandgate::launchdarkly {

// Why there is no usable answer: a sentence, and when LaunchDarkly refused with an HTTP error,
// the status (0 otherwise) and its Retry-After field.
struct Failure {
  Failure() = default;
  explicit Failure(std::string why_, unsigned status_ = 0, std::string retry_after_ = {})
      : why(std::move(why_)), status(status_), retry_after(std::move(retry_after_)) {}

  std::string why;
  unsigned status = 0;
  std::string retry_after;
  // The gate's reply budget refused the body (reply_budget.hpp): a limit of the gate's, which
  // says nothing about LaunchDarkly being up or down.
  bool over_budget = false;
  // A status the SDKs never retry (is_http_error_recoverable() is false).
  bool final() const { return status != 0 && !is_http_error_recoverable(status); }
};

std::string failover_name(settings::LdFailover mode);
std::string millis_text(std::chrono::milliseconds ms);
std::string os_user_name();

class Client {
 public:
  using Note = std::function<void(std::string_view level, std::string_view text)>;
  using Clock = std::chrono::steady_clock;

  Client(const settings::Settings& settings, Note note, const Timing& timing);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts the thread. Idempotent with stop(): once stopped, it stays stopped.
  void start();
  // Stops the thread and joins it, then runs what was queued (with stopping() true, so every
  // lookup answers with the failover answer) and closes idle connections. Returns false when
  // it had already been stopped.
  bool stop();
  bool stopping() const { return stopped_.load(); }

  boost::asio::io_context& io() { return io_; }
  HttpsClient& http() { return *http_; }  // the client's thread only
  const settings::Settings& settings() const { return settings_; }
  const Timing& timing() const { return timing_; }
  const std::string& os_user() const { return os_user_; }
  void note(std::string_view level, std::string_view text) const { note_(level, text); }
  Counters& counters() { return counters_; }
  const Counters& counters() const { return counters_; }
  // The bytes of replies held at once (twice SANDGATE_LD_MAX_PAYLOAD). Its readings: any thread.
  const ReplyBudget& reply_budget() const { return reply_budget_; }

  // One evaluation of the flag for a context (REPORT /sdk/evalx/{id}/context): its state, no
  // state when the reply does not hold the flag, or why there is no usable reply. Counted in
  // requests_ok / requests_failed. The client's thread only.
  boost::asio::awaitable<Expected<std::optional<FlagState>, Failure>> evaluate(
      std::string context_json);

  // State, from any thread.
  bool reachable() const { return up_.load(std::memory_order_relaxed); }
  bool halted() const { return halted_.load(std::memory_order_acquire); }
  const std::string& halt_reason() const { return halt_reason_; }  // after halted() is true
  Clock::time_point retry_at() const {
    return Clock::time_point(Clock::duration(retry_at_.load(std::memory_order_relaxed)));
  }

  // The client's thread: LaunchDarkly answered; LaunchDarkly did not (retry after the backoff,
  // or after its Retry-After if that is longer); a final error (no request until restart).
  void mark_up();
  void mark_down(const Failure& failure, std::string_view consequence);
  void halt(const Failure& failure, std::string_view consequence);
  void set_reachable(bool up) { up_.store(up, std::memory_order_relaxed); }
  // The jitter seed for another Backoff (list mode's stream).
  std::uint64_t seed() { return seed_++; }

  // The failover answer in force, with `why` in its sentence. Any thread.
  Answer failover_answer(std::string_view why) const;

 private:
  const settings::Settings& settings_;
  Note note_;
  Timing timing_;
  std::string os_user_;
  std::string flag_path_;  // "/sdk/evalx/{id}/context"

  // Declared before io_ so that it outlives it: coroutines left in io_ when it is destroyed
  // still hold TLS streams made from it. http_ is declared after io_, so its idle connections
  // close while io_ is still there.
  boost::asio::ssl::context tls_;
  // Before http_ and io_: replies left in io_'s coroutines give their charge back to it.
  ReplyBudget reply_budget_;
  boost::asio::io_context io_{1};
  std::unique_ptr<HttpsClient> http_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  bool started_ = false;

  std::atomic<bool> up_{true};
  std::atomic<bool> halted_{false};
  std::string halt_reason_;  // written once, before halted_ is set
  std::atomic<Clock::rep> retry_at_{0};

  // The client's thread only.
  std::uint64_t seed_;
  Backoff backoff_;

  Counters counters_;
};

}  // namespace sandgate::launchdarkly
