// The MCP stage (proxy/mcp/) in one HTTP exchange, whatever front reads and writes its bytes (an
// HTTP/1.1 request, an HTTP/2 stream: exchange/pipeline/ calls it for both): which
// requests it judges (a POST to a host with MCP lines; the GET that opens the server's stream has
// its answer filtered), which it refuses before anything is sent (a body it cannot judge: one on
// another method, in a content coding, or an upgrade to frames it does not read), the judgement
// of a body read ahead (asking a person under --unknown=ask, the decision lines, /metrics, the
// budgets' extra calls of a batch), and the answer's filter.
// The front does the I/O at the call points proxy/mcp/README.md lists; this unit decides.
//
// Runs on the session's worker thread, as the exchange does. Holds the policy snapshot it was
// opened with for the exchange (the stage points into its rules).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/mcp/response_filter.hpp"
#include "proxy/session/admission.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::session::exchange {

class McpExchange {
 public:
  // What became of a judged request body.
  struct Verdict {
    enum class Action : std::uint8_t {
      forward,  // send `body` (its length changed when `body_changed`)
      answer,   // write `answer` to the client, send nothing upstream
      refused,  // the budgets refused the calls of a batch: answer `refusal` as the gate does
      over,     // the client left while a person was asked (its line written): end quietly
    };
    Action action = Action::forward;
    std::string body;
    bool body_changed = false;
    mcp::GateAnswer answer;
    std::optional<Refusal> refusal;
  };

  McpExchange() = default;

  // Opens the stage for a request to host:port with `head` (as the client sent it), with the
  // rules the request is `decided` with (which must outlive the stage: its questions and the
  // budgets' count go by it); `has_body`: the request carries a body; `usual`: the transport
  // the server answered this connection in last; `dialled`: the address the origin was dialled
  // at (the budgets' count). Nothing happens when the host has no MCP lines.
  void open(SessionContext& context, DecisionState& decided,
            const boost::beast::http::request_header<>& head, bool has_body,
            const rules::Host& host, std::uint16_t port, std::optional<mcp::Transport> usual,
            std::optional<rules::IpAddress> dialled);

  // A request to a host with MCP lines that cannot be judged, refused before anything is sent
  // (bad-request): a body on a method other than POST (a lax server may read JSON-RPC from any),
  // a POST body in a content coding (a server may decode it into another body than the one
  // judged), an upgrade (WebSocket frames would carry calls the stage never reads).
  const std::optional<Refusal>& refusal() const { return refusal_; }

  // The request's body is judged: read it ahead (at most body_limit()) and judge() it.
  bool judges_request() const { return post_; }
  // At most this much of the body is read ahead: one byte over the stage's limit, which the
  // stage then answers 413.
  std::size_t body_limit() const;
  // The answer goes through the filter (a judged POST's, or a GET's event stream).
  bool filters_response() const { return stage_ != nullptr; }

  // On the head as the origin gets it: asks for an answer the filter can read (no compression).
  void prepare(boost::beast::http::request_header<>& head) const;

  // Judges the body read ahead (at most body_limit() bytes of it: more is answered 413), asking
  // a person for each call no line decides under --unknown=ask; writes the decision lines,
  // counts the calls, and takes a batch's further calls from the request budgets.
  boost::asio::awaitable<Verdict> judge(std::string body);

  // What the answer's head says, as start_response() reads it.
  struct AnswerHead {
    unsigned status = 0;
    std::string_view content_type;  // the first Content-Type field
    std::size_t content_types = 0;  // how many Content-Type fields it has
    // A content coding other than identity, or a transfer coding other than chunked, named in
    // any of its fields ("" when none: secrets::coding_other_than).
    std::string coding;
    bool has_body = true;
  };
  // The answer's filter, from its head. `problem` set (a sentence) when it must be read and
  // cannot be (compressed, two Content-Type fields, a type the gate does not read): a 502.
  mcp::ResponseFilter::Mode start_response(const AnswerHead& head,
                                           std::optional<std::string>& problem);
  mcp::ResponseFilter& filter() { return *filter_; }
  // The most of an answer held whole to filter (16 MiB).
  std::size_t filter_limit() const { return stage_->setting().limits.response.max_bytes; }
  // The transport the server answered in (the connection's next `usual`).
  std::optional<mcp::Transport> seen() const;

 private:
  boost::asio::awaitable<std::optional<std::vector<mcp::PersonAnswer>>> ask(
      const std::vector<mcp::Question>& questions);
  void record(const mcp::Judgement& judgement);

  SessionContext* context_ = nullptr;
  DecisionState* decided_ = nullptr;
  rules::Host host_;
  std::uint16_t port_ = 0;
  std::optional<rules::IpAddress> dialled_;
  std::string path_;                             // as the log names it
  std::shared_ptr<const rules::Policy> policy_;  // kept alive: the stage points into it
  std::string method_;
  std::string accept_;
  std::optional<mcp::Transport> usual_;
  bool post_ = false;
  bool stream_asked_ = false;  // a GET whose Accept names text/event-stream
  std::optional<Refusal> refusal_;
  std::unique_ptr<mcp::McpStage> stage_;
  std::unique_ptr<mcp::ResponseFilter> filter_;
  mcp::ResponsePlan plan_;
};

}  // namespace sandgate::session::exchange
