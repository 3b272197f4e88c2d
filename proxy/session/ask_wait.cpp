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

#include "proxy/ask/question_board.hpp"
#include "proxy/session/ask_wait.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

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
};

// The client left while its request waited: the question is left, the client closed and the
// decision line written.
void record_client_left(SessionContext& context, ask::QuestionBoard& board,
                        const std::shared_ptr<ask::Waiter>& waiter, std::string_view method,
                        const std::string& display, std::uint16_t port) {
  waiter->wake = nullptr;
  board.leave(waiter, false);
  boost::system::error_code ignored;
  context.client.close(ignored);
  const std::string detail = "the client left while its request waited for an answer about " +
                             display + ":" + std::to_string(port) + ".";
  log::Record line;  // views: `detail` must outlive the write
  line.connection_id = context.id;
  line.client = context.client_address;
  line.method = method;
  line.host = display;
  line.port = port;
  line.detail = detail;
  context.record_decision(line, rules::Reason::client_closed);
}

// Waits for the answer, the ask timeout, or the client leaving (its socket readable with nothing
// to read). A client that sends bytes early is not watched further: they belong to the request,
// and a readable socket would wake this loop at once again. A reload wakes it
// (WorkerContext::asking): the question stands while the new rules still leave it to a person
// (`asked_under`; the same deadline), otherwise it is withdrawn.
asio::awaitable<WaitEnd> wait_for_answer(SessionContext& context, const DecisionState& decided,
                                         ask::QuestionBoard& board,
                                         std::shared_ptr<ask::Waiter> waiter,
                                         std::string_view method, const std::string& display,
                                         std::uint16_t port, const StillAsked& asked_under) {
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
    ~Listed() { std::erase(asking, timer); }
  } listed{context.worker.asking, &wake};
  context.worker.asking.push_back(&wake);
  const rules::Policy* seen = context.worker.policy.get();
  bool watch_client = true;
  bool withdrawn = false;
  for (;;) {
    if (watch_client) {
      auto outcome = co_await (wake.async_wait(use_tuple) ||
                               context.client.async_wait(tcp::socket::wait_read, use_tuple));
      if (outcome.index() == 1) {
        if (!waiter->result && !context.stopping() && client_left(context.client)) {
          record_client_left(context, board, waiter, method, display, port);
          co_return WaitEnd::client_left;
        }
        if (!waiter->result && !context.stopping()) {
          watch_client = false;
          continue;
        }
      }
    } else {
      co_await wake.async_wait(use_tuple);
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
                                               port, asked_under);
  if (end == WaitEnd::client_left) {
    co_return std::nullopt;
  }

  // 2. What the answer (or its absence) means for this request. A budget's grant is applied by
  // the first of the question's waiters to come back allowed, once for the question.
  if (context.stopping() ||
      (waiter->result && waiter->result->outcome == ask::Outcome::cancelled)) {
    context.record_shutting_down(method, display, port);
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
