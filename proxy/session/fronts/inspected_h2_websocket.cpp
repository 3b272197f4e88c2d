// WebSockets over HTTP/2 on an inspected connection. See inspected_h2_websocket.hpp.
#include "proxy/session/fronts/inspected_h2_websocket.hpp"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <cstring>
#include <utility>

#include "proxy/session/exchange/websocket_handshake.hpp"
#include "proxy/session/exchange/websocket_peer.hpp"
#include "proxy/session/exchange/websocket_relay.hpp"
#include "proxy/session/fronts/inspected_websocket.hpp"

namespace sandgate::session::h2_front {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using clock = std::chrono::steady_clock;
using Io = exchange::WebSocketPeer::Io;

// The only :protocol whose frames the gate reads (RFC 8441 section 5).
constexpr std::string_view kWebSocket = "websocket";

// One side of the WebSocket: an HTTP/2 stream, the client's (the server codec's) or the
// origin's (the client codec's). A read takes the side's DATA from its inbox, crediting the
// peer's window only as the relay takes the bytes: a side that sends faster than the other
// reads is held by its own window, and the gate holds no more than that window. A write gives
// the codec what the stream's send buffer takes and waits for room for the rest.
template <class Codec, class Id>
class StreamSide final : public exchange::WebSocketPeer {
 public:
  struct Wiring {
    Codec& codec;
    Id id;             // the client's stream id, or the origin's borrowed stream
    Inbox& incoming;   // this side's DATA, end and close (and others' events, skipped)
    Inbox& room_wait;  // where room to send on this side is signalled
    bool& room;        // set by the connection when there is room again
    const bool& closed;
    // The other side's stream was reset: what this side is written is the rest of its bytes,
    // which will never come whole. A write waiting for room ends then (the response path's
    // send_all does the same), or a side that does not read would hold it until the idle limit.
    const bool& source_reset;
    bool client_side;  // which Closed events are this side's
  };
  StreamSide(Wiring wiring, const ConnectionLinks& links) : w_(wiring), links_(links) {}

  asio::awaitable<Io> read_some(asio::mutable_buffer buffer) override {
    for (;;) {
      if (const auto stop = read_stop()) {
        co_return Io{*stop, 0};
      }
      if (offset_ < pending_.size()) {
        const std::size_t n = std::min(buffer.size(), pending_.size() - offset_);
        std::memcpy(buffer.data(), pending_.data() + offset_, n);
        offset_ += n;
        w_.codec.consume(w_.id, n);  // forwarded: the peer may send as much again
        links_.wake_writers();
        co_return Io{boost::system::error_code{}, n};
      }
      if (take_item()) {
        continue;
      }
      reading_ = true;
      co_await w_.incoming.wait();
      reading_ = false;
    }
  }

  asio::awaitable<Io> write(asio::const_buffer bytes) override {
    std::string_view rest(static_cast<const char*>(bytes.data()), bytes.size());
    std::size_t written = 0;
    while (!rest.empty()) {
      if (const auto stop = write_stop()) {
        co_return Io{*stop, written};
      }
      auto taken = w_.codec.send_data(w_.id, rest);
      if (!taken) {
        co_return Io{asio::error::broken_pipe, written};
      }
      rest.remove_prefix(*taken);
      written += *taken;
      links_.wake_writers();
      if (!rest.empty()) {
        w_.room = false;
      }
      while (!rest.empty() && !w_.room) {
        if (const auto stop = write_stop()) {
          co_return Io{*stop, written};
        }
        writing_ = true;
        co_await w_.room_wait.wait();
        writing_ = false;
      }
    }
    co_return Io{boost::system::error_code{}, written};
  }

  asio::awaitable<bool> quiet_for(std::chrono::milliseconds pause) override {
    const auto deadline = clock::now() + pause;
    for (;;) {
      while (offset_ == pending_.size() && !end_ && take_item()) {
      }
      if (aborted_read_) {
        aborted_read_ = false;
        co_return false;
      }
      if (offset_ < pending_.size() || end_ || links_.stopping || closed_here_) {
        co_return false;
      }
      reading_ = true;
      const bool passed = co_await w_.incoming.wait(deadline);
      reading_ = false;
      if (passed && w_.incoming.empty() && !aborted_read_) {
        co_return true;
      }
    }
  }

  void cancel() override {
    aborted_read_ = reading_;
    aborted_write_ = writing_;
    w_.incoming.wake();
    w_.room_wait.wake();
  }

  void close() override {
    if (!closed_here_ && !w_.closed) {
      w_.codec.reset_stream(w_.id, h2::ErrorCode::cancel);
      links_.wake_writers();
    }
    closed_here_ = true;
    w_.incoming.wake();
    w_.room_wait.wake();
  }

 private:
  // Why a read ends now, if it does: cancelled, the side's end (once its bytes are read), or
  // the stream or the connection gone.
  std::optional<boost::system::error_code> read_stop() {
    if (aborted_read_) {
      aborted_read_ = false;
      return asio::error::operation_aborted;
    }
    if (closed_here_ || links_.stopping) {
      return asio::error::connection_aborted;
    }
    if (offset_ == pending_.size() && end_) {
      return *end_;
    }
    return std::nullopt;
  }

  std::optional<boost::system::error_code> write_stop() {
    if (aborted_write_) {
      aborted_write_ = false;
      return asio::error::operation_aborted;
    }
    if (closed_here_ || links_.stopping) {
      return asio::error::connection_aborted;
    }
    if (w_.closed) {
      return asio::error::broken_pipe;
    }
    if (w_.source_reset) {
      return exchange::kSourceWasReset;
    }
    return std::nullopt;
  }

  // Takes the next event of the inbox into the side's state (a piece of DATA, its end); false
  // when there is none. The other side's events that reach this inbox too (its close) are the
  // other side's to act on: skipped.
  bool take_item() {
    if (w_.incoming.empty() || end_) {
      return false;
    }
    Item item = w_.incoming.pop();
    if (auto* data = std::get_if<h2::DataEvent>(&item)) {
      pending_ = std::move(data->bytes);
      offset_ = 0;
    } else if (std::holds_alternative<h2::EndEvent>(item) ||
               std::holds_alternative<h2::TrailersEvent>(item)) {
      end_ = asio::error::eof;  // END_STREAM: the side's orderly close (RFC 8441 section 5)
    } else if (const auto* closed = std::get_if<Closed>(&item)) {
      if (closed->by_client == w_.client_side) {
        end_ = closed->finished ? boost::system::error_code(asio::error::eof)
                                : boost::system::error_code(asio::error::connection_reset);
      }
    }
    return true;
  }

  Wiring w_;
  const ConnectionLinks& links_;
  std::string pending_;  // the DATA being read
  std::size_t offset_ = 0;
  std::optional<boost::system::error_code> end_;
  bool reading_ = false;
  bool writing_ = false;
  bool aborted_read_ = false;
  bool aborted_write_ = false;
  bool closed_here_ = false;
};

http::request_header<> fields_of(const h2::RequestHead& request) {
  http::request_header<> head;
  for (const auto& field : request.fields) {
    head.insert(field.name, field.value);
  }
  return head;
}

http::response_header<> fields_of(const h2::ResponseHead& response) {
  http::response_header<> head;
  for (const auto& field : response.fields) {
    head.insert(field.name, field.value);
  }
  return head;
}

// The stream's two sides end as RFC 8441 section 5 maps a TCP close: END_STREAM after the close
// frames, RST_STREAM CANCEL where a frame was left unfinished (a reset). The client's stream is
// then closed by its codec (RST_STREAM NO_ERROR when the client has not ended its side); the
// origin's END_STREAM is waited for at most kEndingWait, since the origin stream still open
// afterwards is reset, and a reset drops what the gate's last frames still had to send.
asio::awaitable<void> end_sides(const ConnectionLinks& links, Stream& s,
                                const exchange::WebSocketEnd& relayed) {
  if (!s.client_closed) {
    if (relayed.client_cut) {
      links.server.reset_stream(s.client, h2::ErrorCode::cancel);
    } else {
      links.server.end_stream(s.client);
    }
  }
  if (!s.origin_closed) {
    if (relayed.origin_cut) {
      links.client.reset_stream(s.origin, h2::ErrorCode::cancel);
    } else {
      links.client.end_stream(s.origin);
    }
  }
  links.wake_writers();
  const auto deadline = clock::now() + exchange::kEndingWait;
  while (!s.origin_closed && !links.stopping) {
    while (!s.down.empty()) {
      Item item = s.down.pop();
      if (const auto* data = std::get_if<h2::DataEvent>(&item)) {
        links.client.consume(s.origin, data->bytes.size());
        links.wake_writers();
      }
    }
    if (s.origin_closed) {
      break;
    }
    if (co_await s.down.wait(deadline)) {
      break;
    }
  }
}

}  // namespace

std::string_view judged_method(const h2::RequestHead& request) {
  return request.protocol == kWebSocket ? std::string_view("GET") : request.method;
}

std::optional<Refusal> as_upgrade_request(const h2::RequestHead& request,
                                          http::request_header<>& head) {
  if (request.protocol != kWebSocket) {
    return Refusal(rules::Reason::bad_request,
                   "extended CONNECT for the protocol '" + request.protocol.substr(0, 40) +
                       "' is not relayed: the gate reads only WebSocket frames (:protocol "
                       "websocket).");
  }
  head.method(http::verb::get);
  exchange::offer_no_extensions(head);
  return std::nullopt;
}

std::optional<std::string> answer_problem(const h2::RequestHead& request,
                                          const h2::ResponseHead& response) {
  if (h2::find_field(response.fields, "content-length") != nullptr) {
    return "its 200 carries a content-length, which a 2xx to CONNECT may not";
  }
  return exchange::choice_problem(fields_of(request), fields_of(response));
}

asio::awaitable<void> relay_websocket(ConnectionLinks links, Stream& s,
                                      exchange::MessageLog* messages) {
  StreamSide<h2::ServerCodec, h2::StreamId> client(
      {links.server, s.client, s.up, s.down, s.client_room, s.client_closed, s.origin_reset, true},
      links);
  StreamSide<BorrowedStreams, BorrowedStream&> origin(
      {links.client, s.origin, s.down, s.up, s.origin_room, s.origin_closed, s.client_reset, false},
      links);
  exchange::BudgetAllowance allowance(s.stages.budget);
  exchange::WebSocketOptions options;
  options.idle = links.idle;  // as on HTTP/1.1: the tunnel relay's, none when zero
  options.redactions = s.stages.redactions;
  options.allowance = s.stages.budget.active() ? &allowance : nullptr;
  options.messages = messages;
  const exchange::WebSocketEnd relayed =
      co_await exchange::relay_websocket(client, origin, options);

  s.bytes_up += relayed.tally.bytes_up;
  s.bytes_down += relayed.tally.bytes_down;
  const InspectedWebSocketEnd end = end_of(relayed);
  s.outcome = end.outcome;
  s.reason = end.reason;
  s.detail = end.detail;
  s.rule = end.rule;
  co_await end_sides(links, s, relayed);
}

}  // namespace sandgate::session::h2_front
