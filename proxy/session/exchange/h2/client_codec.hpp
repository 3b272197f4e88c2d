// The gate as an HTTP/2 client, towards an origin that offered "h2". Sans-IO like ServerCodec: the
// owner moves the bytes (receive(), pending_output(), consume_output()) and takes the events
// (next_event()). Built on nghttp2 with the gate's limits (limits.hpp) and checks
// (message_checks.hpp): a response that breaks RFC 9113 section 8 or a limit resets its stream
// alone, and the owner hears why (StreamClosedEvent::problem).
//
// A stream, as the owner sees it:
//   submit_request()            the head (and, unless end_stream, send_data()... then
//                               submit_trailers() or end_stream())
//   InterimHeadEvent...         1xx heads (100, 103), if any
//   ResponseHeadEvent           the final head
//   DataEvent...                its body; consume() each piece once forwarded
//   TrailersEvent               (gRPC's grpc-status), then
//   EndEvent                    the origin's side is over
//   StreamClosedEvent           always last; retry_safe says whether the origin never
//                               processed the request (REFUSED_STREAM, above its GOAWAY)
//
// Concurrency: a request is refused (stream_limit_reached), never queued, while the connection
// has as many open streams as the origin's SETTINGS_MAX_CONCURRENT_STREAMS or the gate's own
// Limits::max_concurrent_streams, whichever is smaller: available_streams() says how many more
// it takes now, and a StreamClosedEvent or PeerSettingsEvent is when that may change. The origin
// pool above decides whether a refused request waits or goes on another connection. Before the
// origin's first SETTINGS (PeerSettingsEvent), nghttp2 assumes the gate's limit.
//
// GOAWAY from the origin: a GoawayEvent; streams above its last_stream_id close with
// Closer::goaway and retry_safe; no new request is taken (going_away).
//
// Ownership: copies what it is given, owns what it hands out. Thread: single-threaded; every call
// on the owner's strand. No call blocks or does I/O.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "proxy/session/exchange/h2/connection.hpp"
#include "proxy/session/exchange/h2/events.hpp"
#include "proxy/session/exchange/h2/flood_guard.hpp"
#include "proxy/session/exchange/h2/limits.hpp"
#include "proxy/session/exchange/h2/messages.hpp"
#include "proxy/session/exchange/h2/problems.hpp"
#include "rules/expected.hpp"

namespace sandgate::session::exchange::h2 {

struct ClientOptions {
  Limits limits;
  Clock clock;  // empty: steady_clock
};

// An interim response (1xx but 101); the final one follows.
struct InterimHeadEvent {
  StreamId stream = 0;
  ResponseHead head;
};

// The final response, checked.
struct ResponseHeadEvent {
  StreamId stream = 0;
  ResponseHead head;
  bool end_stream = false;  // no body follows (an EndEvent follows too)
};

using ClientEvent =
    std::variant<InterimHeadEvent, ResponseHeadEvent, DataEvent, TrailersEvent, EndEvent,
                 SendReadyEvent, StreamClosedEvent, GoawayEvent, PeerSettingsEvent, PingAckEvent>;

class ClientCodec final : private ConnectionHooks {
 public:
  // Queues the connection preface and the gate's SETTINGS (server push off) as the first output.
  explicit ClientCodec(ClientOptions options = {});
  ~ClientCodec();
  ClientCodec(const ClientCodec&) = delete;
  ClientCodec& operator=(const ClientCodec&) = delete;

  // As ServerCodec's: the origin's bytes in, events out, bytes to write.
  ConnectionError receive(std::string_view bytes);
  std::optional<ClientEvent> next_event();
  std::string_view pending_output();
  void consume_output(std::size_t bytes);
  bool finished() const;
  bool wants_read() const;
  ConnectionError error() const;
  const std::string& error_detail() const;

  // A request: its stream, or why not (stream_limit_reached, going_away,
  // connect_protocol_not_supported for :protocol to an origin without RFC 8441, invalid_head).
  // end_stream: no body follows.
  Expected<StreamId, SubmitError> submit_request(const RequestHead& head, bool end_stream);
  // As ServerCodec's, for the request body.
  Expected<std::size_t, SubmitError> send_data(StreamId stream, std::string_view bytes);
  std::size_t send_capacity(StreamId stream) const;
  SubmitError submit_trailers(StreamId stream, FieldList trailers);
  SubmitError end_stream(StreamId stream);
  SubmitError reset_stream(StreamId stream, ErrorCode code);
  void consume(StreamId stream, std::size_t bytes);
  // PING; a PingAckEvent when the origin answers (a liveness check of a pooled connection).
  void ping();
  // GOAWAY NO_ERROR: the streams open go on, no new request is taken.
  void shutdown();
  void terminate(ErrorCode code);

  // Requests the connection takes now (0 after a GOAWAY either way).
  std::size_t available_streams() const;
  std::size_t open_streams() const;
  // The origin's SETTINGS came, and whether it allows extended CONNECT (RFC 8441).
  bool peer_settings_received() const;
  bool peer_allows_connect_protocol() const;

 private:
  void on_header_block(StreamId stream, StreamState& state, bool end_stream) override;
  void on_block_refused(StreamId stream, StreamState& state) override;
  void on_event(ConnectionEvent event) override;
  void take_response_head(StreamId stream, StreamState& state, bool end_stream);
  void take_trailers(StreamId stream, StreamState& state);

  ClientOptions options_;
  std::deque<ClientEvent> events_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace sandgate::session::exchange::h2
