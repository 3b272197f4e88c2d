// The events both codecs give their owner about a stream's body, its end and the connection. The
// heads are each codec's own (server_codec.hpp: requests; client_codec.hpp: responses).
//
// A stream's events, in order: its head (or a refusal), DataEvents, at most one TrailersEvent,
// then one EndEvent when the peer's side ended cleanly; and, once both sides are over or the
// stream was reset, exactly one StreamClosedEvent, after which the stream is gone. A stream the
// owner never heard of (reset before its head was whole) gives no event at all.
#pragma once

#include <cstdint>
#include <string>

#include "proxy/session/exchange/h2/messages.hpp"
#include "proxy/session/exchange/h2/problems.hpp"

namespace sandgate::session::exchange::h2 {

// A piece of the peer's body, in order. The bytes count against the peer's flow-control windows
// until the owner calls consume(stream, bytes.size()) (when it has forwarded them).
struct DataEvent {
  StreamId stream = 0;
  std::string bytes;
};

// The peer's trailer fields; the peer's side of the stream ends with them (an EndEvent follows).
struct TrailersEvent {
  StreamId stream = 0;
  FieldList fields;
};

// The peer's side of the stream ended cleanly (END_STREAM): no more data or trailers come.
struct EndEvent {
  StreamId stream = 0;
};

// The owner was refused room for `stream`'s body (send_data() took less than it was given) and
// there is room again: at least half a stream's buffer.
struct SendReadyEvent {
  StreamId stream = 0;
};

// Who ended a stream.
enum class Closer : std::uint8_t {
  finished,  // both sides ended cleanly
  peer,      // the peer reset it (RST_STREAM with `code`)
  owner,     // the owner reset it
  codec,     // the codec reset it for a malformed message or a limit (`problem` says which)
  goaway,    // a GOAWAY (the peer's, or the gate's own at shutdown) left it out
};

// The stream is over; it is forgotten, and calls about it are refused (unknown_stream).
struct StreamClosedEvent {
  StreamId stream = 0;
  Closer by = Closer::finished;
  ErrorCode code = ErrorCode::no_error;         // the RST_STREAM's or GOAWAY's
  StreamProblem problem = StreamProblem::none;  // with Closer::codec
  // The peer did not process the request, so it may be sent again (client side: REFUSED_STREAM,
  // a stream above the origin's GOAWAY, or a request never sent; RFC 9113 section 8.7).
  bool retry_safe = false;
};

// The peer sent GOAWAY: it processes no stream above `last_stream_id` (those close with
// Closer::goaway and retry_safe), and takes no new one.
struct GoawayEvent {
  StreamId last_stream_id = 0;
  ErrorCode code = ErrorCode::no_error;
};

// (client) The origin's SETTINGS arrived (the first, or a change): what it allows now.
struct PeerSettingsEvent {
  std::uint32_t max_concurrent_streams = 0;  // the origin's, before the gate's own cap
  bool connect_protocol = false;  // SETTINGS_ENABLE_CONNECT_PROTOCOL: extended CONNECT works
};

// (client) The origin answered the owner's ping().
struct PingAckEvent {};

}  // namespace sandgate::session::exchange::h2
