// The egress budgets of one exchange (budget_stage.hpp).
#include "proxy/session/exchange/budget_stage.hpp"

#include "proxy/session/ask_wait.hpp"

namespace sandgate::session::exchange {

void BudgetStage::open(SessionContext& context, const DecisionState& decided,
                       std::string_view method, const rules::Host& host, std::uint16_t port,
                       const ConnectionFacts* inspected, std::optional<rules::IpAddress> dialled) {
  context_ = &context;
  decided_ = &decided;
  method_ = method.empty() ? "-" : std::string(method);
  host_ = host;
  port_ = port;
  budget::Ledger* ledger = context.worker.shared.budgets;
  if (ledger == nullptr || decided.policy().budgets().empty()) {
    return;
  }
  if (inspected != nullptr) {
    budgets_.emplace(*ledger, decided.policy().shared_budgets(), inspected->requested, port,
                     dialled, inspected->tls_name.get());
  } else {
    budgets_.emplace(*ledger, decided.policy().shared_budgets(), host, port, dialled);
  }
}

// Report-only mode: everything is taken, and the first time a budget is overrun on this exchange
// a would-deny line says so.
void BudgetStage::take_anyway(rules::BudgetKind kind, std::uint64_t bytes) {
  auto over = budgets_->charge(kind, bytes);
  if (!over || reported_) {
    return;
  }
  reported_ = true;
  log::Record line;
  line.connection_id = context_->id;
  line.client = context_->client_address;
  const std::string host = host_.display();
  line.host = host;
  line.port = port_;
  line.method = method_;
  line.rule = over->rule;
  line.detail = over->sentence;
  record_late_denial(context_->worker, line, rules::Reason::budget_exhausted, false);
}

bool BudgetStage::enforced() const { return !decided_->reports(rules::Reason::budget_exhausted); }

std::optional<budget::Stop> BudgetStage::take_whole(rules::BudgetKind kind, std::uint64_t bytes) {
  if (!active() || bytes == 0) {
    return std::nullopt;
  }
  if (!enforced()) {
    take_anyway(kind, bytes);
    return std::nullopt;
  }
  const std::uint64_t granted = budgets_->reserve(kind, bytes);
  if (granted == bytes) {
    return std::nullopt;
  }
  budgets_->settle(kind, granted, 0);
  budget::Stop stop = budgets_->stop(kind, bytes);
  stop.sentence +=
      " The " + std::string(kind == rules::BudgetKind::up ? "request's " : "response's ") +
      std::to_string(bytes) + " bytes do not fit in the " + std::to_string(granted) + " left.";
  return stop;
}

boost::asio::awaitable<std::optional<budget::Stop>> BudgetStage::take_whole_or_ask(
    rules::BudgetKind kind, std::uint64_t bytes) {
  std::optional<budget::Stop> stop = take_whole(kind, bytes);
  // Each limit short of the bytes is one question (the tightest first); a yes grants that limit
  // what they need of it. Bounded by the limits, and one more round for bytes another
  // connection took meanwhile: a remembered `session` answer must not loop for ever.
  const std::size_t rounds = stop ? budgets_->limits(kind) + 1 : 0;
  for (std::size_t round = 0; stop && round < rounds; ++round) {
    const bool more = co_await more_granted(*stop);
    if (!more) {
      break;
    }
    std::optional<budget::Stop> next = take_whole(kind, bytes);
    if (!next) {
      co_return std::nullopt;
    }
    stop = std::move(next);
  }
  co_return stop;
}

std::size_t BudgetStage::take_piece(rules::BudgetKind kind, std::size_t size,
                                    std::optional<budget::Stop>& stop) {
  const bool paid = kind == rules::BudgetKind::up ? up_paid_ : down_paid_;
  if (!active() || paid || size == 0) {
    return size;
  }
  if (!enforced()) {
    take_anyway(kind, size);
    return size;
  }
  const auto granted = static_cast<std::size_t>(budgets_->reserve(kind, size));
  if (granted < size) {
    stop = budgets_->stop(kind, size - granted);  // the rest of the piece, from a spent limit
  }
  return granted;
}

boost::asio::awaitable<bool> BudgetStage::more_granted(const budget::Stop& stop) {
  const AskedForMore asked =
      co_await ask_for_more(*context_, *decided_, method_, host_, port_, stop);
  co_return asked == AskedForMore::granted;
}

void BudgetStage::paid_whole(rules::BudgetKind kind, bool paid) {
  (kind == rules::BudgetKind::up ? up_paid_ : down_paid_) = paid;
}

}  // namespace sandgate::session::exchange
