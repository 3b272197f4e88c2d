// The HTTP/2 front's streams (inspected_h2.hpp), as the connection and the units that serve a
// stream (its exchange; its WebSocket, inspected_h2_websocket.hpp) share them: one client stream,
// its origin stream (borrowed of a shared origin connection, session/h2_origin.hpp), what its
// stages carried, and the two inboxes through which the connection's loop and the origin
// connection hand each direction its events.
//
// Single-threaded: everything here lives on the connection's worker thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/secrets/redaction.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/exchange/h2/server_codec.hpp"
#include "proxy/session/exchange/pipeline/exchange_front.hpp"
#include "proxy/session/exchange/request_admission.hpp"
#include "proxy/session/fronts/http_exchange.hpp"
#include "proxy/session/h2_origin.hpp"
#include "rules/reason.hpp"

namespace sandgate::session::h2_front {

namespace h2 = exchange::h2;

// What a stream's direction is told by the connection's loops.
struct Closed {
  bool by_client = false;  // the client's stream ended (reset, or both sides over)
  h2::ErrorCode code = h2::ErrorCode::no_error;
  bool finished = false;  // it ended cleanly
  bool by_gate = false;   // the gate reset it, having decided the stream's end already
  // The origin connection's codec ended it for a limit (held_too_much, ...): the gate's doing,
  // not the origin's, and the end line says which.
  std::optional<h2::StreamProblem> codec_problem = std::nullopt;
};
using Item = std::variant<h2::InterimHeadEvent, h2::ResponseHeadEvent, h2::DataEvent,
                          h2::TrailersEvent, h2::EndEvent, Closed>;

// Events for one direction of a stream, and the wake-up of the coroutine that takes them.
class Inbox {
 public:
  explicit Inbox(const boost::asio::any_io_executor& executor) : signal_(executor) {
    signal_.expires_at(std::chrono::steady_clock::time_point::max());
  }
  void push(Item item) {
    items_.push_back(std::move(item));
    signal_.cancel();
  }
  void wake() { signal_.cancel(); }
  // An item taken too early goes back first, for the next pop.
  void put_back(Item item) { items_.push_front(std::move(item)); }
  bool empty() const { return items_.empty(); }
  Item pop() {
    Item item = std::move(items_.front());
    items_.pop_front();
    return item;
  }
  // Waits for a push or a wake (or `deadline`); true when the deadline passed first.
  boost::asio::awaitable<bool> wait(std::chrono::steady_clock::time_point deadline =
                                        std::chrono::steady_clock::time_point::max()) {
    signal_.expires_at(deadline);
    auto [error] = co_await signal_.async_wait(use_tuple);
    signal_.expires_at(std::chrono::steady_clock::time_point::max());
    co_return !error;
  }

 private:
  std::deque<Item> items_;
  boost::asio::steady_timer signal_;
};

struct Stream;

// Where a shared origin connection's events for a stream go: the stream's client connection.
class OriginEventsOwner {
 public:
  virtual void on_origin_event(Stream& s, h2::ClientEvent& event) = 0;

 protected:
  ~OriginEventsOwner() = default;
};

// The stream's sink on its origin connection (H2OriginStreamSink), handing its events on.
struct StreamSink final : H2OriginStreamSink {
  OriginEventsOwner* owner = nullptr;
  Stream* stream = nullptr;
  void on_origin_event(h2::ClientEvent& event) override { owner->on_origin_event(*stream, event); }
};

// One client stream and what its stages carried.
struct Stream {
  Stream(const boost::asio::any_io_executor& executor, h2::StreamId id, DecisionState decided_with)
      : client(id), decided(std::move(decided_with)), room(executor), up(executor), down(executor) {
    decided.stream = &departure;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  h2::StreamId client;
  // Wakes the stream's waits on a question when its client is gone (the connection's socket
  // carries the other streams: it cannot be watched for this one).
  StreamDeparture departure;
  // What the stream's request is decided with: the rules and settings in force when its head
  // arrived, and what its stages keep (report-only mode's denial). Its own, never the
  // connection's.
  DecisionState decided;
  // Its stream on a shared origin connection (session/h2_origin.hpp): before it is open, the
  // connection its admission's reach chose.
  BorrowedStream origin;
  StreamSink sink;
  Inbox room;               // woken when an origin connection may take it (or it is over)
  bool sent_again = false;  // opened again after the origin's GOAWAY left it out (once at most)
  h2::RequestHead request;
  bool request_ended = false;  // the head ended the client's side
  bool grpc = false;
  Inbox up;    // the client's body, trailers and end; the origin codec's room
  Inbox down;  // the origin's heads, body, trailers and end; the server codec's room
  bool origin_room = false;
  bool client_room = false;
  bool client_closed = false;
  bool client_reset = false;  // closed by the client's RST_STREAM (or a malformed message)
  bool origin_closed = false;
  // The origin's stream ended early (reset by the origin, or by the codec for a limit, not by
  // the gate): what is queued for the client will not all go, and nothing waits on it.
  bool origin_reset = false;
  bool response_started = false;
  // The origin answered the stream's extended CONNECT with a 2xx head, passed on: from now on
  // the stream carries a WebSocket's frames (inspected_h2_websocket.hpp).
  bool websocket_open = false;

  exchange::AdmittedRequest admitted;
  // What the request pipeline's stages hand to the response (exchange/pipeline/).
  exchange::ExchangeStages stages;
  // The whole body, read before the head went (a signature over it, an MCP call judged): sent
  // after the head as it is.
  std::string body_ahead;
  bool body_was_read_ahead = false;
  // Its bytes of the gate-wide total of bodies read ahead (kReadAheadTotal), as on HTTP/1.1.
  ReadAheadShare read_ahead_share;
  bool read_ahead_full = false;  // the total had no room for them
  bool answered = false;         // the gate answered the request itself (the MCP stage)

  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  unsigned status = 0;
  std::string outcome = "closed";
  std::optional<rules::Reason> reason;  // why it ended early, for the end line
  std::string detail;
  std::string rule;
};

}  // namespace sandgate::session::h2_front
