// The MCP stage in one HTTP exchange (mcp_exchange.hpp).
#include "proxy/session/exchange/mcp_exchange.hpp"

#include <boost/beast/core/string.hpp>
#include <utility>

#include "proxy/ask/question_board.hpp"
#include "proxy/mcp/call_tally.hpp"
#include "proxy/secrets/request_secrets.hpp"
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/exchange/request_admission.hpp"
#include "rules/ascii.hpp"
#include "rules/policy.hpp"

namespace sandgate::session::exchange {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

// Why a request to a host with MCP lines cannot be judged, if it cannot.
std::optional<std::string> unjudgeable(const http::request_header<>& head, bool has_body) {
  if (head.count(http::field::upgrade) > 0) {
    return "the request asks to upgrade the connection (" +
           std::string(head[http::field::upgrade].substr(0, 32)) +
           ") to a host with MCP rules: the gate judges MCP calls in HTTP bodies, never in the "
           "frames of an upgraded connection.";
  }
  if (head.method() != http::verb::post && has_body) {
    return "the request is a " + std::string(head.method_string().substr(0, 16)) +
           " with a body to a host with MCP rules: the gate judges MCP calls in POST bodies "
           "only, and a server may read a call from any body.";
  }
  if (head.method() == http::verb::post) {
    for (const auto& field : head) {
      if (field.name() != http::field::content_encoding) {
        continue;
      }
      if (const std::string coding = secrets::coding_other_than(field.value(), "identity");
          !coding.empty()) {
        return "the request body is in a content coding (" + coding +
               "): the gate judges MCP calls in bodies as sent, and a server may decode one "
               "into another body than the one judged.";
      }
    }
  }
  return std::nullopt;
}

}  // namespace

void McpExchange::open(SessionContext& context, DecisionState& decided,
                       const http::request_header<>& head, bool has_body, const rules::Host& host,
                       std::uint16_t port, std::optional<mcp::Transport> usual,
                       std::optional<rules::IpAddress> dialled) {
  const rules::McpRules& rules = decided.policy().requests().mcp();
  if (!rules.judges(host, port)) {
    return;
  }
  if (auto why = unjudgeable(head, has_body)) {
    refusal_ = Refusal(rules::Reason::bad_request, std::move(*why));
    return;
  }
  const bool post = head.method() == http::verb::post;
  // Every POST is read as JSON-RPC, whatever its Content-Type (a lax server may read any body
  // as one); the GET that opens the server's stream has its lists filtered; others (a DELETE
  // ending a session) go on as they are.
  if (!post && head.method() != http::verb::get) {
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
  stream_asked_ = rules::ascii_lower(accept_).find("text/event-stream") != std::string::npos;
  mcp::Setting setting;
  setting.rules = &policy_->requests().mcp();
  setting.host = host;
  setting.port = port;
  setting.ask = policy_->options().unknown == rules::UnknownMode::ask;
  setting.report_only = decided.reports(rules::Reason::request_denied);
  setting.keep_arguments = decided.settings().log_mcp_arguments;
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
    line.arguments = call.arguments;
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

mcp::ResponseFilter::Mode McpExchange::start_response(const AnswerHead& head,
                                                      std::optional<std::string>& problem) {
  if (!filter_) {
    filter_ = post_ ? std::make_unique<mcp::ResponseFilter>(*stage_, std::move(plan_))
                    : std::make_unique<mcp::ResponseFilter>(*stage_, stream_asked_);
  }
  const mcp::ResponseFilter::Mode mode =
      filter_->start(head.status, head.content_type, head.has_body);
  const bool read =
      mode == mcp::ResponseFilter::Mode::json || mode == mcp::ResponseFilter::Mode::sse;
  if (mode == mcp::ResponseFilter::Mode::refuse) {
    problem = filter_->refusal();
  } else if (read && !head.coding.empty()) {
    // Asked for none (prepare): an answer the filter cannot read is not passed unread.
    problem = "the MCP server sent a compressed answer (" + head.coding +
              "), though asked for none: the gate cannot filter it.";
  } else if (read && head.content_types > 1) {
    // A client may join them ("application/json, text/event-stream") and read the body in
    // another way than the gate.
    problem =
        "the MCP server sent two Content-Type fields: the gate cannot tell how a client "
        "would read the answer.";
  }
  return mode;
}

std::optional<mcp::Transport> McpExchange::seen() const {
  return filter_ ? filter_->seen() : std::nullopt;
}

}  // namespace sandgate::session::exchange
