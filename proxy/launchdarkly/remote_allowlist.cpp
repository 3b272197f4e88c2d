#include "proxy/launchdarkly/remote_allowlist.hpp"

#include <pwd.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>
#include <random>

#include "proxy/launchdarkly/https_client.hpp"
#include "proxy/launchdarkly/sse_parser.hpp"

namespace sandgate::launchdarkly {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kFirstBackoff{1000};
constexpr std::chrono::milliseconds kMaxBackoff{30'000};
constexpr std::chrono::seconds kHealthyStream{60};        // a stream this old resets the backoff
constexpr std::chrono::minutes kStreamReadTimeout{5};     // LaunchDarkly's heartbeat is ~3 min
constexpr std::chrono::seconds kStreamConnectTimeout{10};

std::string os_user_name() {
  if (const passwd* entry = getpwuid(geteuid()); entry != nullptr && entry->pw_name != nullptr) {
    return entry->pw_name;
  }
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    return user;
  }
  return "uid-" + std::to_string(geteuid());
}

std::string choose(bool first, const std::string& a, const std::string& b) { return first ? a : b; }

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

// What a reply means: the flag's state, or why there is none.
Expected<FlagState, std::string> interpret_reply(const HttpReply& reply, std::string_view flag) {
  if (reply.status != 200) {
    std::string why = "LaunchDarkly answered HTTP " + std::to_string(reply.status);
    if (reply.status == 404) {
      why += " (unknown client-side ID?)";
    } else if (reply.status == 400) {
      why += " (is secure mode on for the environment?)";
    }
    return Unexpected{why};
  }
  if (reply.content_type != "application/json") {
    return Unexpected{"LaunchDarkly answered with '" + reply.content_type +
                      "', not application/json"};
  }
  auto flag_state = read_flag(reply.body, flag);
  if (!flag_state) {
    return Unexpected{"LaunchDarkly's reply is " + flag_state.error()};
  }
  if (!*flag_state) {
    return Unexpected{"the flag '" + std::string(flag) +
                      "' is not in LaunchDarkly's reply (does it exist, and is it available to "
                      "client-side IDs?)"};
  }
  return std::move(**flag_state);
}

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
    text += "asked per domain at " + settings.ld_base_uri.text() + ", answers cached " +
            std::to_string(settings.ld_cache_ttl.count()) + " s";
  }
  text += "; timeout " + millis_text(settings.ld_timeout) + "; failover " +
          failover_name(settings.ld_failover) + (settings.ld_failover_given ? "" : " (the default)");
  return text;
}

RemoteAllowlist::RemoteAllowlist(const settings::Settings& settings, Note note)
    : settings_(settings),
      note_(std::move(note)),
      os_user_(os_user_name()),
      flag_path_("/sdk/evalx/" + settings.launchdarkly_client_id + "/context"),
      http_(std::make_unique<HttpsClient>(io_)),  // keeps a reference; io_ is built next
      jitter_state_(std::random_device{}()) {
  context_key_ = settings.ld_context_key.empty() ? os_user_ : settings.ld_context_key;
}

RemoteAllowlist::~RemoteAllowlist() { stop(); }

void RemoteAllowlist::start() {
  if (settings_.ld_mode == settings::LdMode::list) {
    asio::co_spawn(io_, run_list_mode(), asio::detached);
  }
  auto guard = std::make_shared<asio::executor_work_guard<asio::io_context::executor_type>>(
      io_.get_executor());
  thread_ = std::thread([this, guard]() mutable {
    io_.run();
    guard.reset();
  });
}

void RemoteAllowlist::stop() {
  if (stopped_.exchange(true)) {
    return;
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
  // Whoever still waits gets the failover answer.
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [domain, waiters] : pending) {
    for (auto& deliver : waiters) {
      deliver(failover_answer("the gate is stopping"));
    }
  }
}

Answer RemoteAllowlist::failover_answer(std::string_view why) const {
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

Answer RemoteAllowlist::cached_answer(bool allowed, Source source,
                                      const std::string& domain) const {
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

long RemoteAllowlist::list_entries() const {
  std::lock_guard lock(mutex_);
  return list_.rules ? static_cast<long>(list_.entries) : -1;
}

// ---- Answering on the worker's thread ----

std::optional<Answer> RemoteAllowlist::answer_locally(const std::string& domain,
                                                      const rules::Host& host,
                                                      std::uint16_t port) {
  std::lock_guard lock(mutex_);
  if (settings_.ld_mode == settings::LdMode::list) {
    if (!list_.rules) {
      counters_.lookups_failover.fetch_add(1, std::memory_order_relaxed);
      return failover_answer(list_received_ ? "the list flag was deleted"
                                            : "no list received from LaunchDarkly yet");
    }
    counters_.lookups_list.fetch_add(1, std::memory_order_relaxed);
    Answer answer;
    answer.source = Source::list;
    answer.rule = list_.rules->match(host, port);
    answer.allowed = answer.rule.has_value();
    if (!answer.allowed) {
      answer.reason = rules::Reason::not_allowlisted;
      answer.detail = host.display() + " is not in the allowlist held in LaunchDarkly's flag '" +
                      settings_.ld_flag + "'";
    }
    return answer;
  }

  const auto now = Clock::now();
  auto found = cache_.find(domain);
  if (found != cache_.end() && now - found->second.fetched < settings_.ld_cache_ttl) {
    lru_.splice(lru_.begin(), lru_, found->second.lru);
    counters_.lookups_cache.fetch_add(1, std::memory_order_relaxed);
    return cached_answer(found->second.allowed, Source::cache, domain);
  }
  if (!up_.load(std::memory_order_relaxed) && now < retry_at_) {
    // A known outage: answer now instead of waiting for a request that would fail.
    return outage_answer_locked(
        domain, "LaunchDarkly is unreachable; retrying in " +
                    millis_text(std::chrono::duration_cast<std::chrono::milliseconds>(retry_at_ - now)));
  }
  return std::nullopt;
}

Answer RemoteAllowlist::outage_answer_locked(const std::string& domain, std::string_view why) {
  if (auto found = cache_.find(domain); found != cache_.end()) {
    counters_.lookups_stale.fetch_add(1, std::memory_order_relaxed);
    return cached_answer(found->second.allowed, Source::stale_cache, domain);
  }
  counters_.lookups_failover.fetch_add(1, std::memory_order_relaxed);
  return failover_answer(why);
}

asio::awaitable<Answer> RemoteAllowlist::check(const rules::Host& host, std::uint16_t port) {
  std::string domain = host.name;
  if (auto local = answer_locally(domain, host, port)) {
    co_return std::move(*local);
  }
  if (stopped_.load()) {
    co_return failover_answer("the gate is stopping");
  }
  // A miss: ask on the client's thread.
  co_return co_await ask_client_thread(std::move(domain));
}

// An ordinary function (not a coroutine) so that the lambdas below live outside any coroutine
// frame: GCC 12 mis-destroys init-captures of lambdas created inside a co_await expression.
// The answer resumes the caller on its own executor; the work guard keeps the caller's loop
// alive while the answer is outstanding, like any Asio operation.
boost::asio::awaitable<Answer> RemoteAllowlist::ask_client_thread(std::string domain) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(Answer)>(
      [this](auto handler, std::string domain) {
        using Handler = decltype(handler);
        struct Waiter {
          Handler handler;
          asio::executor_work_guard<asio::any_io_executor> work;
        };
        auto executor = asio::get_associated_executor(handler);
        auto waiter = std::make_shared<Waiter>(
            Waiter{std::move(handler), asio::make_work_guard(executor)});
        Deliver deliver = [waiter](Answer answer) {
          auto target = waiter->work.get_executor();
          asio::post(target, [waiter, answer = std::move(answer)]() mutable {
            waiter->handler(std::move(answer));
            waiter->work.reset();
          });
        };
        asio::post(io_, [this, domain = std::move(domain), deliver = std::move(deliver)]() mutable {
          lookup_on_client_thread(std::move(domain), std::move(deliver));
        });
      },
      asio::use_awaitable, std::move(domain));
}

// ---- The client's thread ----

// (A plain function rather than a conditional expression inside the coroutines: GCC 12
// mishandles temporaries of `?:` in coroutine bodies.)
Expected<FlagState, std::string> RemoteAllowlist::interpret(
    const Expected<HttpReply, std::string>& reply) const {
  if (!reply) {
    return Unexpected{reply.error()};
  }
  return interpret_reply(*reply, settings_.ld_flag);
}

void RemoteAllowlist::lookup_on_client_thread(std::string domain, Deliver deliver) {
  if (stopped_.load()) {
    deliver(failover_answer("the gate is stopping"));
    return;
  }
  {
    // The situation may have changed since the worker looked (another lookup filled the cache,
    // or LaunchDarkly went down).
    rules::Host host;
    host.name = domain;
    if (auto local = answer_locally(domain, host, 0)) {
      deliver(std::move(*local));
      return;
    }
  }
  if (auto waiting = pending_.find(domain); waiting != pending_.end()) {
    waiting->second.push_back(std::move(deliver));  // one request serves every waiter
    return;
  }
  if (!up_.load(std::memory_order_relaxed)) {
    // Retry time has come. One probe at a time; others take the outage answer meanwhile.
    if (probing_) {
      std::lock_guard lock(mutex_);
      deliver(outage_answer_locked(domain, "LaunchDarkly is unreachable; a retry is under way"));
      return;
    }
    probing_ = true;
  }
  pending_[domain].push_back(std::move(deliver));
  asio::co_spawn(io_, evaluate(std::move(domain)), asio::detached);
}

asio::awaitable<void> RemoteAllowlist::evaluate(std::string domain) {
  HttpRequest request;
  request.method = http::verb::report;
  request.target = flag_path_;
  request.body = context_json(domain, os_user_);
  auto reply = co_await http_->fetch(settings_.ld_base_uri, std::move(request), settings_.ld_timeout);
  const Expected<FlagState, std::string> state = interpret(reply);

  auto waiters = std::move(pending_[domain]);
  pending_.erase(domain);
  if (state) {
    counters_.requests_ok.fetch_add(1, std::memory_order_relaxed);
    const bool allowed = allows(*state);
    {
      std::lock_guard lock(mutex_);
      auto found = cache_.find(domain);
      if (found != cache_.end()) {
        found->second.allowed = allowed;
        found->second.fetched = Clock::now();
        lru_.splice(lru_.begin(), lru_, found->second.lru);
      } else {
        lru_.push_front(domain);
        cache_.emplace(domain, CacheEntry{allowed, Clock::now(), lru_.begin()});
        while (cache_.size() > settings_.ld_cache_size) {
          cache_.erase(lru_.back());
          lru_.pop_back();
        }
      }
    }
    mark_up();
    counters_.lookups_network.fetch_add(waiters.size(), std::memory_order_relaxed);
    for (auto& deliver : waiters) {
      deliver(cached_answer(allowed, Source::network, domain));
    }
    co_return;
  }

  counters_.requests_failed.fetch_add(1, std::memory_order_relaxed);
  mark_down(state.error());
  // Everyone waiting, for this domain or any other, gets the outage answer now rather than at
  // the end of their own request.
  auto others = std::move(pending_);
  pending_.clear();
  others[domain] = std::move(waiters);
  std::lock_guard lock(mutex_);
  for (auto& [name, list] : others) {
    for (auto& deliver : list) {
      deliver(outage_answer_locked(name, state.error()));
    }
  }
}

std::chrono::milliseconds RemoteAllowlist::next_backoff() {
  // Jitter takes up to half of each delay off, so many gates restarted together spread out.
  const auto base = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  std::mt19937_64 random(jitter_state_++);
  const auto off = std::uniform_int_distribution<long>(0, base.count() / 2)(random);
  return std::chrono::milliseconds(base.count() - off);
}

void RemoteAllowlist::mark_down(const std::string& why) {
  probing_ = false;
  const auto delay = next_backoff();
  const bool was_up = up_.exchange(false);
  {
    std::lock_guard lock(mutex_);
    retry_at_ = Clock::now() + delay;
  }
  note_(was_up ? "warning" : "info",
            std::string(was_up ? "LaunchDarkly unreachable: " : "LaunchDarkly still unreachable: ") +
                why + "; failover " + failover_name(settings_.ld_failover) + " applies; retrying in " +
                millis_text(delay));
}

void RemoteAllowlist::mark_up() {
  probing_ = false;
  backoff_ = kFirstBackoff;
  if (!up_.exchange(true)) {
    note_("info", "LaunchDarkly reachable again");
  }
}

// ---- List mode ----

// (Helpers rather than ?: inside the coroutines: GCC 12 mishandles the temporaries of a
// conditional expression in coroutine bodies.)
std::string RemoteAllowlist::list_outage_note() const {
  if (list_received_) {
    return "; the last good list stays in force";
  }
  return "; failover " + failover_name(settings_.ld_failover) + " applies until a list arrives";
}

void RemoteAllowlist::apply_list(const FlagState& state, std::string_view how) {
  auto compiled = compile_list(state, "launchdarkly:" + settings_.ld_flag);
  if (!compiled) {
    note_("warning", "LaunchDarkly list (" + std::string(how) + ") ignored: " +
                             compiled.error() + "; the last good list stays in force");
    return;
  }
  for (const auto& issue : compiled->issues) {
    note_("warning", "LaunchDarkly list entry " + std::to_string(issue.line) + " '" +
                             issue.text + "' skipped: " + issue.message);
  }
  {
    std::lock_guard lock(mutex_);
    list_.rules = compiled->rules;
    list_.entries = compiled->entries;
    list_.version = state.version;
    list_.have_version = true;
    list_received_ = true;
  }
  note_("info", "LaunchDarkly list (" + std::string(how) + ", version " +
                        std::to_string(state.version) + "): " + std::to_string(compiled->entries) +
                        " entries");
}

asio::awaitable<bool> RemoteAllowlist::fetch_list() {
  HttpRequest request;
  request.method = http::verb::report;
  request.target = flag_path_;
  request.body = context_json(context_key_, {});
  auto reply = co_await http_->fetch(settings_.ld_base_uri, std::move(request), settings_.ld_timeout);
  const Expected<FlagState, std::string> state = interpret(reply);
  if (!state) {
    counters_.requests_failed.fetch_add(1, std::memory_order_relaxed);
    up_.store(false);
    note_("warning", "LaunchDarkly list fetch failed: " + state.error() + list_outage_note());
    co_return false;
  }
  counters_.requests_ok.fetch_add(1, std::memory_order_relaxed);
  up_.store(true);
  apply_list(*state, "fetched");
  co_return true;
}

void RemoteAllowlist::handle_event(const SseEvent& event) {
  counters_.stream_events.fetch_add(1, std::memory_order_relaxed);
  if (event.type == "put") {
    auto state = read_flag(event.data, settings_.ld_flag);
    if (!state) {
      note_("warning", "LaunchDarkly put event ignored: " + state.error());
      return;
    }
    if (!*state) {
      std::lock_guard lock(mutex_);
      if (list_.rules) {
        list_.rules.reset();
        list_.entries = 0;
        note_("warning", "LaunchDarkly's put no longer holds the flag '" + settings_.ld_flag +
                                 "'; failover " + failover_name(settings_.ld_failover) +
                                 " applies");
      }
      return;
    }
    apply_list(**state, "put");
  } else if (event.type == "patch") {
    auto update = read_patch(event.data);
    if (!update) {
      note_("warning", "LaunchDarkly patch event ignored: " + update.error());
      return;
    }
    if (update->key != settings_.ld_flag) {
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (list_.have_version && update->state.version <= list_.version) {
        return;  // an older or repeated update
      }
    }
    apply_list(update->state, "patch");
  } else if (event.type == "delete") {
    auto update = read_delete(event.data);
    if (!update) {
      note_("warning", "LaunchDarkly delete event ignored: " + update.error());
      return;
    }
    if (update->key != settings_.ld_flag) {
      return;
    }
    std::lock_guard lock(mutex_);
    if (list_.have_version && update->state.version <= list_.version) {
      return;
    }
    // A tombstone: the version is kept so that an older patch cannot bring the list back.
    list_.rules.reset();
    list_.entries = 0;
    list_.version = update->state.version;
    list_.have_version = true;
    note_("warning", "LaunchDarkly deleted the flag '" + settings_.ld_flag + "'; failover " +
                             failover_name(settings_.ld_failover) + " applies");
  } else if (event.type == "ping") {
    // A ping (all a Relay Proxy sends) asks for a fresh evaluation; the stream stays open.
    asio::co_spawn(io_, [this]() -> asio::awaitable<void> { co_await fetch_list(); },
                   asio::detached);
  }
}

asio::awaitable<void> RemoteAllowlist::run_list_mode() {
  co_await fetch_list();
  const std::string stream_target =
      "/eval/" + settings_.launchdarkly_client_id + "/" + base64url(context_json(context_key_, {}));
  std::chrono::milliseconds backoff = kFirstBackoff;
  asio::steady_timer wait(io_);
  while (!stopped_.load()) {
    const auto opened_at = Clock::now();
    SseParser parser;
    HttpRequest request;
    request.target = stream_target;
    request.accept = "text/event-stream";
    const std::string why = co_await http_->stream(
        settings_.ld_stream_uri, std::move(request), "text/event-stream",
        kStreamConnectTimeout, kStreamReadTimeout,
        [this] {
          counters_.stream_connects.fetch_add(1, std::memory_order_relaxed);
          up_.store(true);
          note_("info", "LaunchDarkly stream connected");
        },
        [this, &parser](std::string_view bytes) {
          SseParser::Handlers handlers;
          handlers.on_event = [this](SseEvent&& event) { handle_event(event); };
          return parser.feed(bytes, handlers);
        });
    if (stopped_.load()) {
      break;
    }
    if (Clock::now() - opened_at >= kHealthyStream) {
      backoff = kFirstBackoff;
    }
    std::mt19937_64 random(jitter_state_++);
    const auto delay = std::chrono::milliseconds(
        backoff.count() - std::uniform_int_distribution<long>(0, backoff.count() / 2)(random));
    backoff = std::min(backoff * 2, kMaxBackoff);
    up_.store(false);
    note_("warning", "LaunchDarkly stream: " + choose(parser.failed(), parser.error(), why) +
                         "; reconnecting in " + millis_text(delay) + list_outage_note());
    wait.expires_after(delay);
    co_await wait.async_wait(asio::use_awaitable);
  }
}

// ---- `sandgate check` ----

Answer RemoteAllowlist::check_blocking(const rules::Host& host, std::uint16_t port) {
  if (settings_.ld_mode == settings::LdMode::list) {
    // Wait for the first list (or the first failure) at most the timeout.
    const auto deadline = Clock::now() + settings_.ld_timeout + std::chrono::milliseconds(200);
    while (Clock::now() < deadline) {
      {
        std::lock_guard lock(mutex_);
        if (list_received_) {
          break;
        }
      }
      if (counters_.requests_failed.load() > 0) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (auto local = answer_locally(host.name, host, port)) {
    return *local;
  }
  std::promise<Answer> promise;
  auto future = promise.get_future();
  asio::post(io_, [this, domain = host.name, &promise] {
    lookup_on_client_thread(domain, [&promise](Answer answer) { promise.set_value(std::move(answer)); });
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
  line("# HELP sandgate_launchdarkly_lookups_total LaunchDarkly allowlist answers, by where they came from.");
  line("# TYPE sandgate_launchdarkly_lookups_total counter");
  line("sandgate_launchdarkly_lookups_total{source=\"launchdarkly\"} " + value(counters_.lookups_network.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"cache\"} " + value(counters_.lookups_cache.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"stale-cache\"} " + value(counters_.lookups_stale.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"failover\"} " + value(counters_.lookups_failover.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_lookups_total{source=\"list\"} " + value(counters_.lookups_list.load(std::memory_order_relaxed)));
  line("# HELP sandgate_launchdarkly_requests_total Requests to LaunchDarkly's evaluation endpoint, by result.");
  line("# TYPE sandgate_launchdarkly_requests_total counter");
  line("sandgate_launchdarkly_requests_total{result=\"ok\"} " + value(counters_.requests_ok.load(std::memory_order_relaxed)));
  line("sandgate_launchdarkly_requests_total{result=\"failed\"} " + value(counters_.requests_failed.load(std::memory_order_relaxed)));
  line("# HELP sandgate_launchdarkly_up Whether LaunchDarkly answered the last request (1) or is treated as down (0).");
  line("# TYPE sandgate_launchdarkly_up gauge");
  line("sandgate_launchdarkly_up " + std::string(reachable() ? "1" : "0"));
  if (settings_.ld_mode == settings::LdMode::list) {
    line("# HELP sandgate_launchdarkly_stream_connects_total Connections made to LaunchDarkly's stream.");
    line("# TYPE sandgate_launchdarkly_stream_connects_total counter");
    line("sandgate_launchdarkly_stream_connects_total " + value(counters_.stream_connects.load(std::memory_order_relaxed)));
    line("# HELP sandgate_launchdarkly_stream_events_total Events received on LaunchDarkly's stream.");
    line("# TYPE sandgate_launchdarkly_stream_events_total counter");
    line("sandgate_launchdarkly_stream_events_total " + value(counters_.stream_events.load(std::memory_order_relaxed)));
    line("# HELP sandgate_launchdarkly_list_entries Entries of the LaunchDarkly list in force (-1: none).");
    line("# TYPE sandgate_launchdarkly_list_entries gauge");
    line("sandgate_launchdarkly_list_entries " + std::to_string(list_entries()));
  }
  return out;
}

}  // namespace sandgate::launchdarkly
