// --unknown=ask on the session's side: hold a request on the gate's question about its
// destination. See ask_wait.hpp and proxy/ask/question_board.hpp.
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <functional>
#include <memory>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/ask/question_board.hpp"
#include "proxy/session/ask_wait.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

// True when the client has closed its side (or the socket failed); false when it merely sent
// bytes, which stay unread for the request.
bool client_left(tcp::socket& client) {
  if (!client.is_open()) {
    return true;
  }
  char byte;
  const ssize_t n = ::recv(client.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

rules::Decision allowed_by_answer() {
  rules::Decision decision;
  decision.answered = true;
  return decision;
}

rules::Decision denied(rules::Reason reason) {
  rules::Decision decision;
  decision.verdict = rules::Verdict::deny;
  decision.reason = reason;
  decision.unknown = true;
  return decision;
}

// What the ask default gives when nobody answered (`reason`: ask-timeout, ask-unavailable).
rules::Decision ask_default(const DecisionState& decided, rules::Reason reason) {
  return decided.settings().ask_default_allow ? allowed_by_answer() : denied(reason);
}

// What a finished wait decides (the gate is not shutting down).
rules::Decision decision_of(const DecisionState& decided, const ask::Waiter& waiter,
                            bool timed_out) {
  if (timed_out || !waiter.result) {
    return ask_default(decided, rules::Reason::ask_timeout);
  }
  switch (waiter.result->outcome) {
    case ask::Outcome::allowed:
      return allowed_by_answer();
    case ask::Outcome::denied:
      return denied(rules::Reason::ask_denied);
    case ask::Outcome::overloaded:
      // Too many questions pending: never the ask default, which may be allow (see Outcome).
      return denied(rules::Reason::ask_unavailable);
    case ask::Outcome::unavailable:
    case ask::Outcome::cancelled:
      break;
  }
  return ask_default(decided, rules::Reason::ask_unavailable);
}

// How a wait for a person's answer ended.
enum class WaitEnd : std::uint8_t {
  answered,     // the waiter has its result, or the gate is stopping
  timed_out,    // nobody answered within the ask timeout
  withdrawn,    // a reload's rules no longer leave it to a person
  client_left,  // the client left (logged, closed)
  revoked,      // a reload closed the connection under a stream (the caller's line)
};

// The client left while its request waited: the question is left, the client closed (a
// connection of its own; a stream's front ends the stream) and the request's one line written,
// an end line (nothing was decided for it) counted as the client's leaving. `request`: the
// question was about that request, which the line names.
void record_client_left(SessionContext& context, const DecisionState& decided,
                        ask::QuestionBoard& board, const std::shared_ptr<ask::Waiter>& waiter,
                        std::string_view method, const std::string& display, std::uint16_t port,
                        const ask::RequestQuestion* request) {
  waiter->wake = nullptr;
  board.leave(waiter, false);
  if (decided.stream == nullptr) {
    boost::system::error_code ignored;
    context.client.close(ignored);
  }
  const bool reset = decided.stream != nullptr && decided.stream->reset();
  const std::string asked =
      request != nullptr && !request->budget ? " (" + request->request + ")" : std::string();
  const std::string detail = std::string(reset ? "the client reset the stream of its request"
                                               : "the client left while its request") +
                             asked + " waited for an answer about " + display + ":" +
                             std::to_string(port) + ".";
  log::Record line;  // views: `detail` must outlive the write
  line.event = log::Record::Event::end;
  line.connection_id = context.id;
  line.client = context.client_address;
  line.method = method;
  line.host = display;
  line.port = port;
  line.detail = detail;
  line.outcome = reset ? "reset" : "closed";
  line.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - decided.arrived)
          .count();
  record_late_denial(context.worker, line, rules::Reason::client_closed);
}

// What woke a wait.
enum class Woken : std::uint8_t {
  timer,        // `wake` fired or was woken (an answer, a reload, the drain)
  early_bytes,  // the client sent bytes: they belong to the request, and the wait goes on
  client_left,  // the client is gone
};

// Sleeps on `wake` until it fires or is woken, or the client leaves. A client with a connection
// of its own is watched on its socket (readable with nothing to read); one that sends bytes
// early is not watched further (`watch_client` cleared): a readable socket would wake this at
// once again. A stream's front says when its client left (StreamDeparture), waking `wake`.
asio::awaitable<Woken> sleep_until_woken(SessionContext& context, const DecisionState& decided,
                                         asio::steady_timer& wake, bool& watch_client,
                                         const ask::Waiter& waiter) {
  if (decided.stream != nullptr) {
    if (!decided.stream->left()) {
      co_await wake.async_wait(use_tuple);
    }
    const bool left = decided.stream->left() && !waiter.result && !context.stopping();
    co_return left ? Woken::client_left : Woken::timer;
  }
  if (!watch_client) {
    co_await wake.async_wait(use_tuple);
    co_return Woken::timer;
  }
  auto outcome = co_await (wake.async_wait(use_tuple) ||
                           context.client.async_wait(tcp::socket::wait_read, use_tuple));
  if (outcome.index() == 0 || waiter.result || context.stopping()) {
    co_return Woken::timer;
  }
  if (client_left(context.client)) {
    co_return Woken::client_left;
  }
  watch_client = false;
  co_return Woken::early_bytes;
}

// Waits for the answer, the ask timeout, or the client leaving. A reload wakes it
// (WorkerContext::asking): the question stands while the new rules still leave it to a person
// (`asked_under`; the same deadline), otherwise it is withdrawn.
asio::awaitable<WaitEnd> wait_for_answer(SessionContext& context, const DecisionState& decided,
                                         ask::QuestionBoard& board,
                                         std::shared_ptr<ask::Waiter> waiter,
                                         std::string_view method, const std::string& display,
                                         std::uint16_t port, const ask::RequestQuestion* request,
                                         const StillAsked& asked_under) {
  if (waiter->result) {
    co_return WaitEnd::answered;
  }
  asio::steady_timer wake(context.client.get_executor());
  wake.expires_after(decided.settings().ask_timeout);
  const auto deadline = wake.expiry();
  waiter->wake = &wake;
  struct Listed {
    std::vector<asio::steady_timer*>& asking;
    asio::steady_timer* timer;
    StreamDeparture* stream;
    ~Listed() {
      std::erase(asking, timer);
      if (stream != nullptr) {
        stream->watch(nullptr);
      }
    }
  } listed{context.worker.asking, &wake, decided.stream};
  context.worker.asking.push_back(&wake);
  if (decided.stream != nullptr) {
    decided.stream->watch(&wake);
  }
  const rules::Policy* seen = context.worker.policy.get();
  bool watch_client = true;
  bool withdrawn = false;
  for (;;) {
    const Woken woken = co_await sleep_until_woken(context, decided, wake, watch_client, *waiter);
    if (woken == Woken::early_bytes) {
      continue;
    }
    if (woken == Woken::client_left) {
      if (context.live.revoked) {
        // The stream's connection was closed by a reload: not the client's leaving.
        waiter->wake = nullptr;
        board.leave(waiter, false);
        co_return WaitEnd::revoked;
      }
      record_client_left(context, decided, board, waiter, method, display, port, request);
      co_return WaitEnd::client_left;
    }
    if (!waiter->result && !context.stopping() && context.worker.policy.get() != seen) {
      seen = context.worker.policy.get();
      if (asked_under(context.worker.policy)) {
        wake.expires_at(deadline);
        continue;
      }
      withdrawn = true;
    }
    break;
  }
  waiter->wake = nullptr;
  if (waiter->result) {
    co_return WaitEnd::answered;
  }
  const bool timed_out = !context.stopping() && !withdrawn;
  board.leave(waiter, timed_out);
  co_return withdrawn ? WaitEnd::withdrawn : timed_out ? WaitEnd::timed_out : WaitEnd::answered;
}

}  // namespace

asio::awaitable<std::optional<rules::Decision>> ask_about(
    SessionContext& context, const DecisionState& decided, std::string_view method,
    const rules::Host& host, std::uint16_t port, const ask::RequestQuestion* request,
    const StillAsked* still_asked) {
  const std::string display = host.display();
  ask::QuestionBoard* board = context.worker.shared.questions;
  if (board == nullptr) {
    co_return ask_default(decided, rules::Reason::ask_unavailable);
  }
  std::shared_ptr<ask::Waiter> waiter =
      board->ask(display, port, context.client.get_executor(), request);
  // Whether `policy` still leaves the question to a person: a destination's while no rule
  // decides it, a request's while `still_asked` says so; a budget's while no rule denies its
  // destination (no rule grants more).
  const StillAsked asked_under = [&](const std::shared_ptr<const rules::Policy>& policy) {
    if (request == nullptr) {
      return policy->decide(host, port).ask;
    }
    if (request->budget) {
      const rules::Decision decision = policy->decide(host, port);
      return decision.allowed() || decision.unknown;
    }
    return still_asked == nullptr || (*still_asked)(policy);
  };

  // 1. Wait for the answer, the ask timeout, or the client leaving.
  const WaitEnd end = co_await wait_for_answer(context, decided, *board, waiter, method, display,
                                               port, request, asked_under);
  if (end == WaitEnd::client_left) {
    co_return std::nullopt;
  }
  if (end == WaitEnd::revoked) {
    co_return denied(rules::Reason::ask_unavailable);  // the caller's still_wanted() says why
  }

  // 2. What the answer (or its absence) means for this request. A budget's grant is applied by
  // the first of the question's waiters to come back allowed, once for the question.
  if (context.stopping() ||
      (waiter->result && waiter->result->outcome == ask::Outcome::cancelled)) {
    // (A stream's connection is left to the drain: its other streams end each on its own.)
    context.record_shutting_down(method, display, port, decided.stream == nullptr);
    co_return std::nullopt;
  }
  if (end == WaitEnd::withdrawn) {
    rules::Decision rules_decide = denied(rules::Reason::ask_unavailable);
    rules_decide.ask = true;  // no answer: the new rules (context.worker.policy) decide
    co_return rules_decide;
  }
  const rules::Decision decision = decision_of(decided, *waiter, end == WaitEnd::timed_out);
  if (decision.allowed() && waiter->grant) {
    waiter->grant->apply_once();
  }
  co_return decision;
}

ask::RequestQuestion budget_question(const budget::Stop& stop) {
  ask::RequestQuestion question;
  question.request = stop.question;
  question.budget = true;
  question.remembered_as = stop.remembered_as;
  return question;
}

asio::awaitable<AskedForMore> ask_for_more(SessionContext& context, const DecisionState& decided,
                                           std::string_view method, const rules::Host& host,
                                           std::uint16_t port, const budget::Stop& stop) {
  if (decided.policy().options().unknown != rules::UnknownMode::ask ||
      context.worker.shared.questions == nullptr || !stop.account) {
    co_return AskedForMore::not_asked;
  }
  ask::RequestQuestion question = budget_question(stop);
  // The grant is the question's, applied once however many requests wait on it (ask::Grant):
  // each then takes what it needs, and one it does not fit is stopped again.
  question.grant = [account = stop.account, amount = stop.amount] { account->grant(amount); };
  const std::optional<rules::Decision> answered =
      co_await ask_about(context, decided, method, host, port, &question);
  if (!answered || !context.still_wanted(method, host.display(), port)) {
    co_return AskedForMore::over;
  }
  if (!answered->allowed()) {
    co_return AskedForMore::refused;
  }
  co_return AskedForMore::granted;
}

}  // namespace sandgate::session
