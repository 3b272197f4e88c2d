// A request the client signed (SigV4) with a sentinel is signed again with the real key
// (exchange/secrets_stage.hpp). A request the gate would not sign is refused before any body is
// read (it costs no buffer); a signature over the body's hash the client did not send needs the
// whole body first (read ahead, after `100 Continue`).
#pragma once

#include "proxy/session/exchange/pipeline/request_stage.hpp"

namespace sandgate::session::exchange {

class SecretsSigning final : public RequestStage {
 public:
  std::string_view name() const override { return "secrets-signing"; }
  boost::asio::awaitable<Step> run(RequestRun& run) override;
};

}  // namespace sandgate::session::exchange
