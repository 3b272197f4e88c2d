// Egress budgets on an HTTP exchange, plain or inspected. See take_whole() in http_exchange.hpp.
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/fronts/http_exchange.hpp"

namespace sandgate::session {
namespace {

// Report-only mode: everything is taken, and the first time a budget is overrun on this exchange
// a would-deny line says so.
void take_anyway(Exchange& x, rules::BudgetKind kind, std::uint64_t bytes) {
  auto over = x.budgets->charge(kind, bytes);
  if (!over || x.budget_reported) {
    return;
  }
  x.budget_reported = true;
  SessionContext& context = x.context;
  log::Record line;
  line.connection_id = context.id;
  line.client = context.client_address;
  line.host = x.host.display();
  line.port = x.port;
  line.method = x.method.empty() ? std::string_view("-") : x.method;
  line.rule = over->rule;
  line.detail = over->sentence;
  record_late_denial(context.worker, line, rules::Reason::budget_exhausted, false);
}

bool enforced(const Exchange& x) { return !x.context.reports(rules::Reason::budget_exhausted); }

}  // namespace

std::optional<budget::Stop> take_whole(Exchange& x, rules::BudgetKind kind, std::uint64_t bytes) {
  if (!x.budgets || x.budgets->empty() || bytes == 0) {
    return std::nullopt;
  }
  if (!enforced(x)) {
    take_anyway(x, kind, bytes);
    return std::nullopt;
  }
  const std::uint64_t granted = x.budgets->reserve(kind, bytes);
  if (granted == bytes) {
    return std::nullopt;
  }
  x.budgets->settle(kind, granted, 0);
  budget::Stop stop = x.budgets->stop(kind, bytes);
  stop.sentence +=
      " The " + std::string(kind == rules::BudgetKind::up ? "request's " : "response's ") +
      std::to_string(bytes) + " bytes do not fit in the " + std::to_string(granted) + " left.";
  return stop;
}

boost::asio::awaitable<std::optional<budget::Stop>> take_whole_or_ask(Exchange& x,
                                                                      rules::BudgetKind kind,
                                                                      std::uint64_t bytes) {
  std::optional<budget::Stop> stop = take_whole(x, kind, bytes);
  // Each limit short of the bytes is one question (the tightest first); a yes grants that limit
  // what they need of it. Bounded by the limits, and one more round for bytes another
  // connection took meanwhile: a remembered `session` answer must not loop for ever.
  const std::size_t rounds = stop ? x.budgets->limits(kind) + 1 : 0;
  for (std::size_t round = 0; stop && round < rounds; ++round) {
    const bool more = co_await more_granted(x, *stop);
    if (!more) {
      break;
    }
    std::optional<budget::Stop> next = take_whole(x, kind, bytes);
    if (!next) {
      co_return std::nullopt;
    }
    stop = std::move(next);
  }
  co_return stop;
}

std::size_t take_piece(Exchange& x, rules::BudgetKind kind, std::size_t size,
                       std::optional<budget::Stop>& stop) {
  const bool paid = kind == rules::BudgetKind::up ? x.up_paid : x.down_paid;
  if (!x.budgets || x.budgets->empty() || paid || size == 0) {
    return size;
  }
  if (!enforced(x)) {
    take_anyway(x, kind, size);
    return size;
  }
  const auto granted = static_cast<std::size_t>(x.budgets->reserve(kind, size));
  if (granted < size) {
    stop = x.budgets->stop(kind, size - granted);  // the rest of the piece, from a spent limit
  }
  return granted;
}

boost::asio::awaitable<bool> more_granted(Exchange& x, const budget::Stop& stop) {
  const AskedForMore asked = co_await ask_for_more(x.context, x.method, x.host, x.port, stop);
  co_return asked == AskedForMore::granted;
}

void budget_spent(Exchange& x, budget::Stop stop, std::string_view extra) {
  x.state.budget_spent(std::move(stop.sentence) + std::string(extra), std::move(stop.rule));
}

}  // namespace sandgate::session
