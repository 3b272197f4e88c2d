// A WebSocket on an inspected connection, after its origin's 101 was checked
// (http_response_side.cpp): the 101 goes to the client, then the frame relay
// (exchange/websocket_relay.hpp) takes the two TLS streams, with the exchange's budgets and the
// host's redactions as its stages.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "proxy/session/exchange/pipeline/end_line.hpp"
#include "proxy/session/exchange/websocket_relay.hpp"
#include "proxy/session/fronts/http_exchange.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

// How an inspected WebSocket ended, for its end line.
struct InspectedWebSocketEnd {
  std::string outcome;  // "closed", "idle-timeout", "reset", "budget-exhausted", "error"
  std::optional<rules::Reason> reason;  // budget_exhausted, bad_request, bad_response
  std::string detail;                   // the tally, then why it ended when the gate ended it
  std::string rule;                     // the budget's line, with budget_exhausted
};

// The end line's outcome, reason, detail and rule for a WebSocket the frame relay ended (over
// HTTP/1.1 or HTTP/2 alike): its tally, and why the gate ended it when it did.
InspectedWebSocketEnd end_of(const exchange::WebSocketEnd& relayed);

// Writes the 101 and relays the WebSocket until it ends; x.bytes_up and x.bytes_down include
// what it carried. The caller closes the sockets and writes the end line, `exchange`, which also
// names the messages' lines where x.log_websocket_messages asks for them. Worker thread.
boost::asio::awaitable<InspectedWebSocketEnd> relay_inspected_websocket(
    Exchange& x, const exchange::EndLine& exchange);

}  // namespace sandgate::session
