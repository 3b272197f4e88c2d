// The MCP stage's request side (exchange/mcp_exchange.hpp, proxy/mcp/README.md): a request to a
// host with MCP lines that cannot be judged is refused; a POST's body is read ahead (after
// `100 Continue`) and judged, and then sent (a batch split, with its own length), answered by the
// gate, or refused. Nothing goes to the origin before the judgement.
#pragma once

#include "proxy/session/exchange/pipeline/request_stage.hpp"

namespace sandgate::session::exchange {

class McpJudgement final : public RequestStage {
 public:
  std::string_view name() const override { return "mcp-judgement"; }
  boost::asio::awaitable<Step> run(RequestRun& run) override;
};

}  // namespace sandgate::session::exchange
