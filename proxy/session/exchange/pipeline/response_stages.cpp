// The response direction's shared stages (response_stages.hpp).
#include "proxy/session/exchange/pipeline/response_stages.hpp"

#include <utility>

#include "proxy/secrets/redaction.hpp"
#include "proxy/secrets/request_secrets.hpp"

namespace sandgate::session::exchange {

namespace asio = boost::asio;

std::optional<Refusal> refuse_unsearchable(const ExchangeStages& stages, unsigned status,
                                           std::string_view content_type, std::string_view coding,
                                           bool has_body, std::string_view origin) {
  if (!stages.carried_secret) {
    return std::nullopt;
  }
  if (auto problem = secrets::partial_response_problem(status, content_type)) {
    return Refusal(rules::Reason::bad_response,
                   std::string(origin) + " " + *problem +
                       " (the gate asked for the whole resource): a secret's echo in pieces "
                       "cannot be cleaned.");
  }
  // A content coding, or a transfer coding other than chunked (the gate offered none).
  if (has_body && !coding.empty()) {
    return Refusal(rules::Reason::bad_response,
                   std::string(origin) + " sent a compressed response (" + std::string(coding) +
                       ") to a request that carried a masked secret, though asked for none: the "
                       "gate cannot search it for the secret's real value.");
  }
  return std::nullopt;
}

asio::awaitable<std::optional<budget::Stop>> take_head(BudgetStage& budget, rules::BudgetKind kind,
                                                       const HeadCost& cost) {
  budget.paid_whole(kind, cost.body_length.has_value());
  co_return co_await budget.take_whole_or_ask(kind, cost.head_bytes + cost.body_length.value_or(0));
}

McpAnswer::McpAnswer(ExchangeStages& stages, std::string origin)
    : mcp_(stages.mcp), redactions_(stages.redactions), origin_(std::move(origin)) {}

mcp::ResponseFilter::Mode McpAnswer::start(const McpExchange::AnswerHead& head,
                                           std::optional<Refusal>& refusal,
                                           std::optional<mcp::Transport>& usual) {
  std::optional<std::string> problem;
  const mcp::ResponseFilter::Mode mode = mcp_.start_response(head, problem);
  mode_ = mode;
  if (const auto seen = mcp_.seen()) {
    usual = seen;
  }
  if (problem) {
    refusal = Refusal(rules::Reason::bad_response, origin_ + ": " + *problem);
  }
  return mode;
}

Refusal McpAnswer::unread() const {
  return Refusal(rules::Reason::bad_response,
                 origin_ + " sent an MCP answer the gate could not read whole (at most " +
                     std::to_string(limit() >> 20) + " MiB).");
}

Expected<McpAnswer::Made, Refusal> McpAnswer::finish(std::string_view body) {
  Made made;
  if (mode_ == mcp::ResponseFilter::Mode::replace) {
    made.replaced = true;
    made.answer = mcp_.filter().replacement();
  } else {
    auto filtered = mcp_.filter().finish_json(body);
    if (!filtered) {
      return Unexpected{
          Refusal(rules::Reason::bad_response,
                  origin_ + " sent an MCP answer the gate cannot read: " + filtered.error())};
    }
    made.answer.body = std::move(*filtered);
  }
  if (redactions_ != nullptr) {
    secrets::redact(made.answer.body, *redactions_);
  }
  return made;
}

std::optional<std::string> McpAnswer::pass_events(std::string_view piece) {
  auto out = mcp_.filter().feed_sse(piece);
  if (!out) {
    return std::nullopt;
  }
  if (redactions_ != nullptr) {
    secrets::redact(*out, *redactions_);  // whole events: an echo never spans two
  }
  return std::move(*out);
}

std::string McpAnswer::end_events() {
  std::string tail = mcp_.filter().end_sse();
  if (redactions_ != nullptr) {
    secrets::redact(tail, *redactions_);
  }
  return tail;
}

}  // namespace sandgate::session::exchange
