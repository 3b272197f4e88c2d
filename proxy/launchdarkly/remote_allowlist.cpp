#include "proxy/launchdarkly/remote_allowlist.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>

#include "proxy/launchdarkly/client.hpp"
#include "proxy/launchdarkly/domain_mode.hpp"
#include "proxy/launchdarkly/list_mode.hpp"

namespace sandgate::launchdarkly {
namespace {

namespace asio = boost::asio;

}  // namespace

std::string_view to_string(Source source) {
  switch (source) {
    case Source::network:
      return "launchdarkly";
    case Source::cache:
      return "cache";
    case Source::stale_cache:
      return "stale-cache";
    case Source::failover:
      return "failover";
    case Source::list:
      return "list";
  }
  return "?";
}

std::string describe_configuration(const settings::Settings& settings) {
  std::string text = "LaunchDarkly allowlist: flag '" + settings.ld_flag + "' ";
  if (settings.ld_mode == settings::LdMode::list) {
    text += "holds the list (context key '" +
            (settings.ld_context_key.empty() ? os_user_name() : settings.ld_context_key) +
            "'), kept current from " + settings.ld_stream_uri.text();
  } else {
    text += "asked per domain at " + settings.ld_base_uri.text() + " (at most " +
            std::to_string(settings.ld_max_lookups) + " requests at once), answers cached " +
            std::to_string(settings.ld_cache_ttl.count()) + " s";
  }
  text += "; timeout " + millis_text(settings.ld_timeout) + "; failover " +
          failover_name(settings.ld_failover) +
          (settings.ld_failover_given ? "" : " (the default)");
  return text;
}

RemoteAllowlist::RemoteAllowlist(const settings::Settings& settings, Note note,
                                 const Timing& timing)
    : settings_(settings), client_(std::make_unique<Client>(settings, std::move(note), timing)) {
  if (settings.ld_mode == settings::LdMode::list) {
    list_ = std::make_unique<ListMode>(*client_);
  } else {
    domain_ = std::make_unique<DomainMode>(*client_);
  }
}

RemoteAllowlist::~RemoteAllowlist() { stop(); }

void RemoteAllowlist::start() {
  if (list_) {
    list_->start();
  }
  client_->start();
}

void RemoteAllowlist::stop() {
  if (!client_->stop()) {
    return;
  }
  // Whoever still waits gets the failover answer.
  if (domain_) {
    domain_->fail_pending("the gate is stopping");
  }
}

const Counters& RemoteAllowlist::counters() const { return client_->counters(); }

const ReplyBudget& RemoteAllowlist::reply_budget() const { return client_->reply_budget(); }

bool RemoteAllowlist::reachable() const { return client_->reachable(); }

long RemoteAllowlist::list_entries() const { return list_ ? list_->entries() : -1; }

Answer RemoteAllowlist::failover_answer(std::string_view why) const {
  return client_->failover_answer(why);
}

asio::awaitable<Answer> RemoteAllowlist::check(const rules::Host& host, std::uint16_t port) {
  if (list_) {
    co_return list_->answer(host, port);
  }
  std::string domain = host.name;
  if (auto local = domain_->answer_locally(domain)) {
    co_return std::move(*local);
  }
  if (client_->stopping()) {
    co_return client_->failover_answer("the gate is stopping");
  }
  // A miss: ask on the client's thread.
  co_return co_await ask_client_thread(std::move(domain));
}

// An ordinary function (not a coroutine) so that the lambdas below live outside any coroutine
// frame: GCC 12 mis-destroys init-captures of lambdas created inside a co_await expression.
// The answer resumes the caller on its own executor; the work guard keeps the caller's loop
// alive while the answer is outstanding, like any Asio operation.
asio::awaitable<Answer> RemoteAllowlist::ask_client_thread(std::string domain) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(Answer)>(
      [this](auto handler, std::string domain) {
        using Handler = decltype(handler);
        struct Waiter {
          Handler handler;
          asio::executor_work_guard<asio::any_io_executor> work;
        };
        auto executor = asio::get_associated_executor(handler);
        auto waiter =
            std::make_shared<Waiter>(Waiter{std::move(handler), asio::make_work_guard(executor)});
        DomainMode::Deliver deliver = [waiter](Answer answer) {
          auto target = waiter->work.get_executor();
          asio::post(target, [waiter, answer = std::move(answer)]() mutable {
            waiter->handler(std::move(answer));
            waiter->work.reset();
          });
        };
        asio::post(client_->io(),
                   [this, domain = std::move(domain), deliver = std::move(deliver)]() mutable {
                     domain_->lookup(std::move(domain), std::move(deliver));
                   });
      },
      asio::use_awaitable, std::move(domain));
}

// ---- `sandgate check` ----

Answer RemoteAllowlist::check_blocking(const rules::Host& host, std::uint16_t port) {
  if (list_) {
    // Wait for the first list (or the first failure) at most the timeout.
    list_->wait_first(settings_.ld_timeout + std::chrono::milliseconds(200));
    return list_->answer(host, port);
  }
  if (auto local = domain_->answer_locally(host.name)) {
    return *local;
  }
  std::promise<Answer> promise;
  auto future = promise.get_future();
  asio::post(client_->io(), [this, domain = host.name, &promise] {
    domain_->lookup(domain, [&promise](Answer answer) { promise.set_value(std::move(answer)); });
  });
  return future.get();
}

// ---- /metrics ----

std::string RemoteAllowlist::render_prometheus() const {
  std::string out;
  auto line = [&out](std::string_view text) {
    out += text;
    out += '\n';
  };
  auto value = [](std::uint64_t n) { return std::to_string(n); };
  line(
      "# HELP sandgate_launchdarkly_lookups_total LaunchDarkly allowlist answers, by where they "
      "came from.");
  line("# TYPE sandgate_launchdarkly_lookups_total counter");
  line("sandgate_launchdarkly_lookups_total{source=\"launchdarkly\"} " +
       value(client_->counters().lookups_network.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"cache\"} " +
       value(client_->counters().lookups_cache.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"stale-cache\"} " +
       value(client_->counters().lookups_stale.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"failover\"} " +
       value(client_->counters().lookups_failover.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"list\"} " +
       value(client_->counters().lookups_list.load(std::memory_order_relaxed)));
  line(
      "# HELP sandgate_launchdarkly_requests_total Requests to LaunchDarkly's evaluation endpoint, "
      "by result.");
  line("# TYPE sandgate_launchdarkly_requests_total counter");
  line("sandgate_launchdarkly_requests_total{result=\"ok\"} " +
       value(client_->counters().requests_ok.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_requests_total{result=\"failed\"} " +
       value(client_->counters().requests_failed.load(std::memory_order_relaxed)));
  line(
      "# HELP sandgate_launchdarkly_replies_over_budget_total Replies not read because the replies "
      "held at once would pass their gate-wide budget (twice SANDGATE_LD_MAX_PAYLOAD).");
  line("# TYPE sandgate_launchdarkly_replies_over_budget_total counter");
  line("sandgate_launchdarkly_replies_over_budget_total " +
       value(client_->reply_budget().refusals()));
  line(
      "# HELP sandgate_launchdarkly_reply_bytes_held Bytes of LaunchDarkly replies held now, of "
      "their gate-wide budget.");
  line("# TYPE sandgate_launchdarkly_reply_bytes_held gauge");
  line("sandgate_launchdarkly_reply_bytes_held " + value(client_->reply_budget().in_use()));
  line(
      "# HELP sandgate_launchdarkly_up Whether LaunchDarkly answered the last request (1) or is "
      "treated as down (0).");
  line("# TYPE sandgate_launchdarkly_up gauge");
  line("sandgate_launchdarkly_up " + std::string(reachable() ? "1" : "0"));
  if (settings_.ld_mode == settings::LdMode::list) {
    line(
        "# HELP sandgate_launchdarkly_stream_connects_total Connections made to LaunchDarkly's "
        "stream.");
    line("# TYPE sandgate_launchdarkly_stream_connects_total counter");
    line("sandgate_launchdarkly_stream_connects_total " +
         value(client_->counters().stream_connects.load(std::memory_order_relaxed)));
    line(
        "# HELP sandgate_launchdarkly_stream_events_total Events received on LaunchDarkly's "
        "stream.");
    line("# TYPE sandgate_launchdarkly_stream_events_total counter");
    line("sandgate_launchdarkly_stream_events_total " +
         value(client_->counters().stream_events.load(std::memory_order_relaxed)));
    line(
        "# HELP sandgate_launchdarkly_list_entries Entries of the LaunchDarkly list in force (-1: "
        "none).");
    line("# TYPE sandgate_launchdarkly_list_entries gauge");
    line("sandgate_launchdarkly_list_entries " + std::to_string(list_entries()));
  }
  return out;
}

}  // namespace sandgate::launchdarkly
