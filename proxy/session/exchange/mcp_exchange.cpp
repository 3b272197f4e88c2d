// The MCP stage in one HTTP exchange (mcp_exchange.hpp).
#include "proxy/session/exchange/mcp_exchange.hpp"

#include <boost/beast/core/string.hpp>
#include <utility>

#include "proxy/ask/question_board.hpp"
#include "proxy/mcp/call_tally.hpp"
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/exchange/request_admission.hpp"
#include "rules/policy.hpp"

namespace sandgate::session::exchange {

namespace asio = boost::asio;
namespace http = boost::beast::http;

void McpExchange::open(SessionContext& context, DecisionState& decided,
                       const http::request_header<>& head, const rules::Host& host,
                       std::uint16_t port, std::optional<mcp::Transport> usual,
                       std::optional<rules::IpAddress> dialled) {
  const rules::McpRules& rules = decided.policy().requests().mcp();
  const bool post = head.method() == http::verb::post;
  // Every POST is read as JSON-RPC, whatever its Content-Type (a lax server may read any body
  // as one); the GET that opens the server's stream has its lists filtered; others go on as
  // they are.
  if (!rules.judges(host, port) || (!post && head.method() != http::verb::get)) {
    return;
  }
  context_ = &context;
  decided_ = &decided;
  policy_ = decided.policy_snapshot();
  host_ = host;
  port_ = port;
  dialled_ = dialled;
  method_ = std::string(head.method_string());
  path_ = std::string(logged_path(head.target()));
  accept_ = std::string(head[http::field::accept]);
  usual_ = usual;
  post_ = post;
  mcp::Setting setting;
  setting.rules = &policy_->requests().mcp();
  setting.host = host;
  setting.port = port;
  setting.ask = policy_->options().unknown == rules::UnknownMode::ask;
  setting.report_only = decided.reports(rules::Reason::request_denied);
  stage_ = std::make_unique<mcp::McpStage>(std::move(setting));
}

std::size_t McpExchange::body_limit() const {
  return stage_->setting().limits.request.json.max_bytes + 1;
}

void McpExchange::prepare(http::request_header<>& head) const {
  if (stage_ != nullptr) {
    head.set(http::field::accept_encoding, "identity");
  }
}

asio::awaitable<McpExchange::Verdict> McpExchange::judge(std::string body) {
  mcp::Judgement judgement = stage_->judge_request(body, accept_, usual_);
  if (judgement.action == mcp::Judgement::Action::ask) {
    auto answers = co_await ask(judgement.questions);
    if (!answers) {
      co_return Verdict{Verdict::Action::over, {}, false, {}, {}};
    }
    // Judged again with the answers, by the same rules (the stage points into them).
    mcp::Setting setting = stage_->setting();
    setting.answers = std::move(*answers);
    stage_ = std::make_unique<mcp::McpStage>(std::move(setting));
    judgement = stage_->judge_request(body, accept_, usual_);
  }
  record(judgement);
  if (judgement.action != mcp::Judgement::Action::forward) {
    co_return Verdict{Verdict::Action::answer, {}, false, std::move(judgement.answer), {}};
  }
  // The POST counted one request; a batch's further calls count too.
  for (std::size_t call = 1; call < judgement.forwarded_calls; ++call) {
    BudgetCheck counted = co_await count_against_budgets(
        *context_, *decided_, method_, rules::BudgetKind::requests, host_, port_, dialled_);
    if (counted.over) {
      co_return Verdict{Verdict::Action::over, {}, false, {}, {}};
    }
    if (counted.refusal) {
      co_return Verdict{Verdict::Action::refused, {}, false, {}, std::move(counted.refusal)};
    }
  }
  plan_ = std::move(judgement.plan);
  co_return Verdict{
      Verdict::Action::forward, std::move(judgement.body), judgement.body_changed, {}, {}};
}

// Each call no line decides, asked in turn as a request's question is (a `session` answer is
// remembered under it, `always` writes its allow line).
asio::awaitable<std::optional<std::vector<mcp::PersonAnswer>>> McpExchange::ask(
    const std::vector<mcp::Question>& questions) {
  std::vector<mcp::PersonAnswer> answers;
  const std::string where = host_.display() + ":" + std::to_string(port_);
  for (const mcp::Question& q : questions) {
    ask::RequestQuestion question;
    question.request = q.request;
    question.allow_line = q.allow_line;
    question.deny_line = q.deny_line;
    question.mcp_call = true;
    const std::optional<rules::Decision> answered =
        co_await ask_about(*context_, *decided_, method_, host_, port_, &question);
    if (!answered || !context_->still_wanted(method_, host_.display(), port_)) {
      co_return std::nullopt;
    }
    if (answered->allowed()) {
      answers.push_back({q.kind, q.name, true, "answered: " + q.request});
    } else if (withdrawn(*answered)) {
      answers.push_back({q.kind, q.name, false,
                         "the rules were reloaded while the question about " + q.request + " on " +
                             where + " waited; send the call again."});
    } else {
      answers.push_back(
          {q.kind, q.name, false, answered_refusal(*answered, q.request + " on " + where)});
    }
  }
  co_return answers;
}

// One decision line per judged call (and per refused unknown method), never its arguments; one
// bad-request line for a body the stage cannot judge; the calls counted for /metrics.
void McpExchange::record(const mcp::Judgement& judgement) {
  const std::string display = host_.display();
  log::Record base;
  base.connection_id = context_->id;
  base.client = context_->client_address;
  base.method = method_;
  base.host = display;
  base.port = port_;
  base.path = path_;
  if (judgement.unjudgeable) {
    log::Record line = base;
    line.detail = judgement.problem;
    context_->record_decision(line, rules::Reason::bad_request);
  }
  for (const mcp::Call& call : judgement.calls) {
    if (call.outcome == mcp::Call::Outcome::passed) {
      continue;
    }
    const std::string logged = call.logged();
    log::Record line = base;
    line.call = logged;
    line.rule = call.rule;
    line.detail = call.sentence;
    switch (call.outcome) {
      case mcp::Call::Outcome::allowed:
        context_->record_decision(line, rules::Reason::allowed);
        break;
      case mcp::Call::Outcome::refused:
        context_->record_decision(line, call.reason);
        break;
      case mcp::Call::Outcome::would_deny:
        context_->record_decision(line, call.reason, /*enforced=*/false);
        break;
      case mcp::Call::Outcome::passed:
        break;
    }
  }
  if (mcp::CallTally* tally = context_->worker.shared.mcp_calls) {
    tally->count(display, judgement.calls);
  }
}

mcp::ResponseFilter::Mode McpExchange::start_response(unsigned status,
                                                      std::string_view content_type,
                                                      std::string_view content_encoding,
                                                      std::optional<std::string>& problem) {
  if (!filter_) {
    filter_ = post_ ? std::make_unique<mcp::ResponseFilter>(*stage_, std::move(plan_))
                    : std::make_unique<mcp::ResponseFilter>(*stage_);
  }
  const mcp::ResponseFilter::Mode mode = filter_->start(status, content_type);
  const bool read =
      mode == mcp::ResponseFilter::Mode::json || mode == mcp::ResponseFilter::Mode::sse;
  if (read && !content_encoding.empty() && !boost::beast::iequals(content_encoding, "identity")) {
    // Asked for none (prepare): an answer the filter cannot read is not passed unread.
    problem = "the MCP server sent a compressed answer (" +
              std::string(content_encoding.substr(0, 32)) +
              "), though asked for none: the gate cannot filter it.";
  }
  return mode;
}

std::optional<mcp::Transport> McpExchange::seen() const {
  return filter_ ? filter_->seen() : std::nullopt;
}

}  // namespace sandgate::session::exchange
