// The gate as an HTTP/2 client (client_codec.hpp): requests out, what an origin's header blocks
// mean.
#include "proxy/session/exchange/h2/client_codec.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "proxy/session/exchange/h2/message_checks.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

FieldList request_block(const RequestHead& head) {
  FieldList block{{":method", head.method},
                  {":scheme", head.scheme},
                  {":authority", head.authority},
                  {":path", head.path}};
  if (head.extended_connect()) {
    block.push_back({":protocol", head.protocol});
  }
  block.insert(block.end(), head.fields.begin(), head.fields.end());
  return block;
}

}  // namespace

ClientCodec::ClientCodec(ClientOptions options)
    : options_(std::move(options)),
      connection_(std::make_unique<Connection>(Side::client, options_.limits, options_.clock,
                                               static_cast<ConnectionHooks&>(*this), false)) {}

ClientCodec::~ClientCodec() = default;

ConnectionError ClientCodec::receive(std::string_view bytes) { return connection_->receive(bytes); }

std::optional<ClientEvent> ClientCodec::next_event() {
  if (events_.empty()) {
    return std::nullopt;
  }
  ClientEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

std::string_view ClientCodec::pending_output() { return connection_->pending_output(); }
void ClientCodec::consume_output(std::size_t bytes) { connection_->consume_output(bytes); }
bool ClientCodec::finished() const { return connection_->finished(); }
bool ClientCodec::wants_read() const { return connection_->wants_read(); }
ConnectionError ClientCodec::error() const { return connection_->error(); }
const std::string& ClientCodec::error_detail() const { return connection_->error_detail(); }
std::size_t ClientCodec::open_streams() const { return connection_->open_streams(); }
bool ClientCodec::peer_settings_received() const { return connection_->peer_settings_received(); }

bool ClientCodec::peer_allows_connect_protocol() const {
  return connection_->peer_setting(NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL) == 1;
}

std::size_t ClientCodec::available_streams() const {
  if (connection_->going_away() || connection_->error() != ConnectionError::none) {
    return 0;
  }
  const std::size_t allowed =
      std::min<std::size_t>(options_.limits.max_concurrent_streams,
                            connection_->peer_setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
  const std::size_t open = connection_->open_streams();
  return allowed > open ? allowed - open : 0;
}

Expected<StreamId, SubmitError> ClientCodec::submit_request(const RequestHead& head,
                                                            bool end_stream) {
  if (connection_->error() != ConnectionError::none) {
    return Unexpected{SubmitError::connection_ended};
  }
  if (connection_->going_away()) {
    return Unexpected{SubmitError::going_away};
  }
  if (const SubmitError invalid = check_outgoing_request(head); invalid != SubmitError::none) {
    return Unexpected{invalid};
  }
  if (head.extended_connect() && !peer_allows_connect_protocol()) {
    return Unexpected{SubmitError::connect_protocol_not_supported};
  }
  if (available_streams() == 0) {
    return Unexpected{SubmitError::stream_limit_reached};
  }
  const std::string* length_field = find_field(head.fields, "content-length");
  const auto declared = length_field ? parse_content_length(*length_field) : std::nullopt;
  if (end_stream && declared.value_or(0) != 0) {
    return Unexpected{SubmitError::body_shorter_than_length};
  }
  auto stream = connection_->submit_request(request_block(head), end_stream);
  if (stream) {
    StreamState* state = connection_->find(*stream);
    state->declared_length = declared;
    state->head_request = head.method == "HEAD";
  }
  return stream;
}

Expected<std::size_t, SubmitError> ClientCodec::send_data(StreamId stream, std::string_view bytes) {
  return connection_->send_data(stream, bytes);
}

std::size_t ClientCodec::send_capacity(StreamId stream) const {
  return connection_->send_capacity(stream);
}

SubmitError ClientCodec::submit_trailers(StreamId stream, FieldList trailers) {
  if (const SubmitError invalid = check_outgoing_trailers(trailers); invalid != SubmitError::none) {
    return invalid;
  }
  return connection_->submit_trailers(stream, std::move(trailers));
}

SubmitError ClientCodec::end_stream(StreamId stream) { return connection_->end_stream(stream); }

SubmitError ClientCodec::reset_stream(StreamId stream, ErrorCode code) {
  return connection_->reset_stream(stream, code);
}

void ClientCodec::consume(StreamId stream, std::size_t bytes) {
  connection_->consume(stream, bytes);
}

void ClientCodec::ping() { connection_->ping(); }
void ClientCodec::shutdown() { connection_->shutdown(); }
void ClientCodec::terminate(ErrorCode code) { connection_->terminate(code); }

void ClientCodec::on_header_block(StreamId stream, StreamState& state, bool end_stream) {
  if (state.closer || state.discard_input) {
    return;
  }
  if (!state.final_head) {
    take_response_head(stream, state, end_stream);
  } else {
    take_trailers(stream, state);
  }
}

// A response head, interim or final, or a refusal of the stream (the origin's fault: the stream
// is cancelled, the owner gives its client a 502).
void ClientCodec::take_response_head(StreamId stream, StreamState& state, bool end_stream) {
  if (state.block.too_large()) {
    connection_->refuse(stream, ErrorCode::cancel, StreamProblem::head_too_large);
    return;
  }
  const std::size_t size = state.block.size();
  auto head = read_response_head(state.block.take_fields());
  if (!head) {
    connection_->refuse(stream, ErrorCode::protocol_error, head.error());
    return;
  }
  // The heads the owner holds, all streams together, stay within the connection's budget.
  if (!connection_->hold_head_bytes(state, size)) {
    connection_->refuse(stream, ErrorCode::cancel, StreamProblem::too_many_open_heads);
    return;
  }
  if (head->status < 200) {
    events_.emplace_back(InterimHeadEvent{stream, std::move(*head)});
    return;
  }
  state.final_head = true;
  state.peer_head_done = true;
  state.peer_length = state.head_request ? std::nullopt : head->content_length;
  events_.emplace_back(ResponseHeadEvent{stream, std::move(*head), end_stream});
  if (end_stream) {
    events_.emplace_back(EndEvent{stream});
  }
}

void ClientCodec::take_trailers(StreamId stream, StreamState& state) {
  if (state.block.too_large()) {
    connection_->refuse(stream, ErrorCode::cancel, StreamProblem::trailers_too_large);
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

// The gate's own streams are announced when submitted: nothing to add.
void ClientCodec::on_block_refused(StreamId, StreamState&) {}

void ClientCodec::on_event(ConnectionEvent event) {
  std::visit([this](auto&& passed) { events_.emplace_back(std::move(passed)); }, std::move(event));
}

}  // namespace sandgate::session::exchange::h2
