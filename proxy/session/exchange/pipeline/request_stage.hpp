// One stage of the request direction, and what the stages of one request share. The driver
// (request_pipeline.hpp) runs them in order on an admitted request; each does one job on the
// head (and the body it may read ahead), through the front (exchange_front.hpp) for any I/O.
//
// Runs on the session's worker thread, as the exchange does.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string_view>

#include "proxy/session/decision_state.hpp"
#include "proxy/session/exchange/pipeline/exchange_front.hpp"
#include "proxy/session/exchange/secrets_stage.hpp"
#include "proxy/session/session_context.hpp"

namespace sandgate::session::exchange {

// One request as its stages see it, from its admission until its head goes.
struct RequestRun {
  SessionContext& context;
  DecisionState& decided;  // the rules and settings the request is decided with
  ExchangeFront& front;
  ExchangeStages& stages;  // the front's: they serve the response direction too
  SecretsStage& secrets;
  bool body_read_ahead = false;  // a stage read the whole body (front.body_ahead())
};

class RequestStage {
 public:
  enum class Step : std::uint8_t {
    go_on,  // the next stage; after the last, the head goes
    stop,   // the exchange ends here: the front was told how (refused, answered, the client gone)
  };
  virtual ~RequestStage() = default;
  // For the README's table and a reader of a stack trace.
  virtual std::string_view name() const = 0;
  virtual boost::asio::awaitable<Step> run(RequestRun& run) = 0;
};

}  // namespace sandgate::session::exchange
