// The engine under both codecs (internal to h2/: the owner uses ServerCodec or ClientCodec): one
// nghttp2 session, its bytes in and out, the flow control of what the peer sends (credited when
// the owner says it forwarded it), the bodies the owner sends (buffered within the limits and
// handed to nghttp2 as the peer's windows open), resets, GOAWAY and the flood guard. What a header
// block means (a request, a response, trailers) is the role's: the codec implements
// ConnectionHooks.
//
// Single-threaded: every call, and every hook, on the owner's strand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "proxy/session/exchange/h2/events.hpp"
#include "proxy/session/exchange/h2/flood_guard.hpp"
#include "proxy/session/exchange/h2/limits.hpp"
#include "proxy/session/exchange/h2/message_checks.hpp"
#include "proxy/session/exchange/h2/messages.hpp"
#include "proxy/session/exchange/h2/problems.hpp"
#include "rules/expected.hpp"

struct nghttp2_session;
struct nghttp2_session_callbacks;

namespace sandgate::session::exchange::h2 {

enum class Side : std::uint8_t { server, client };

// What the connection knows of one open stream.
struct StreamState {
  explicit StreamState(std::size_t header_limit) : block(header_limit) {}

  HeaderBlock block;             // the header block being decoded, then the last one whole
  bool announced = false;        // the owner has heard of the stream (StreamClosedEvent due)
  bool discard_input = false;    // the peer's DATA is credited as it comes and not passed on
  bool final_head = false;       // a final head passed: the owner's (server), the peer's (client)
  bool head_request = false;     // the request's method is HEAD: its response has no body
  bool peer_head_done = false;   // the peer's (final) head passed: its next block is trailers
  std::size_t head_bytes = 0;    // the head's share of Limits::connection_head_bytes
  std::uint64_t unconsumed = 0;  // DATA passed to the owner and not consumed yet
  std::optional<std::uint64_t> peer_length;  // the peer's content-length
  std::uint64_t received = 0;                // the peer's body bytes so far

  // The owner's side: its body, buffered until nghttp2 takes it.
  bool body_open = false;      // a head went out without END_STREAM: data may follow
  bool body_allowed = true;    // not for a response to HEAD, nor after a 204 or 304
  bool end_submitted = false;  // end_stream() or trailers came
  bool deferred = false;       // nghttp2 waits for bytes: resume it when some come
  bool wants_room = false;     // send_data() took less than given: a SendReadyEvent is due
  std::string outgoing;
  std::size_t outgoing_offset = 0;
  std::optional<FieldList> trailers;
  std::optional<std::uint64_t> declared_length;
  std::uint64_t body_taken = 0;  // body bytes the owner handed over so far

  // How it ended, when the gate or the peer ended it early.
  std::optional<Closer> closer;
  ErrorCode code = ErrorCode::no_error;
  StreamProblem problem = StreamProblem::none;
  bool retry_safe = false;

  std::size_t buffered() const { return outgoing.size() - outgoing_offset; }
};

// Events both roles pass on (the roles add their heads and trailers).
using ConnectionEvent = std::variant<DataEvent, EndEvent, SendReadyEvent, StreamClosedEvent,
                                     GoawayEvent, PeerSettingsEvent, PingAckEvent>;

// What a role does with what the connection reads. Called from within receive() and
// pending_output(); a hook may call the connection's submit, reset and refuse functions.
class ConnectionHooks {
 public:
  // A whole header block passed nghttp2's checks on `stream` (state.block holds it).
  virtual void on_header_block(StreamId stream, StreamState& state, bool end_stream) = 0;
  // nghttp2 reset `stream` for state.problem while its header block was read.
  virtual void on_block_refused(StreamId stream, StreamState& state) = 0;
  virtual void on_event(ConnectionEvent event) = 0;

 protected:
  ~ConnectionHooks() = default;
};

class Connection {
 public:
  // `connect_protocol`: (server) advertise SETTINGS_ENABLE_CONNECT_PROTOCOL = 1.
  Connection(Side side, const Limits& limits, Clock clock, ConnectionHooks& hooks,
             bool connect_protocol);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  ConnectionError receive(std::string_view bytes);
  std::string_view pending_output();
  void consume_output(std::size_t bytes);
  bool wants_read() const;
  bool finished() const;
  ConnectionError error() const { return error_; }
  const std::string& error_detail() const { return error_detail_; }

  StreamState* find(StreamId stream);
  const StreamState* find(StreamId stream) const;
  std::size_t open_streams() const { return streams_.size(); }
  // Sends a head: (server) a response or an interim one, (client) a request, whose id it returns.
  SubmitError submit_head(StreamId stream, const FieldList& block, bool end_stream);
  SubmitError submit_interim(StreamId stream, const FieldList& block);
  Expected<StreamId, SubmitError> submit_request(const FieldList& block, bool end_stream);
  Expected<std::size_t, SubmitError> send_data(StreamId stream, std::string_view bytes);
  std::size_t send_capacity(StreamId stream) const;
  SubmitError submit_trailers(StreamId stream, FieldList fields);
  SubmitError end_stream(StreamId stream);
  SubmitError reset_stream(StreamId stream, ErrorCode code);
  void consume(StreamId stream, std::size_t bytes);
  void ping();
  // (server) A SETTINGS frame with SETTINGS_ENABLE_CONNECT_PROTOCOL = 1, after the first one
  // (RFC 8441 section 3 lets it come in any SETTINGS; it is never withdrawn). nghttp2 takes
  // :protocol from the moment it is queued, before the client's ACK. False when it could not be
  // queued (no memory, or the connection is over).
  bool advertise_connect_protocol();
  void shutdown();
  void terminate(ErrorCode code);
  bool going_away() const { return local_goaway_ || peer_goaway_; }
  // The peer's value of a SETTINGS parameter (RFC 9113 section 6.5.2 ids).
  std::uint32_t peer_setting(std::int32_t id) const;
  bool peer_settings_received() const { return peer_settings_received_; }

  // For the roles: the codec refuses a stream (RST_STREAM `code`, for `problem`). On the server a
  // refusal counts against the rapid-reset limit, which may end the connection.
  void refuse(StreamId stream, ErrorCode code, StreamProblem problem);
  // Takes `bytes` of the connection's head budget for `state`; false when it is spent.
  bool hold_head_bytes(StreamState& state, std::size_t bytes);

  // nghttp2's callbacks (connection.cpp) reach the connection through these.
  struct Callbacks;
  friend struct Callbacks;

 private:
  struct SessionDeleter {
    void operator()(nghttp2_session* session) const;
  };
  struct CallbacksDeleter {
    void operator()(nghttp2_session_callbacks* callbacks) const;
  };
  using CallbacksPtr = std::unique_ptr<nghttp2_session_callbacks, CallbacksDeleter>;
  static CallbacksPtr make_callbacks();

  void send_settings(bool connect_protocol);
  void pump();
  void resume(StreamId stream, StreamState& state);
  void offer_room();
  void fail(ConnectionError error);
  void end_fatally(ConnectionError error);
  void close_stream(StreamId stream, std::uint32_t code);
  // Gives the peer back `bytes` of `stream`'s window (and, on the server, of the connection's).
  bool consume_window(StreamId stream, std::size_t bytes);
  bool shed_largest_holder();

  Side side_;
  Limits limits_;
  ConnectionHooks& hooks_;
  FloodGuard flood_;
  std::unique_ptr<nghttp2_session, SessionDeleter> session_;
  std::unordered_map<StreamId, StreamState> streams_;
  std::string out_;
  std::size_t out_offset_ = 0;
  std::size_t send_buffered_ = 0;  // the owner's body bytes held, all streams together
  std::size_t head_bytes_ = 0;     // the open streams' heads, together
  std::size_t held_ = 0;           // the peer's DATA passed to the owner and not consumed yet
  bool fatal_ = false;             // nghttp2 failed: its session is not used again
  bool abort_callback_ = false;    // a callback found a limit passed: end the receive
  bool local_goaway_ = false;
  bool peer_goaway_ = false;
  StreamId peer_last_stream_id_ = 0;
  bool peer_settings_received_ = false;
  ConnectionError error_ = ConnectionError::none;
  std::string error_detail_;
};

}  // namespace sandgate::session::exchange::h2
