// The gate as an HTTP/2 server: facing a client on an inspected connection (after TLS and ALPN
// "h2"; or, in tests, on plain TCP). Sans-IO: the owner reads the socket and gives the bytes to
// receive(), writes what pending_output() returns and says how much with consume_output(), and
// takes the events receive() (and pending_output()) produced from next_event(). It answers each
// stream with the submit functions. Built on nghttp2, with the gate's limits (limits.hpp) and
// checks (message_checks.hpp).
//
// A stream, as the owner sees it:
//   RequestHeadEvent            a request, checked; or RequestRejectedEvent (see there)
//   DataEvent...                its body, in pieces; consume() each once it is forwarded
//   TrailersEvent               (gRPC's, say), then
//   EndEvent                    the client's side is over
//   ...the owner: submit_response(), send_data() (as room allows), submit_trailers() or
//   end_stream(); or reset_stream() at any time
//   StreamClosedEvent           always last: both sides over, or a reset, and why
// Another stream's reset or refusal never touches this one. shutdown() sends GOAWAY: the streams
// begun go on, no new one is taken, and finished() says when the connection may close.
//
// Flow control: the client sends no more than the windows the gate advertised (limits.hpp), and a
// window opens again only as the owner consume()s what it forwarded: a slow origin slows the
// client's stream, and the gate never holds more than the windows. Each way, the owner hands
// send_data() no more than send_capacity() and waits for a SendReadyEvent when refused.
//
// Ownership: the codec copies what it is given and owns what it hands out (events are moved out).
// Thread: single-threaded; every call on the owner's strand. No call blocks or does I/O.
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

struct ServerOptions {
  // The connection's scheme: a request with another :scheme is refused (scheme_mismatch).
  std::string scheme = "https";
  // Extended CONNECT (RFC 8441, WebSockets over HTTP/2): advertise
  // SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 and take requests with :protocol. Off: a :protocol is
  // refused (the client falls back to HTTP/1.1 for WebSockets).
  bool enable_connect_protocol = false;
  Limits limits;
  Clock clock;  // empty: steady_clock
};

// A request, checked (RFC 9113 section 8 and the gate's own rules, message_checks.hpp).
struct RequestHeadEvent {
  StreamId stream = 0;
  RequestHead head;
  bool end_stream = false;  // no body follows (an EndEvent follows too)
};

// A request the codec did not pass on. With must_answer (head_too_large: a 431; plain_connect:
// the owner's refusal) the stream waits for the owner's submit_response() or reset_stream(); its
// body, if any, is dropped. Otherwise the codec has reset the stream already (PROTOCOL_ERROR for
// a malformed request, REFUSED_STREAM for too_many_open_heads) and nothing is to be done but log.
// Either way a StreamClosedEvent follows.
struct RequestRejectedEvent {
  StreamId stream = 0;
  StreamProblem problem = StreamProblem::none;
  bool must_answer = false;
};

using ServerEvent = std::variant<RequestHeadEvent, RequestRejectedEvent, DataEvent, TrailersEvent,
                                 EndEvent, SendReadyEvent, StreamClosedEvent, GoawayEvent>;

class ServerCodec final : private ConnectionHooks {
 public:
  // Queues the gate's SETTINGS (and connection window) as the first output.
  explicit ServerCodec(ServerOptions options = {});
  ~ServerCodec();
  ServerCodec(const ServerCodec&) = delete;
  ServerCodec& operator=(const ServerCodec&) = delete;

  // The client's bytes, from the connection preface on, in any pieces. Returns the connection's
  // error when it has one (then the owner writes the pending output, the GOAWAY saying why, and
  // closes); errors nghttp2 finds may also become known only as its GOAWAY goes out: error().
  ConnectionError receive(std::string_view bytes);
  // The next event, or nothing.
  std::optional<ServerEvent> next_event();
  // Bytes to write to the client (at most Limits::output_batch and a frame); the view is valid
  // until the next call on the codec. Making them can produce events (a stream closes when its
  // last frame is written).
  std::string_view pending_output();
  // `bytes` of pending_output() were written.
  void consume_output(std::size_t bytes);
  // The connection is over and its output written: the owner closes the socket. After that, no
  // StreamClosedEvent comes for streams still open: the owner ends them all.
  bool finished() const;
  // Whether reading more from the client serves any purpose.
  bool wants_read() const;
  ConnectionError error() const;
  // nghttp2's reason for a connection error it found ("SETTINGS: too many setting entries"),
  // printable; never the peer's bytes. Empty for the gate's own limits.
  const std::string& error_detail() const;

  // The response head. end_stream: no body follows (a HEAD request, a 204, a refusal without
  // a body). Refused: unknown_stream, wrong_state (a second one), invalid_head.
  SubmitError submit_response(StreamId stream, const ResponseHead& head, bool end_stream);
  // An interim head (100, 103; not 101), before the response.
  SubmitError submit_interim(StreamId stream, const ResponseHead& head);
  // Response body: takes as much of `bytes` as send_capacity() allows and returns how much; for
  // the rest, wait for a SendReadyEvent. Refused: body_not_allowed (HEAD, 204, 304),
  // body_exceeds_length (past the head's content-length), wrong_state (no head yet, or ended).
  Expected<std::size_t, SubmitError> send_data(StreamId stream, std::string_view bytes);
  std::size_t send_capacity(StreamId stream) const;
  // Ends the response with trailers (gRPC's grpc-status), after the body given so far.
  SubmitError submit_trailers(StreamId stream, FieldList trailers);
  // Ends the response after the body given so far. A body shorter than the head's
  // content-length resets the stream instead (body_shorter_than_length).
  SubmitError end_stream(StreamId stream);
  // RST_STREAM with `code` on this stream alone (CANCEL, REFUSED_STREAM, INTERNAL_ERROR, ...).
  SubmitError reset_stream(StreamId stream, ErrorCode code);
  // `bytes` of the stream's request body were forwarded: the client may send as many more.
  void consume(StreamId stream, std::size_t bytes);

  // Turns extended CONNECT on after the first SETTINGS (as ServerOptions::enable_connect_protocol
  // does from the start): a SETTINGS frame with SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 is queued,
  // and requests with :protocol are taken from now on. Once only; it is never withdrawn (RFC
  // 8441 section 3). The owner calls it when the origin behind the connection allows extended
  // CONNECT, whose SETTINGS may come after the gate's first ones to the client.
  void enable_connect_protocol();
  bool connect_protocol_enabled() const { return options_.enable_connect_protocol; }
  // GOAWAY NO_ERROR naming the last stream taken: those go on, no new one is taken.
  void shutdown();
  // GOAWAY with `code` at once; the connection is over once it is written.
  void terminate(ErrorCode code);
  std::size_t open_streams() const;

 private:
  void on_header_block(StreamId stream, StreamState& state, bool end_stream) override;
  void on_block_refused(StreamId stream, StreamState& state) override;
  void on_event(ConnectionEvent event) override;
  void take_request_head(StreamId stream, StreamState& state, bool end_stream);
  void take_trailers(StreamId stream, StreamState& state);
  void reject(StreamId stream, StreamState& state, StreamProblem problem, bool must_answer);

  ServerOptions options_;
  std::deque<ServerEvent> events_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace sandgate::session::exchange::h2
