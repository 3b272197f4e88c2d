// What the request pipeline (request_pipeline.hpp) asks of the front that carries an exchange:
// the I/O its stages need, in the front's own wire. The HTTP/1.1 front (fronts/http_forward.cpp)
// and the HTTP/2 front (fronts/inspected_h2.cpp) each implement it once; the stages never see a
// socket, a parser or a codec.
//
// The stages read and change the request head in one model whatever the wire: a Beast header
// (an HTTP/2 stream's head is given as its method, path and Host, its fields as they came). What
// the stages carry to the response direction lives in ExchangeStages, which the front owns.
//
// Every call runs on the session's worker thread, as the exchange does; the coroutines complete
// on the front's executor.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/mcp/answers.hpp"
#include "proxy/secrets/redaction.hpp"
#include "proxy/session/admission.hpp"
#include "proxy/session/exchange/budget_stage.hpp"
#include "proxy/session/exchange/mcp_exchange.hpp"
#include "proxy/session/exchange/request_admission.hpp"

namespace sandgate::session::exchange {

// What the request's stages hand to the response direction: the budgets to take the response
// from, the MCP stage whose filter reads the answer, and the real values the answer is cleaned
// of.
struct ExchangeStages {
  BudgetStage budget;
  McpExchange mcp;
  // The response comes from a host masked secrets are bound to: it is cleaned of their real
  // values (null: nothing to clean). `carried_secret`: this request carried one, so a response
  // the gate cannot search (compressed, partial) is refused.
  const std::vector<secrets::Redaction>* redactions = nullptr;
  bool carried_secret = false;
};

// Why a body is read before the head goes.
enum class BodyAheadFor : std::uint8_t {
  signing,  // a SigV4 signature covers its hash: a body over the limit is refused
  judging,  // the MCP stage judges it: a body over the limit is read no further, its first
            // `limit` bytes kept for the stage (which answers 413)
};

// What the head costs the budgets as the origin will get it.
struct HeadCost {
  std::uint64_t head_bytes = 0;
  // The body's length when the client's framing gives it (then the body is paid with its head).
  std::optional<std::uint64_t> body_length;
};

class ExchangeFront {
 public:
  virtual ~ExchangeFront() = default;

  // ---- before the exchange: admission ----
  // The request head, as the stages read and change it.
  virtual boost::beast::http::request_header<>& head() = 0;
  // The admission refused the request (`names`: what its line names): answer it in the wire's
  // way and log it (record_refusal). The exchange never begins.
  virtual boost::asio::awaitable<void> refuse_admission(const AdmittedRequest& names,
                                                        const Refusal& refusal) = 0;
  // The admission ended without an answer to give (the client left, a reload closed the
  // connection): its line is written.
  virtual void admission_over() = 0;
  // The request is admitted: the front sets its exchange up and hands over the stages it owns.
  virtual ExchangeStages& admitted(const AdmittedRequest& request) = 0;

  // ---- the head as the origin gets it ----
  // Whether the request carries a body.
  virtual bool has_body() const = 0;
  // The front's own rewriting of the head for the origin (HTTP/1.1: origin form, Host first,
  // hop-by-hop fields out, Via in); done after the secrets stage took the head as the client
  // sent it, before their values are filled in.
  virtual void rewrite_for_origin() = 0;
  // The head is as the origin will get it (values filled in).
  virtual void head_ready() = 0;
  // The transport the MCP server answered the connection in last.
  virtual std::optional<mcp::Transport> mcp_usual() const = 0;
  virtual HeadCost head_cost() const = 0;

  // ---- the body, before the head goes ----
  // Answers `Expect: 100-continue` (HTTP/1.1) before the gate reads a body it holds back; true
  // when there was nothing to answer. False when the client could not take it.
  virtual boost::asio::awaitable<bool> answer_continue() = 0;
  // Reads the body into body_ahead(), at most `limit` bytes (see BodyAheadFor). False when it
  // could not: the front has recorded why (refused, too slow, the client gone).
  virtual boost::asio::awaitable<bool> read_body_ahead(std::size_t limit, BodyAheadFor why) = 0;
  // The body read ahead: sent as it is after the head.
  virtual const std::string& body_ahead() const = 0;
  // The body read ahead is replaced by `body` (the MCP stage's split batch): sent whole after
  // the head, which gets its length.
  virtual void send_instead(std::string body) = 0;

  // ---- the exchange ends before the head goes ----
  // The gate answers the request itself (the MCP stage's answer): the whole response.
  virtual boost::asio::awaitable<void> answer(const mcp::GateAnswer& answer) = 0;
  // A stage refuses the request after its allow line: the refusal is its end.
  virtual void refuse(const Refusal& refusal) = 0;
  // A budget has not the room the head needs (answered 429 budget-exhausted).
  virtual void budget_spent(budget::Stop stop) = 0;
  // The client left while a stage waited on a person (the wait wrote its line).
  virtual void client_left() = 0;
  // After a wait: whether the client is gone meanwhile (then the front has recorded it).
  virtual bool client_gone() = 0;
};

}  // namespace sandgate::session::exchange
