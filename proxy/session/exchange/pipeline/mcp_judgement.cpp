// The MCP stage's request side (mcp_judgement.hpp).
#include "proxy/session/exchange/pipeline/mcp_judgement.hpp"

#include <utility>

namespace sandgate::session::exchange {

namespace asio = boost::asio;

asio::awaitable<RequestStage::Step> McpJudgement::run(RequestRun& run) {
  McpExchange& mcp = run.stages.mcp;
  if (const auto& unjudgeable = mcp.refusal()) {
    run.front.refuse(*unjudgeable);
    co_return Step::stop;
  }
  if (!mcp.judges_request()) {
    co_return Step::go_on;
  }
  // Nothing goes to the origin before the judgement: the whole body is read first.
  const bool continued = co_await run.front.answer_continue();
  if (!continued) {
    co_return Step::stop;
  }
  const bool read = co_await run.front.read_body_ahead(mcp.body_limit(), BodyAheadFor::judging);
  if (!read) {
    co_return Step::stop;
  }
  run.body_read_ahead = true;
  McpExchange::Verdict verdict = co_await mcp.judge(run.front.body_ahead());
  switch (verdict.action) {
    case McpExchange::Verdict::Action::forward: {
      // Sent whole, with its own length: a split batch is shorter than the client's.
      run.front.send_instead(std::move(verdict.body));
      co_return Step::go_on;
    }
    case McpExchange::Verdict::Action::answer:
      co_await run.front.answer(verdict.answer);
      co_return Step::stop;
    case McpExchange::Verdict::Action::refused:
      run.front.refuse(*verdict.refusal);
      co_return Step::stop;
    case McpExchange::Verdict::Action::over:
      run.front.client_left();
      co_return Step::stop;
  }
  co_return Step::stop;
}

}  // namespace sandgate::session::exchange
