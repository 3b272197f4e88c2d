// The gate as an HTTP/2 server (server_codec.hpp): what a client's header blocks mean, and the
// owner's answers.
#include "proxy/session/exchange/h2/server_codec.hpp"

#include <utility>

#include "proxy/session/exchange/h2/message_checks.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

FieldList response_block(const ResponseHead& head) {
  FieldList block;
  block.reserve(head.fields.size() + 1);
  block.push_back(Field{":status", std::to_string(head.status)});
  block.insert(block.end(), head.fields.begin(), head.fields.end());
  return block;
}

bool response_has_body(unsigned status) { return status != 204 && status != 304; }

}  // namespace

ServerCodec::ServerCodec(ServerOptions options)
    : options_(std::move(options)),
      connection_(std::make_unique<Connection>(Side::server, options_.limits, options_.clock,
                                               static_cast<ConnectionHooks&>(*this),
                                               options_.enable_connect_protocol)) {}

ServerCodec::~ServerCodec() = default;

ConnectionError ServerCodec::receive(std::string_view bytes) { return connection_->receive(bytes); }

std::optional<ServerEvent> ServerCodec::next_event() {
  if (events_.empty()) {
    return std::nullopt;
  }
  ServerEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

std::string_view ServerCodec::pending_output() { return connection_->pending_output(); }
void ServerCodec::consume_output(std::size_t bytes) { connection_->consume_output(bytes); }
bool ServerCodec::finished() const { return connection_->finished(); }
bool ServerCodec::wants_read() const { return connection_->wants_read(); }
ConnectionError ServerCodec::error() const { return connection_->error(); }
const std::string& ServerCodec::error_detail() const { return connection_->error_detail(); }
std::size_t ServerCodec::open_streams() const { return connection_->open_streams(); }

SubmitError ServerCodec::submit_response(StreamId stream, const ResponseHead& head,
                                         bool end_stream) {
  StreamState* state = connection_->find(stream);
  if (state == nullptr || !state->announced) {
    return SubmitError::unknown_stream;
  }
  if (state->final_head) {
    return SubmitError::wrong_state;
  }
  if (const SubmitError invalid = check_outgoing_response(head, false);
      invalid != SubmitError::none) {
    return invalid;
  }
  const std::string* length_field = find_field(head.fields, "content-length");
  const auto declared = length_field ? parse_content_length(*length_field) : std::nullopt;
  const bool body_allowed = !state->head_request && response_has_body(head.status);
  if (end_stream && body_allowed && declared.value_or(0) != 0) {
    return SubmitError::body_shorter_than_length;
  }
  if (const SubmitError sent = connection_->submit_head(stream, response_block(head), end_stream);
      sent != SubmitError::none) {
    return sent;
  }
  state->final_head = true;
  state->body_allowed = body_allowed;
  state->declared_length = declared;
  return SubmitError::none;
}

SubmitError ServerCodec::submit_interim(StreamId stream, const ResponseHead& head) {
  const StreamState* state = connection_->find(stream);
  if (state == nullptr || !state->announced) {
    return SubmitError::unknown_stream;
  }
  if (state->final_head) {
    return SubmitError::wrong_state;
  }
  if (const SubmitError invalid = check_outgoing_response(head, true);
      invalid != SubmitError::none) {
    return invalid;
  }
  return connection_->submit_interim(stream, response_block(head));
}

Expected<std::size_t, SubmitError> ServerCodec::send_data(StreamId stream, std::string_view bytes) {
  return connection_->send_data(stream, bytes);
}

std::size_t ServerCodec::send_capacity(StreamId stream) const {
  return connection_->send_capacity(stream);
}

SubmitError ServerCodec::submit_trailers(StreamId stream, FieldList trailers) {
  if (const SubmitError invalid = check_outgoing_trailers(trailers); invalid != SubmitError::none) {
    return invalid;
  }
  return connection_->submit_trailers(stream, std::move(trailers));
}

SubmitError ServerCodec::end_stream(StreamId stream) { return connection_->end_stream(stream); }

SubmitError ServerCodec::reset_stream(StreamId stream, ErrorCode code) {
  return connection_->reset_stream(stream, code);
}

void ServerCodec::consume(StreamId stream, std::size_t bytes) {
  connection_->consume(stream, bytes);
}

void ServerCodec::enable_connect_protocol() {
  if (options_.enable_connect_protocol) {
    return;
  }
  // Taken only once the SETTINGS is queued: a :protocol is never accepted unannounced.
  options_.enable_connect_protocol = connection_->advertise_connect_protocol();
}

void ServerCodec::shutdown() { connection_->shutdown(); }
void ServerCodec::terminate(ErrorCode code) { connection_->terminate(code); }

void ServerCodec::on_header_block(StreamId stream, StreamState& state, bool end_stream) {
  if (!state.announced) {
    take_request_head(stream, state, end_stream);
  } else if (!state.discard_input && !state.closer) {
    take_trailers(stream, state);
  }
}

// A request's head: over the list limit, malformed, over the connection's head budget, or passed
// on.
void ServerCodec::take_request_head(StreamId stream, StreamState& state, bool end_stream) {
  if (state.block.too_large()) {
    reject(stream, state, StreamProblem::head_too_large, true);
    return;
  }
  const std::size_t size = state.block.size();
  auto head = read_request_head(state.block.take_fields(),
                                RequestRules{options_.scheme, options_.enable_connect_protocol});
  if (!head) {
    reject(stream, state, head.error(), head.error() == StreamProblem::plain_connect);
    return;
  }
  if (!connection_->hold_head_bytes(state, size)) {
    reject(stream, state, StreamProblem::too_many_open_heads, false);
    return;
  }
  state.announced = true;
  state.peer_head_done = true;
  state.peer_length = head->content_length;
  state.head_request = head->method == "HEAD";
  events_.emplace_back(RequestHeadEvent{stream, std::move(*head), end_stream});
  if (end_stream) {
    events_.emplace_back(EndEvent{stream});
  }
}

void ServerCodec::take_trailers(StreamId stream, StreamState& state) {
  if (state.block.too_large()) {
    connection_->refuse(stream, ErrorCode::enhance_your_calm, StreamProblem::trailers_too_large);
    return;
  }
  const std::size_t size = state.block.size();
  FieldList trailers = state.block.take_fields();
  if (const StreamProblem problem = check_trailers(trailers); problem != StreamProblem::none) {
    connection_->refuse(stream, ErrorCode::protocol_error, problem);
    return;
  }
  // Trailers wait for the owner like heads, and count with them.
  if (!connection_->hold_head_bytes(state, size)) {
    connection_->refuse(stream, ErrorCode::enhance_your_calm, StreamProblem::too_many_open_heads);
    return;
  }
  events_.emplace_back(TrailersEvent{stream, std::move(trailers)});
  events_.emplace_back(EndEvent{stream});
}

// The owner hears of the stream only to log it, or to answer it (must_answer).
void ServerCodec::reject(StreamId stream, StreamState& state, StreamProblem problem,
                         bool must_answer) {
  state.announced = true;
  state.discard_input = true;
  if (must_answer) {
    state.problem = problem;
  } else {
    connection_->refuse(stream,
                        problem == StreamProblem::too_many_open_heads ? ErrorCode::refused_stream
                                                                      : ErrorCode::protocol_error,
                        problem);
  }
  events_.emplace_back(RequestRejectedEvent{stream, problem, must_answer});
}

// nghttp2 reset a request before its head was whole: the precise reason, when the block read so
// far shows it, else nghttp2's.
void ServerCodec::on_block_refused(StreamId stream, StreamState& state) {
  if (state.problem == StreamProblem::missing_pseudo_header && !state.block.too_large()) {
    const auto head = read_request_head(
        state.block.take_fields(), RequestRules{options_.scheme, options_.enable_connect_protocol});
    if (!head) {
      state.problem = head.error();
    }
  }
  state.announced = true;
  events_.emplace_back(RequestRejectedEvent{stream, state.problem, false});
}

void ServerCodec::on_event(ConnectionEvent event) {
  std::visit(
      [this](auto&& passed) {
        using Passed = std::decay_t<decltype(passed)>;
        if constexpr (!std::is_same_v<Passed, PeerSettingsEvent> &&
                      !std::is_same_v<Passed, PingAckEvent>) {
          events_.emplace_back(std::move(passed));
        }
      },
      std::move(event));
}

}  // namespace sandgate::session::exchange::h2
