// The request head taken from the budgets (head_budget.hpp).
#include "proxy/session/exchange/pipeline/head_budget.hpp"

#include <utility>

namespace sandgate::session::exchange {

namespace asio = boost::asio;

asio::awaitable<RequestStage::Step> HeadBudget::run(RequestRun& run) {
  BudgetStage& budget = run.stages.budget;
  if (!budget.active()) {
    co_return Step::go_on;
  }
  const HeadCost cost = run.front.head_cost();
  budget.paid_whole(rules::BudgetKind::up, cost.body_length.has_value());
  auto stop = co_await budget.take_whole_or_ask(rules::BudgetKind::up,
                                                cost.head_bytes + cost.body_length.value_or(0));
  if (run.front.client_gone()) {
    co_return Step::stop;
  }
  if (stop) {
    run.front.budget_spent(std::move(*stop));
    co_return Step::stop;
  }
  co_return Step::go_on;
}

}  // namespace sandgate::session::exchange
