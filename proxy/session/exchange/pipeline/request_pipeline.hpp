// The request direction of every inspected or plain HTTP exchange, whatever its wire: one ordered
// chain of stages, written once, which each front runs on its requests (fronts/http_forward.cpp
// for HTTP/1.1, fronts/inspected_h2.cpp for HTTP/2 streams). The front does only the wire
// (exchange_front.hpp); the stages decide:
//
//   1. admission        the request rules and questions, the budgets' count, the origin reached,
//                       the decision line (exchange/request_admission.hpp)
//   2. the head         the secrets' signature taken as the client sent it, the front's rewriting
//                       for the origin, the real values filled in; the budgets and the MCP stage
//                       opened for the exchange
//   3. mcp-judgement    a POST to a host with MCP lines read ahead and judged (mcp_judgement.hpp)
//   4. secrets-signing  a SigV4 request with a sentinel signed again (secrets_signing.hpp)
//   5. head-budget      the head taken from the budgets (head_budget.hpp)
//   then the front sends the head, and the body read ahead, if any, after it.
//
// Runs on the session's worker thread; completes on the front's executor.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>

#include "proxy/session/decision_state.hpp"
#include "proxy/session/exchange/pipeline/exchange_front.hpp"
#include "proxy/session/exchange/request_admission.hpp"
#include "proxy/session/session_context.hpp"
#include "proxy/session/wire/http_target.hpp"

namespace sandgate::session::exchange {

enum class PipelineEnd : std::uint8_t {
  not_admitted,  // refused or over at its admission: answered (or ended) and logged; no exchange
  stopped,       // admitted, then a stage ended it: the front was told how (its end line is due)
  send,          // every stage let it through: the front sends the head to the origin
};

// Runs the request's stages on `front`'s request, whose target the front has parsed and checked,
// with what the request is `decided` with (made by the front when it arrived); `origin`: how the
// front reaches the origin (admission's stage 4).
boost::asio::awaitable<PipelineEnd> run_request_pipeline(SessionContext& context,
                                                         DecisionState& decided,
                                                         ExchangeFront& front, HttpTarget target,
                                                         OriginReach& origin);

}  // namespace sandgate::session::exchange
