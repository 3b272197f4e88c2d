// A WebSocket on an inspected connection. See inspected_websocket.hpp.
#include "proxy/session/fronts/inspected_websocket.hpp"

#include <boost/beast/http/write.hpp>
#include <sstream>

#include "proxy/relay/tunnel_relay.hpp"
#include "proxy/session/exchange/pipeline/message_lines.hpp"
#include "proxy/session/exchange/websocket_relay.hpp"
#include "proxy/session/wire/http_head.hpp"

namespace sandgate::session {
namespace http = boost::beast::http;

InspectedWebSocketEnd end_of(const exchange::WebSocketEnd& relayed) {
  using How = exchange::WebSocketEnd::How;
  InspectedWebSocketEnd end;
  end.detail = "WebSocket: " + relayed.tally.summary() + ".";
  if (relayed.tally.redacted > 0) {
    end.detail += " " + std::to_string(relayed.tally.redacted) +
                  " real values of masked secrets cleaned from what the origin sent.";
  }
  if (!relayed.problem.empty()) {
    end.detail += " " + relayed.problem;
  }
  switch (relayed.how) {
    case How::closed:
      end.outcome = relay::to_string(relay::Outcome::closed);
      break;
    case How::idle_timeout:
      end.outcome = relay::to_string(relay::Outcome::idle_timeout);
      break;
    case How::reset:
      end.outcome = relay::to_string(relay::Outcome::reset);
      break;
    case How::budget_exhausted:
      end.outcome = relay::to_string(relay::Outcome::budget_exhausted);
      end.reason = rules::Reason::budget_exhausted;
      if (relayed.budget) {
        end.rule = relayed.budget->rule;
      }
      break;
    case How::client_broke:
      end.outcome = "error";
      end.reason = rules::Reason::bad_request;
      break;
    case How::origin_broke:
      end.outcome = "error";
      end.reason = rules::Reason::bad_response;
      break;
  }
  return end;
}

boost::asio::awaitable<InspectedWebSocketEnd> relay_inspected_websocket(
    Exchange& x, const exchange::EndLine& exchange) {
  SessionContext& context = x.context;
  auto& response = x.response->get();
  strip_hop_by_hop(response, true);
  response.set(http::field::connection, "Upgrade");
  add_via(response);
  response.version(11);
  // The 101 head is bytes towards the client like any other; the frames behind either head are
  // the relay's, taken frame by frame.
  if (x.stages.budget.active()) {
    std::ostringstream serialized;
    serialized << response.base();
    if (auto stop = x.stages.budget.take_whole(rules::BudgetKind::down, serialized.str().size())) {
      InspectedWebSocketEnd spent;
      spent.outcome = relay::to_string(relay::Outcome::budget_exhausted);
      spent.reason = rules::Reason::budget_exhausted;
      spent.rule = stop->rule;
      spent.detail = stop->sentence;
      co_return spent;
    }
  }
  if (!co_await write_response_head(x, response)) {
    co_return InspectedWebSocketEnd{relay::to_string(relay::Outcome::reset),
                                    std::nullopt,
                                    "the client went before the 101 reached it.",
                                    {}};
  }

  exchange::BudgetAllowance allowance(x.stages.budget);
  exchange::WebSocketOptions options;
  options.idle = context.settings().idle_timeout;  // as the tunnel relay: none when zero
  options.redactions = x.stages.redactions;
  options.allowance = x.stages.budget.active() ? &allowance : nullptr;
  std::optional<exchange::MessageLines> messages;
  if (x.log_websocket_messages) {
    messages.emplace(context, exchange);
    options.messages = &*messages;
  }
  exchange::StreamPeer client(context.client_stream, context.client, x.client_buffer);
  exchange::StreamPeer origin(context.upstream_stream, context.upstream, x.upstream.buffer);
  const exchange::WebSocketEnd relayed =
      co_await exchange::relay_websocket(client, origin, options);
  x.bytes_up += relayed.tally.bytes_up;
  x.bytes_down += relayed.tally.bytes_down;
  co_return end_of(relayed);
}

}  // namespace sandgate::session
