// The first stage of every HTTP exchange, whatever its wire (an HTTP/1.1 request on a plain or
// inspected connection, an HTTP/2 stream): the admission pipeline run on one request. Its
// framing and misplaced sentinels are refused first; then the destination, the request rules
// (a question when no line decides), the request budgets, the origin reached (through the
// front's OriginReach: a kept-alive connection, a dial, or the connection the front holds), the
// request counted, the destination registered for reloads, and the decision line written.
//
// A reload during any of its waits makes the decision stale: the whole admission is made again
// with the rules now in force, and what a person answered stands only for what it was asked
// about, while the new rules still leave that to a person.
//
// The stage decides and logs the decision; it writes nothing to the client. A refusal is handed
// back for the front to answer in its own wire format (record_refusal logs it there).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/session/admission.hpp"
#include "proxy/session/connection_facts.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/session_context.hpp"
#include "proxy/session/wire/http_target.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::session::exchange {

// A request the admission pipeline let through, its origin reached and registered, its decision
// line written. (Before that, the names the refusal's line uses.)
struct AdmittedRequest {
  std::string method;
  HttpTarget target;
  std::string display;  // the host as the log names it
  std::string where;    // host:port, the key a kept-alive upstream is reused for
  std::string path;     // the path as the log names it (logged_path)
  std::string rule;     // the request rule that allowed it, if one did
};

// How a front reaches the origin of an admitted request: stage 4 of the admission pipeline, and
// what the stages after it need to know of the connection reached.
class OriginReach {
 public:
  virtual ~OriginReach() = default;
  // Reaches the origin for `request` (a kept-alive connection, a dial, or the connection the
  // front already holds), with the rules it is `decided` with; makes `admission` refused (or
  // over) when it cannot.
  virtual boost::asio::awaitable<void> reach(SessionContext& context, DecisionState& decided,
                                             Admission& admission,
                                             const AdmittedRequest& request) = 0;
  // The checked address of the name the connection reached was dialled at, if any.
  virtual std::optional<rules::IpAddress> dialled() const = 0;
  // The address connected to, as the decision line names it.
  virtual std::string address() const = 0;
  // The tunnel's facts when the request comes from an inspected connection; null for plain HTTP.
  virtual const ConnectionFacts* inspected() const = 0;
};

struct RequestAdmission {
  enum class Status : std::uint8_t {
    admitted,  // go on: the decision line is written
    refused,   // the front answers `refusal` (and logs it with record_refusal)
    over,      // nothing to answer: the client is gone, or the line was written already
  };
  Status status = Status::over;
  AdmittedRequest request;
  Refusal refusal;
};

// Runs the admission pipeline on `head`, whose target the front has parsed and checked (plain
// HTTP: the absolute-form URL; inspected: the connection's own host), with what the request is
// `decided` with (made by the front when it arrived; a reload during a wait renews its rules).
boost::asio::awaitable<RequestAdmission> admit_request(
    SessionContext& context, DecisionState& decided,
    const boost::beast::http::request_header<>& head, HttpTarget target, OriginReach& origin);

// The sentence of the refusal a person's answer to a question about `asked` gave ("tool
// delete_repo on mcp.example.com:443"): denied, not answered in time, or nobody to ask.
std::string answered_refusal(const rules::Decision& answer, std::string_view asked);

// An inspected connection opened to an address leads there whatever name its requests give
// (the admission pipeline decided that name): each request holds the address to the rules it is
// decided with too, as they would hold a new tunnel to it. Nothing when it may go on (or
// report-only mode lets it, keeping the denial for the request's line).
std::optional<Refusal> refuse_address(DecisionState& decided, const ConnectionFacts& facts);

}  // namespace sandgate::session::exchange
