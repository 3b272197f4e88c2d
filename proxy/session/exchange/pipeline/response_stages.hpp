// The response direction's stages that both fronts run on an origin's answer, whatever its wire:
// the head refused when it cannot be searched for a secret the request carried, the head taken
// from the budgets, and the MCP stage's answer filter (read whole and filtered, passed event by
// event, or replaced by the gate's own), cleaned of the secrets' real values. The fronts read and
// write the bytes; these decide, and say why in the sentence the client and the log get.
//
// Runs on the session's worker thread, as the exchange does.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/mcp/response_filter.hpp"
#include "proxy/session/admission.hpp"
#include "proxy/session/exchange/pipeline/exchange_front.hpp"
#include "rules/budgets.hpp"
#include "rules/expected.hpp"

namespace sandgate::session::exchange {

// A response head to a request that carried a masked secret, refused (bad-response) when the gate
// could not search its body for the secret's echo: a part of the resource, or compressed
// (`coding`: a content coding other than identity, or a transfer coding other than chunked; ""
// when none). `origin`: how the sentence names the origin. Nothing when it may go on.
std::optional<Refusal> refuse_unsearchable(const ExchangeStages& stages, unsigned status,
                                           std::string_view content_type, std::string_view coding,
                                           bool has_body, std::string_view origin);

// Takes a head of `kind`, with its body when its length is known (then the body is paid with
// it), from the budgets; under --unknown=ask a person is asked for what it lacks. The stop when it
// may not go.
boost::asio::awaitable<std::optional<budget::Stop>> take_head(BudgetStage& budget,
                                                              rules::BudgetKind kind,
                                                              const HeadCost& cost);

// The answer of a request the MCP stage judged (or of its GET stream), through its filter.
class McpAnswer {
 public:
  // `origin`: how the sentences name the origin ("host:port").
  McpAnswer(ExchangeStages& stages, std::string origin);

  // From the answer's head: the filter's mode. `refusal` set (a 502) when the answer must be
  // read and cannot be; `usual` set to the transport the server answered in, when it shows one
  // (the connection's next McpExchange::open).
  mcp::ResponseFilter::Mode start(const McpExchange::AnswerHead& head,
                                  std::optional<Refusal>& refusal,
                                  std::optional<mcp::Transport>& usual);

  // Mode json: the most of the body held whole, and the refusal past it (or when the origin broke
  // off before its end).
  std::size_t limit() const { return mcp_.filter_limit(); }
  Refusal unread() const;

  // What the client gets instead of the origin's body: its status and type are the origin's
  // unless `replaced`.
  struct Made {
    bool replaced = false;
    mcp::GateAnswer answer;  // status and content_type read only when `replaced`
  };
  // Mode json: the body read whole, filtered; mode replace: the gate's own answer (the origin's
  // body dropped). Cleaned of the secrets' real values. The refusal when the filter cannot read
  // it.
  Expected<Made, Refusal> finish(std::string_view body);

  // Mode sse: a piece of the event stream in, what to send now out (possibly empty); nothing when
  // the stream must be cut (a message the filter cannot read: the client sees it break, never a
  // message the gate misread).
  std::optional<std::string> pass_events(std::string_view piece);
  // The end of the event stream: what the filter still holds.
  std::string end_events();

 private:
  McpExchange& mcp_;
  const std::vector<secrets::Redaction>* redactions_;
  std::string origin_;
  mcp::ResponseFilter::Mode mode_ = mcp::ResponseFilter::Mode::pass;
};

}  // namespace sandgate::session::exchange
