#include "proxy/launchdarkly/list_mode.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <thread>

namespace sandgate::launchdarkly {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// One of two sentences. (A function, not ?:, in coroutine bodies: GCC 12 mishandles the
// temporaries of a conditional expression there.)
std::string one_of(bool first, const std::string& a, const std::string& b) { return first ? a : b; }

}  // namespace

ListMode::ListMode(Client& client)
    : client_(client),
      settings_(client.settings()),
      stream_backoff_(client.timing(), client.seed()) {
  const std::string key =
      settings_.ld_context_key.empty() ? client.os_user() : settings_.ld_context_key;
  context_ = context_json(key, {});
  stream_target_ = "/eval/" + settings_.launchdarkly_client_id + "/" + base64url(context_);
}

void ListMode::start() { asio::co_spawn(client_.io(), run(), asio::detached); }

Answer ListMode::answer(const rules::Host& host, std::uint16_t port) {
  std::lock_guard lock(mutex_);
  if (!rules_) {
    client_.counters().lookups_failover.fetch_add(1, std::memory_order_relaxed);
    return client_.failover_answer(no_list_why_);
  }
  client_.counters().lookups_list.fetch_add(1, std::memory_order_relaxed);
  Answer answer;
  answer.source = Source::list;
  answer.rule = rules_->match(host, port);
  answer.allowed = answer.rule.has_value();
  if (!answer.allowed) {
    answer.reason = rules::Reason::not_allowlisted;
    answer.detail = host.display() + " is not in the allowlist held in LaunchDarkly's flag '" +
                    settings_.ld_flag + "'";
  }
  return answer;
}

long ListMode::entries() const {
  std::lock_guard lock(mutex_);
  return rules_ ? static_cast<long>(entries_) : -1;
}

void ListMode::wait_first(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline && !client_.halted()) {
    {
      std::lock_guard lock(mutex_);
      if (answered_) {
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string ListMode::outage_note() const {
  if (received_) {
    return "; the last good list stays in force";
  }
  return "; failover " + failover_name(settings_.ld_failover) + " applies until a list arrives";
}

void ListMode::drop_list(std::string why, std::string_view level, std::string_view note) {
  {
    std::lock_guard lock(mutex_);
    const bool had = rules_ != nullptr;
    rules_.reset();
    entries_ = 0;
    no_list_why_ = std::move(why);
    answered_ = true;
    if (!had) {
      return;  // said once, when the list went
    }
  }
  client_.note(level, note);
}

void ListMode::apply(const FlagState& state, std::string_view how) {
  auto compiled = compile_list(state, "launchdarkly:" + settings_.ld_flag);
  if (!compiled) {
    client_.note("warning", "LaunchDarkly list (" + std::string(how) + ") ignored: " +
                                compiled.error() + "; the last good list stays in force");
    std::lock_guard lock(mutex_);
    answered_ = true;
    return;
  }
  for (const auto& issue : compiled->issues) {
    client_.note("warning", "LaunchDarkly list entry " + std::to_string(issue.line) + " '" +
                                issue.text + "' skipped: " + issue.message);
  }
  {
    std::lock_guard lock(mutex_);
    rules_ = compiled->rules;
    entries_ = compiled->entries;
    version_ = state.version;
    have_version_ = true;
    received_ = true;
    answered_ = true;
  }
  client_.note("info", "LaunchDarkly list (" + std::string(how) + ", version " +
                           std::to_string(state.version) +
                           "): " + std::to_string(compiled->entries) + " entries");
}

void ListMode::replace_all(const std::optional<FlagState>& state, std::string_view how) {
  if (state) {
    apply(*state, how);
    return;
  }
  drop_list(
      "LaunchDarkly's flags do not include the list flag '" + settings_.ld_flag + "'", "warning",
      "LaunchDarkly's flags (" + std::string(how) + ") no longer hold the flag '" +
          settings_.ld_flag + "'; failover " + failover_name(settings_.ld_failover) + " applies");
}

void ListMode::halt(const Failure& failure) {
  const std::string consequence =
      "; the list is dropped and failover " + failover_name(settings_.ld_failover) + " applies";
  client_.halt(failure, consequence);
  // A list nothing keeps current any more is not trusted: the failover mode decides from now.
  std::lock_guard lock(mutex_);
  rules_.reset();
  entries_ = 0;
  no_list_why_ = client_.halt_reason();
  answered_ = true;
}

asio::awaitable<void> ListMode::fetch(std::string how) {
  auto state = co_await client_.evaluate(context_);
  if (!state) {
    if (state.error().final()) {
      halt(state.error());
      co_return;
    }
    client_.set_reachable(false);
    client_.note("warning", "LaunchDarkly list fetch failed: " + state.error().why + outage_note());
    std::lock_guard lock(mutex_);
    answered_ = true;
    co_return;
  }
  client_.set_reachable(true);
  // A reply without the flag is an answer, not a failure: the SDKs handle a fetch's flags as
  // they handle a `put` (replace every flag), and a `put` without the flag means no list.
  replace_all(*state, how);
}

asio::awaitable<void> ListMode::refetch_after_pings() {
  // Pings are merged: while a re-fetch is out, further pings only ask for one more after it
  // (its reply may predate the change they announce). LaunchDarkly's SDKs coalesce the same way:
  // only the latest of overlapping flag requests counts (js-sdk-common's promise coalescer).
  fetching_ = true;
  do {
    fetch_again_ = false;
    co_await fetch("re-fetched after a ping");
  } while (fetch_again_ && !client_.stopping() && !client_.halted());
  fetching_ = false;
}

void ListMode::handle_event(const SseEvent& event) {
  client_.counters().stream_events.fetch_add(1, std::memory_order_relaxed);
  const std::size_t limit = settings_.ld_max_payload;
  if (event.type == "put") {
    auto state = read_flag(event.data, settings_.ld_flag, limit);
    if (!state) {
      client_.note("warning", "LaunchDarkly put event ignored: " + state.error());
      return;
    }
    replace_all(*state, "put");
  } else if (event.type == "patch") {
    auto update = read_patch(event.data, limit);
    if (!update) {
      client_.note("warning", "LaunchDarkly patch event ignored: " + update.error());
      return;
    }
    if (update->key != settings_.ld_flag) {
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (have_version_ && update->state.version <= version_) {
        return;  // an older or repeated update
      }
    }
    apply(update->state, "patch");
  } else if (event.type == "delete") {
    auto update = read_delete(event.data, limit);
    if (!update) {
      client_.note("warning", "LaunchDarkly delete event ignored: " + update.error());
      return;
    }
    if (update->key != settings_.ld_flag) {
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (have_version_ && update->state.version <= version_) {
        return;
      }
      // A tombstone: the version is kept so that an older patch cannot bring the list back.
      version_ = update->state.version;
      have_version_ = true;
    }
    drop_list("the list flag was deleted", "warning",
              "LaunchDarkly deleted the flag '" + settings_.ld_flag + "'; failover " +
                  failover_name(settings_.ld_failover) + " applies");
  } else if (event.type == "ping") {
    // A ping (all a Relay Proxy sends) asks for a fresh evaluation; the stream stays open.
    if (fetching_) {
      fetch_again_ = true;
      return;
    }
    asio::co_spawn(client_.io(), refetch_after_pings(), asio::detached);
  }
}

asio::awaitable<void> ListMode::run() {
  co_await fetch("fetched");
  asio::steady_timer wait(client_.io());
  const Timing& timing = client_.timing();
  while (!client_.stopping() && !client_.halted()) {
    SseParser parser(settings_.ld_max_payload, settings_.ld_max_payload, "SANDGATE_LD_MAX_PAYLOAD");
    SseParser::Handlers handlers;
    handlers.on_event = [this](SseEvent&& event) { handle_event(event); };
    std::function<void()> on_open = [this] {
      // Open means the response headers were accepted: the backoff's good time starts here.
      stream_backoff_.opened(Clock::now());
      client_.counters().stream_connects.fetch_add(1, std::memory_order_relaxed);
      client_.set_reachable(true);
      client_.note("info", "LaunchDarkly stream connected");
    };
    std::function<bool(std::string_view)> on_bytes = [&parser, &handlers](std::string_view bytes) {
      return parser.feed(bytes, handlers);
    };
    HttpRequest request;
    request.target = stream_target_;
    request.accept = "text/event-stream";
    const StreamEnd end = co_await client_.http().stream(
        settings_.ld_stream_uri, std::move(request), "text/event-stream",
        timing.stream_connect_timeout, timing.stream_read_timeout, std::move(on_open),
        std::move(on_bytes));
    if (client_.stopping()) {
      break;
    }
    Failure failure{one_of(parser.failed(), parser.error(), end.why), end.status, end.retry_after};
    if (failure.final()) {
      // 401, 403, 404 and other final statuses stop the stream for good, as in the SDKs.
      halt(failure);
      break;
    }
    auto delay = stream_backoff_.next(Clock::now());
    if (auto asked = parse_retry_after(end.retry_after, std::chrono::system_clock::now());
        asked && *asked > delay) {
      delay = *asked;  // Retry-After asks for a longer pause than the backoff
    }
    client_.set_reachable(false);
    client_.note("warning", "LaunchDarkly stream: " + failure.why + "; reconnecting in " +
                                millis_text(delay) + outage_note());
    wait.expires_after(delay);
    co_await wait.async_wait(asio::use_awaitable);
  }
}

}  // namespace sandgate::launchdarkly
