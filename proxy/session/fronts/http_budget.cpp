// An HTTP/1.1 exchange ended by a budget (the budgets themselves: exchange/budget_stage.hpp).
#include "proxy/session/fronts/http_exchange.hpp"

namespace sandgate::session {

void budget_spent(Exchange& x, budget::Stop stop, std::string_view extra) {
  x.state.budget_spent(std::move(stop.sentence) + std::string(extra), std::move(stop.rule));
}

}  // namespace sandgate::session
