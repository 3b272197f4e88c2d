#include "proxy/launchdarkly/client.hpp"

#include <pwd.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace sandgate::launchdarkly {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

// What a reply means: the flag's state, no state (the flag is not in the reply), or why there
// is no usable reply. (A plain function: GCC 12 mishandles temporaries of `?:` and of some
// expressions in coroutine bodies.)
Expected<std::optional<FlagState>, Failure> interpret_reply(
    const Expected<HttpReply, FetchFailure>& fetched, std::string_view flag,
    std::size_t max_bytes) {
  if (!fetched) {
    Failure failure{fetched.error().why};
    failure.over_budget = fetched.error().over_budget;
    return Unexpected{std::move(failure)};
  }
  const HttpReply& reply = *fetched;
  if (reply.status != 200) {
    return Unexpected{Failure{"LaunchDarkly answered " + describe_http_status(reply.status),
                              reply.status, reply.retry_after}};
  }
  if (reply.content_type != "application/json") {
    return Unexpected{
        Failure{"LaunchDarkly answered with '" + reply.content_type + "', not application/json"}};
  }
  auto state = read_flag(reply.body, flag, max_bytes);
  if (!state) {
    return Unexpected{Failure{"LaunchDarkly's reply is " + state.error()}};
  }
  return std::move(*state);
}

}  // namespace

std::string failover_name(settings::LdFailover mode) {
  switch (mode) {
    case settings::LdFailover::allow:
      return "allow";
    case settings::LdFailover::deny:
      return "deny";
    case settings::LdFailover::blocklist:
      return "blocklist";
  }
  return "?";
}

std::string millis_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

std::string os_user_name() {
  if (const passwd* entry = getpwuid(geteuid()); entry != nullptr && entry->pw_name != nullptr) {
    return entry->pw_name;
  }
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    return user;
  }
  return "uid-" + std::to_string(geteuid());
}

Client::Client(const settings::Settings& settings, Note note, const Timing& timing)
    : settings_(settings),
      note_(std::move(note)),
      timing_(timing),
      os_user_(os_user_name()),
      flag_path_("/sdk/evalx/" + settings.launchdarkly_client_id + "/context"),
      tls_(make_client_tls()),
      reply_budget_(ReplyBudget::for_payload_limit(settings.ld_max_payload)),
      http_(std::make_unique<HttpsClient>(io_, tls_, settings.ld_max_payload, reply_budget_)),
      seed_(std::random_device{}()),
      backoff_(timing, seed_++) {}

Client::~Client() { stop(); }

void Client::start() {
  if (started_ || stopped_.load()) {
    return;
  }
  started_ = true;
  auto guard = std::make_shared<asio::executor_work_guard<asio::io_context::executor_type>>(
      io_.get_executor());
  thread_ = std::thread([this, guard]() mutable {
    io_.run();
    guard.reset();
  });
}

bool Client::stop() {
  if (stopped_.exchange(true)) {
    return false;
  }
  io_.stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  // Lookups posted just before the stop are still queued; each holds a worker's coroutine (and
  // keeps that worker's loop from ending). Run them now: with stopped_ set they answer with the
  // failover answer at once.
  io_.restart();
  io_.poll();
  http_->close_idle();
  return true;
}

asio::awaitable<Expected<std::optional<FlagState>, Failure>> Client::evaluate(
    std::string context_json) {
  HttpRequest request;
  request.method = http::verb::report;
  request.target = flag_path_;
  request.body = std::move(context_json);
  auto reply =
      co_await http_->fetch(settings_.ld_base_uri, std::move(request), settings_.ld_timeout);
  // The reply's charge on the budget is given back when `reply` goes, after this parse.
  auto state = interpret_reply(reply, settings_.ld_flag, settings_.ld_max_payload);
  if (state) {
    counters_.requests_ok.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters_.requests_failed.fetch_add(1, std::memory_order_relaxed);
  }
  co_return state;
}

void Client::mark_up() {
  if (halted_.load()) {
    return;  // final: a reply to a request sent before the halt changes nothing
  }
  backoff_.succeeded();
  if (!up_.exchange(true)) {
    note_("info", "LaunchDarkly reachable again");
  }
}

void Client::mark_down(const Failure& failure, std::string_view consequence) {
  auto delay = backoff_.next(Clock::now());
  // Retry-After (429, 503) asks for a longer pause than the backoff: honoured, bounded.
  if (auto asked = parse_retry_after(failure.retry_after, std::chrono::system_clock::now());
      asked && *asked > delay) {
    delay = *asked;
  }
  const bool was_up = up_.exchange(false);
  retry_at_.store((Clock::now() + delay).time_since_epoch().count(), std::memory_order_relaxed);
  note_(was_up ? "warning" : "info",
        std::string(was_up ? "LaunchDarkly unreachable: " : "LaunchDarkly still unreachable: ") +
            failure.why + std::string(consequence) + "; retrying in " + millis_text(delay));
}

void Client::halt(const Failure& failure, std::string_view consequence) {
  up_.store(false);
  if (halted_.load()) {
    return;
  }
  halt_reason_ = failure.why + "; LaunchDarkly is not asked again until the gate restarts";
  halted_.store(true, std::memory_order_release);
  // One clear error, naming the likely cause (in failure.why); nothing repeats it.
  note_("error", "LaunchDarkly refused the gate: " + failure.why + std::string(consequence) +
                     ". This error is final (as in LaunchDarkly's SDKs): no further requests "
                     "are made until the gate restarts");
}

Answer Client::failover_answer(std::string_view why) const {
  Answer answer;
  answer.source = Source::failover;
  const std::string mode = failover_name(settings_.ld_failover);
  switch (settings_.ld_failover) {
    case settings::LdFailover::deny:
      answer.allowed = false;
      answer.reason = rules::Reason::launchdarkly_unreachable;
      answer.detail = "LaunchDarkly gave no answer (" + std::string(why) +
                      "), and the failover mode is deny (GOOSE_SANDBOX_LD_FAILOVER)";
      break;
    case settings::LdFailover::blocklist:
    case settings::LdFailover::allow:
      // The local rules already allowed this connection; both modes let it pass. The log says
      // which one applied.
      answer.allowed = true;
      answer.detail = "LaunchDarkly gave no answer (" + std::string(why) + "); failover " + mode +
                      (settings_.ld_failover == settings::LdFailover::blocklist
                           ? ": the local rules alone decided"
                           : ": allowed");
      break;
  }
  return answer;
}

}  // namespace sandgate::launchdarkly
