// The request's head, with a body of known length, taken from the destination's budgets whole
// (exchange/budget_stage.hpp): a request that does not fit is answered 429 before any of it
// leaves. Under --unknown=ask a person is asked for what it lacks: a yes sends it.
#pragma once

#include "proxy/session/exchange/pipeline/request_stage.hpp"

namespace sandgate::session::exchange {

class HeadBudget final : public RequestStage {
 public:
  std::string_view name() const override { return "head-budget"; }
  boost::asio::awaitable<Step> run(RequestRun& run) override;
};

}  // namespace sandgate::session::exchange
