// The engine under both codecs (connection.hpp): nghttp2's session, its callbacks, and the
// buffers and counts around it.
#include "proxy/session/exchange/h2/connection.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

namespace sandgate::session::exchange::h2 {
namespace {

struct OptionDeleter {
  void operator()(nghttp2_option* option) const { nghttp2_option_del(option); }
};

// GOAWAY is type 7; its payload is the last stream id and the error code (RFC 9113 section 6.8).
constexpr std::uint8_t kGoawayType = 0x7;
constexpr std::size_t kGoawayPayload = 8;
// A SETTINGS entry: a 16-bit identifier and a 32-bit value (RFC 9113 section 6.5.1).
constexpr std::size_t kSettingsEntryLength = 6;

// Credentials go out never indexed (RFC 7541 section 7.1.3), so that no table of the peer, and
// no compression ratio, holds them.
bool credential(std::string_view name) {
  return name == "authorization" || name == "proxy-authorization" || name == "cookie";
}

// nghttp2's view of fields: pointers into `fields`, valid while it lives (nghttp2 copies them).
std::vector<nghttp2_nv> to_nv(const FieldList& fields) {
  std::vector<nghttp2_nv> nva;
  nva.reserve(fields.size());
  for (const Field& field : fields) {
    const bool never_index = field.never_index || credential(field.name);
    nva.push_back(nghttp2_nv{
        reinterpret_cast<std::uint8_t*>(const_cast<char*>(field.name.data())),
        reinterpret_cast<std::uint8_t*>(const_cast<char*>(field.value.data())), field.name.size(),
        field.value.size(),
        static_cast<std::uint8_t>(never_index ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE)});
  }
  return nva;
}

std::string_view view(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// nghttp2's reason in a GOAWAY the gate sends (its own words, not the peer's), printable and
// short enough for a log line.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 200)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

// The connection error behind a GOAWAY nghttp2 sent, from its code (and, for ENHANCE_YOUR_CALM,
// which nghttp2 1.52 sends only for a SETTINGS frame of too many entries, its reason).
ConnectionError error_for_goaway(std::uint32_t code, std::string_view reason) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::protocol_error:
    case ErrorCode::settings_timeout:
    case ErrorCode::stream_closed:
      return ConnectionError::protocol;
    case ErrorCode::flow_control_error:
      return ConnectionError::flow_control;
    case ErrorCode::compression_error:
      return ConnectionError::compression;
    case ErrorCode::frame_size_error:
      return ConnectionError::frame_size;
    case ErrorCode::enhance_your_calm:
      return reason.find("SETTINGS") != std::string_view::npos ? ConnectionError::too_many_settings
                                                               : ConnectionError::internal;
    default:
      return ConnectionError::internal;
  }
}

ConnectionError error_for_fatal(long code, ConnectionError recorded) {
  switch (code) {
    case NGHTTP2_ERR_CALLBACK_FAILURE:
      return recorded != ConnectionError::none ? recorded : ConnectionError::internal;
    case NGHTTP2_ERR_BAD_CLIENT_MAGIC:
      return ConnectionError::bad_preface;
    case NGHTTP2_ERR_FLOODED:
      return ConnectionError::unread_acknowledgements;
    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
      return ConnectionError::continuation_flood;
    default:
      return ConnectionError::internal;
  }
}

// What nghttp2's library error on a stream's frame means for the stream. `trailers`: the peer's
// head passed already, so a header block is its trailers.
StreamProblem problem_for(int lib_error, std::uint8_t frame_type, bool trailers) {
  switch (lib_error) {
    case NGHTTP2_ERR_HTTP_HEADER:
      return trailers ? StreamProblem::trailers_invalid : StreamProblem::forbidden_field;
    case NGHTTP2_ERR_HTTP_MESSAGING:
      if (frame_type == NGHTTP2_DATA) {
        return StreamProblem::content_length_mismatch;
      }
      return trailers ? StreamProblem::trailers_invalid : StreamProblem::missing_pseudo_header;
    case NGHTTP2_ERR_FLOW_CONTROL:
      return StreamProblem::stream_flow_control;
    default:
      return StreamProblem::stream_protocol_error;
  }
}

ErrorCode reset_code_for(int lib_error) {
  switch (lib_error) {
    case NGHTTP2_ERR_FLOW_CONTROL:
      return ErrorCode::flow_control_error;
    case NGHTTP2_ERR_REFUSED_STREAM:
      return ErrorCode::refused_stream;
    case NGHTTP2_ERR_STREAM_CLOSED:
      return ErrorCode::stream_closed;
    default:
      return ErrorCode::protocol_error;
  }
}

using OptionPtr = std::unique_ptr<nghttp2_option, OptionDeleter>;

// nghttp2's own limits, set from the gate's.
OptionPtr make_options(const Limits& limits) {
  nghttp2_option* raw = nullptr;
  if (nghttp2_option_new(&raw) != 0) {
    throw std::bad_alloc();
  }
  OptionPtr option(raw);
  // Flow control is the owner's: a window opens again only for bytes it forwarded.
  nghttp2_option_set_no_auto_window_update(raw, 1);
  nghttp2_option_set_max_outbound_ack(raw, limits.max_queued_acks);
  nghttp2_option_set_max_settings(raw, limits.max_settings_entries);
  nghttp2_option_set_max_continuations(raw, limits.max_continuations);
  nghttp2_option_set_max_deflate_dynamic_table_size(raw, limits.hpack_table_size);
  // A head of the list limit, HPACK-encoded, with room: nghttp2 counts its worst case.
  nghttp2_option_set_max_send_header_block_length(
      raw, std::max<std::size_t>(2 * limits.max_header_list_size, 64 * 1024));
  nghttp2_option_set_no_closed_streams(raw, 1);
  nghttp2_option_set_peer_max_concurrent_streams(raw, limits.max_concurrent_streams);
  // The gate's rapid-reset bucket (the owner's clock, GOAWAY ENHANCE_YOUR_CALM, counting the
  // resets the peer makes the gate send too) replaces nghttp2's (the wall clock, INTERNAL_ERROR,
  // RST_STREAM frames only), which is set out of reach so that one limit decides.
  nghttp2_option_set_stream_reset_rate_limit(raw, std::uint64_t{1} << 62, std::uint64_t{1} << 62);
  return option;
}

}  // namespace

// nghttp2's callbacks: each finds the connection in `user`, does its part, and turns a limit
// passed (abort_callback_) or an exception into NGHTTP2_ERR_CALLBACK_FAILURE, which ends the
// receive: no C++ exception crosses nghttp2's C frames.
struct Connection::Callbacks {
  static Connection& self(void* user) { return *static_cast<Connection*>(user); }

  static void frame_received(Connection& c, const nghttp2_frame& frame) {
    const StreamId id = frame.hd.stream_id;
    const bool end_stream = (frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    StreamState* state = c.find(id);
    switch (frame.hd.type) {
      case NGHTTP2_HEADERS:
        if (state != nullptr) {
          c.hooks_.on_header_block(id, *state, end_stream);
        }
        break;
      case NGHTTP2_DATA:
        if (end_stream && state != nullptr && state->announced && !state->discard_input &&
            !state->closer) {
          c.hooks_.on_event(EndEvent{id});
        }
        break;
      case NGHTTP2_RST_STREAM:
        if (state != nullptr && !state->closer) {
          state->closer = Closer::peer;
          state->code = static_cast<ErrorCode>(frame.rst_stream.error_code);
        }
        if (c.side_ == Side::server && !c.flood_.stream_reset()) {
          c.fail(c.flood_.exceeded());
        }
        break;
      case NGHTTP2_SETTINGS:
        if ((frame.hd.flags & NGHTTP2_FLAG_ACK) == 0) {
          c.peer_settings_received_ = true;
          c.hooks_.on_event(
              PeerSettingsEvent{c.peer_setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS),
                                c.peer_setting(NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL) == 1});
        }
        break;
      case NGHTTP2_PING:
        if ((frame.hd.flags & NGHTTP2_FLAG_ACK) != 0) {
          c.hooks_.on_event(PingAckEvent{});
        }
        break;
      case NGHTTP2_GOAWAY:
        c.peer_goaway_ = true;
        c.peer_last_stream_id_ = frame.goaway.last_stream_id;
        c.hooks_.on_event(GoawayEvent{frame.goaway.last_stream_id,
                                      static_cast<ErrorCode>(frame.goaway.error_code)});
        break;
      default:
        break;
    }
  }

  static void frame_refused(Connection& c, const nghttp2_frame& frame, int lib_error) {
    const StreamId id = frame.hd.stream_id;
    if (id == 0) {
      return;
    }
    if (StreamState* state = c.find(id); state != nullptr && !state->closer) {
      state->closer = Closer::codec;
      state->code = reset_code_for(lib_error);
      if (state->problem == StreamProblem::none) {
        state->problem = problem_for(lib_error, frame.hd.type, state->peer_head_done);
      }
      state->discard_input = true;
      if (frame.hd.type == NGHTTP2_HEADERS && !state->announced) {
        c.hooks_.on_block_refused(id, *state);
      }
    }
    // REFUSED_STREAM (the concurrency limit, before the client saw it) costs the gate nothing.
    if (c.side_ == Side::server && lib_error != NGHTTP2_ERR_REFUSED_STREAM &&
        !c.flood_.stream_reset()) {
      c.fail(c.flood_.exceeded());
    }
  }

  static void frame_sent(Connection& c, const nghttp2_frame& frame) {
    switch (frame.hd.type) {
      case NGHTTP2_HEADERS:
      case NGHTTP2_DATA:
        c.flood_.frame_sent();
        // A server's response is whole while the request still comes: RFC 9113 section 8.1 lets
        // it stop the rest with RST_STREAM NO_ERROR, so the stream does not stay open for it.
        if (c.side_ == Side::server && (frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
            nghttp2_session_get_stream_remote_close(c.session_.get(), frame.hd.stream_id) == 0) {
          if (StreamState* state = c.find(frame.hd.stream_id); state != nullptr && !state->closer) {
            state->closer = Closer::finished;
            state->discard_input = true;
            nghttp2_submit_rst_stream(c.session_.get(), NGHTTP2_FLAG_NONE, frame.hd.stream_id,
                                      NGHTTP2_NO_ERROR);
          }
        }
        break;
      case NGHTTP2_GOAWAY:
        if (frame.goaway.error_code != NGHTTP2_NO_ERROR && c.error_ == ConnectionError::none) {
          const std::string_view reason =
              view(frame.goaway.opaque_data, frame.goaway.opaque_data_len);
          c.error_ = error_for_goaway(frame.goaway.error_code, reason);
          c.error_detail_ = printable(reason);
        }
        break;
      default:
        break;
    }
  }

  static ssize_t read_body(Connection& c, StreamId stream, StreamState& state, std::uint8_t* buffer,
                           std::size_t length, std::uint32_t& flags) {
    const std::size_t taken = std::min(length, state.buffered());
    std::memcpy(buffer, state.outgoing.data() + state.outgoing_offset, taken);
    state.outgoing_offset += taken;
    c.send_buffered_ -= taken;
    if (state.outgoing_offset == state.outgoing.size()) {
      state.outgoing.clear();
      state.outgoing_offset = 0;
    } else if (state.outgoing_offset >= state.outgoing.size() / 2) {
      state.outgoing.erase(0, state.outgoing_offset);
      state.outgoing_offset = 0;
    }
    if (state.buffered() == 0 && state.end_submitted) {
      flags |= NGHTTP2_DATA_FLAG_EOF;
      if (state.trailers) {
        flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        const auto nva = to_nv(*state.trailers);
        if (nghttp2_submit_trailer(c.session_.get(), stream, nva.data(), nva.size()) != 0) {
          return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
      }
      return static_cast<ssize_t>(taken);
    }
    if (taken == 0) {
      state.deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(taken);
  }

  template <typename Body>
  static auto guarded(Connection& connection, Body&& body) -> decltype(body()) {
    try {
      const auto result = body();
      return connection.abort_callback_ ? NGHTTP2_ERR_CALLBACK_FAILURE : result;
    } catch (...) {
      connection.fail(ConnectionError::internal);
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
  }

  // The frame floods, counted as each frame begins (before nghttp2 spends work on it).
  static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      const bool ack = (hd->flags & NGHTTP2_FLAG_ACK) != 0;
      if (hd->type == NGHTTP2_SETTINGS && !ack &&
          hd->length / kSettingsEntryLength > c.limits_.max_settings_entries) {
        c.fail(ConnectionError::too_many_settings);
      } else if ((hd->type == NGHTTP2_SETTINGS || hd->type == NGHTTP2_PING) && !ack &&
                 !c.flood_.control_frame()) {
        c.fail(c.flood_.exceeded());
      } else if (hd->type == NGHTTP2_DATA &&
                 !c.flood_.data_frame(hd->length, (hd->flags & NGHTTP2_FLAG_END_STREAM) != 0)) {
        c.fail(c.flood_.exceeded());
      }
      return 0;
    });
  }

  // A header block begins: (server) a new stream's state, and a fresh block either way.
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      if (frame->hd.type != NGHTTP2_HEADERS) {
        return 0;
      }
      const StreamId id = frame->hd.stream_id;
      if (c.side_ == Side::server && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        c.streams_.try_emplace(id, c.limits_.max_header_list_size);
      }
      if (StreamState* state = c.find(id)) {
        state->block = HeaderBlock(c.limits_.max_header_list_size);
      }
      return 0;
    });
  }

  // A field nghttp2's checks passed: into the block, which stops keeping fields past its limit.
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t flags, void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      if (StreamState* state = c.find(frame->hd.stream_id);
          state != nullptr && frame->hd.type == NGHTTP2_HEADERS) {
        state->block.add(view(name, name_length), view(value, value_length),
                         (flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0);
      }
      return 0;
    });
  }

  // A field with a character RFC 9113 does not allow, which nghttp2 would drop silently: the
  // stream is reset instead (a field dropped here and kept by the next hop is how a message is
  // read two ways).
  static int on_invalid_header(nghttp2_session*, const nghttp2_frame* frame,
                               const std::uint8_t* name, std::size_t name_length,
                               const std::uint8_t*, std::size_t, std::uint8_t, void* user) {
    Connection& c = self(user);
    if (StreamState* state = c.find(frame->hd.stream_id);
        state != nullptr && state->problem == StreamProblem::none) {
      state->problem = is_field_name(view(name, name_length)) ? StreamProblem::invalid_field_value
                                                              : StreamProblem::invalid_field_name;
    }
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      frame_received(c, *frame);
      return 0;
    });
  }

  // nghttp2 found a frame invalid: a stream error (nghttp2 resets the stream) or a connection
  // error (nghttp2 sends GOAWAY; its code tells the connection's error when it goes out).
  static int on_invalid_frame_recv(nghttp2_session*, const nghttp2_frame* frame, int lib_error,
                                   void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      frame_refused(c, *frame, lib_error);
      return 0;
    });
  }

  static int on_data_chunk_recv(nghttp2_session* session, std::uint8_t, std::int32_t stream_id,
                                const std::uint8_t* data, std::size_t length, void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      StreamState* state = c.find(stream_id);
      if (state != nullptr) {
        state->received += length;
      }
      if (c.side_ == Side::client && nghttp2_session_consume_connection(session, length) != 0) {
        return static_cast<int>(NGHTTP2_ERR_CALLBACK_FAILURE);  // (see Limits::origin_held_bytes)
      }
      if (state == nullptr || !state->announced || state->discard_input || state->closer) {
        // Nobody forwards these bytes: the window they took is given back at once.
        return c.consume_window(stream_id, length) ? 0
                                                   : static_cast<int>(NGHTTP2_ERR_CALLBACK_FAILURE);
      }
      state->unconsumed += length;
      c.held_ += length;
      c.hooks_.on_event(DataEvent{stream_id, std::string(view(data, length))});
      while (c.side_ == Side::client && c.held_ > c.limits_.origin_held_bytes &&
             c.shed_largest_holder()) {
      }
      return 0;
    });
  }

  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t code,
                             void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      c.close_stream(stream_id, code);
      return 0;
    });
  }

  static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      frame_sent(c, *frame);
      return 0;
    });
  }

  // A request HEADERS that never went out (a GOAWAY came first): retry-safe.
  static int on_frame_not_send(nghttp2_session*, const nghttp2_frame* frame, int lib_error,
                               void* user) {
    Connection& c = self(user);
    return guarded(c, [&] {
      StreamState* state = c.find(frame->hd.stream_id);
      if (state != nullptr && frame->hd.type == NGHTTP2_HEADERS && !state->closer) {
        state->closer =
            lib_error == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED ? Closer::goaway : Closer::codec;
        state->code = ErrorCode::refused_stream;
        state->retry_safe = c.side_ == Side::client;
      }
      return 0;
    });
  }

  static ssize_t read_body_callback(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buffer,
                                    std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                    void* user) {
    Connection& c = self(user);
    StreamState* state = c.find(stream_id);
    if (state == nullptr) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    try {
      return read_body(c, stream_id, *state, buffer, length, *flags);
    } catch (...) {
      c.fail(ConnectionError::internal);
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
  }
};

void Connection::SessionDeleter::operator()(nghttp2_session* session) const {
  nghttp2_session_del(session);
}

void Connection::CallbacksDeleter::operator()(nghttp2_session_callbacks* callbacks) const {
  nghttp2_session_callbacks_del(callbacks);
}

// The callbacks every session of the gate's has (Connection::Callbacks).
Connection::CallbacksPtr Connection::make_callbacks() {
  nghttp2_session_callbacks* raw = nullptr;
  if (nghttp2_session_callbacks_new(&raw) != 0) {
    throw std::bad_alloc();
  }
  CallbacksPtr callbacks(raw);
  nghttp2_session_callbacks_set_on_begin_frame_callback(raw, &Callbacks::on_begin_frame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(raw, &Callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(raw, &Callbacks::on_header);
  nghttp2_session_callbacks_set_on_invalid_header_callback(raw, &Callbacks::on_invalid_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(raw, &Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(raw,
                                                               &Callbacks::on_invalid_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(raw, &Callbacks::on_data_chunk_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(raw, &Callbacks::on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(raw, &Callbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(raw, &Callbacks::on_frame_not_send);
  return callbacks;
}

Connection::Connection(Side side, const Limits& limits, Clock clock, ConnectionHooks& hooks,
                       bool connect_protocol)
    : side_(side),
      limits_(limits),
      hooks_(hooks),
      flood_(limits, clock ? std::move(clock) : Clock(&std::chrono::steady_clock::now)) {
  const CallbacksPtr callbacks = make_callbacks();
  const OptionPtr option = make_options(limits_);
  nghttp2_session* raw = nullptr;
  const int created = side == Side::server
                          ? nghttp2_session_server_new2(&raw, callbacks.get(), this, option.get())
                          : nghttp2_session_client_new2(&raw, callbacks.get(), this, option.get());
  if (created != 0) {
    throw std::bad_alloc();
  }
  session_.reset(raw);
  send_settings(connect_protocol);
}

Connection::~Connection() = default;

void Connection::send_settings(bool connect_protocol) {
  std::vector<nghttp2_settings_entry> settings{
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(limits_.stream_window)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits_.max_header_list_size},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, limits_.hpack_table_size},
      // RFC 9218: no RFC 7540 priority tree, whose idle and closed streams cost memory.
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1}};
  if (side_ == Side::server) {
    settings.push_back({NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_concurrent_streams});
    if (connect_protocol) {
      settings.push_back({NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1});
    }
  } else {
    settings.push_back({NGHTTP2_SETTINGS_ENABLE_PUSH, 0});
  }
  if (nghttp2_submit_settings(session_.get(), NGHTTP2_FLAG_NONE, settings.data(),
                              settings.size()) != 0 ||
      nghttp2_session_set_local_window_size(session_.get(), NGHTTP2_FLAG_NONE, 0,
                                            limits_.connection_window) != 0) {
    throw std::bad_alloc();
  }
}

bool Connection::advertise_connect_protocol() {
  if (fatal_ || side_ != Side::server) {
    return false;
  }
  const nghttp2_settings_entry entry{NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1};
  return nghttp2_submit_settings(session_.get(), NGHTTP2_FLAG_NONE, &entry, 1) == 0;
}

ConnectionError Connection::receive(std::string_view bytes) {
  if (fatal_) {
    return error_;
  }
  const auto read = nghttp2_session_mem_recv(
      session_.get(), reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (read < 0) {
    end_fatally(error_for_fatal(read, error_));
    return error_;
  }
  pump();
  return error_;
}

std::string_view Connection::pending_output() {
  pump();
  return std::string_view(out_).substr(out_offset_);
}

void Connection::consume_output(std::size_t bytes) {
  out_offset_ = std::min(out_.size(), out_offset_ + bytes);
  if (out_offset_ == out_.size()) {
    out_.clear();
    out_offset_ = 0;
  }
}

bool Connection::wants_read() const {
  return !fatal_ && nghttp2_session_want_read(session_.get()) != 0;
}

bool Connection::finished() const {
  if (out_offset_ < out_.size()) {
    return false;
  }
  return fatal_ || (nghttp2_session_want_read(session_.get()) == 0 &&
                    nghttp2_session_want_write(session_.get()) == 0);
}

StreamState* Connection::find(StreamId stream) {
  const auto found = streams_.find(stream);
  return found == streams_.end() ? nullptr : &found->second;
}

const StreamState* Connection::find(StreamId stream) const {
  const auto found = streams_.find(stream);
  return found == streams_.end() ? nullptr : &found->second;
}

// Serializes what nghttp2 has ready, up to the output batch.
void Connection::pump() {
  while (!fatal_ && out_.size() - out_offset_ < limits_.output_batch) {
    const std::uint8_t* data = nullptr;
    const auto produced = nghttp2_session_mem_send(session_.get(), &data);
    if (produced < 0) {
      end_fatally(error_for_fatal(produced, error_));
      return;
    }
    if (produced == 0) {
      break;
    }
    out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(produced));
  }
  offer_room();
}

// The streams the owner was refused room for that have room again.
void Connection::offer_room() {
  const std::size_t threshold = std::max<std::size_t>(
      1, std::min(limits_.stream_send_buffer, limits_.connection_send_buffer) / 2);
  for (auto& [id, state] : streams_) {
    if (state.wants_room && send_capacity(id) >= threshold) {
      state.wants_room = false;
      hooks_.on_event(SendReadyEvent{id});
    }
  }
}

void Connection::fail(ConnectionError error) {
  if (error_ == ConnectionError::none) {
    error_ = error;
  }
  abort_callback_ = true;
}

// nghttp2 cannot go on: nothing more of its session is used. The peer is told why with a GOAWAY
// made here, after the frames already serialized.
void Connection::end_fatally(ConnectionError error) {
  if (error_ == ConnectionError::none) {
    error_ = error;
  }
  fatal_ = true;
  const auto last =
      static_cast<std::uint32_t>(nghttp2_session_get_last_proc_stream_id(session_.get()));
  const auto code = static_cast<std::uint32_t>(goaway_code_for(error_));
  const std::uint8_t frame[] = {0,
                                0,
                                kGoawayPayload,
                                kGoawayType,
                                0,
                                0,
                                0,
                                0,
                                0,
                                static_cast<std::uint8_t>((last >> 24) & 0x7f),
                                static_cast<std::uint8_t>(last >> 16),
                                static_cast<std::uint8_t>(last >> 8),
                                static_cast<std::uint8_t>(last),
                                static_cast<std::uint8_t>(code >> 24),
                                static_cast<std::uint8_t>(code >> 16),
                                static_cast<std::uint8_t>(code >> 8),
                                static_cast<std::uint8_t>(code)};
  out_.append(reinterpret_cast<const char*>(frame), sizeof frame);
}

// A stream nghttp2 closed: its held bytes released, and the owner told once.
void Connection::close_stream(StreamId stream, std::uint32_t code) {
  const auto found = streams_.find(stream);
  if (found == streams_.end()) {
    return;
  }
  StreamState& state = found->second;
  if (state.unconsumed > 0 && side_ == Side::server) {
    // Bytes the owner will not forward now: the connection's window gets them back. (A client's
    // connection window had them back as they came.)
    nghttp2_session_consume_connection(session_.get(), state.unconsumed);
  }
  held_ -= state.unconsumed;
  send_buffered_ -= state.buffered();
  head_bytes_ -= state.head_bytes;
  StreamClosedEvent closed{stream};
  if (state.closer) {
    closed.by = *state.closer;
    closed.code = state.code;
    closed.problem = state.problem;
  } else if (code == NGHTTP2_NO_ERROR) {
    closed.by = Closer::finished;
  } else if (code == NGHTTP2_REFUSED_STREAM && (peer_goaway_ || local_goaway_)) {
    closed.by = Closer::goaway;
    closed.code = ErrorCode::refused_stream;
  } else {
    // nghttp2 reset it by itself, without a callback: DATA over the stream's window, or DATA
    // that disagrees with the content-length.
    closed.by = Closer::codec;
    closed.code = static_cast<ErrorCode>(code);
    closed.problem = code == NGHTTP2_FLOW_CONTROL_ERROR ? StreamProblem::stream_flow_control
                     : state.peer_length && state.received != *state.peer_length
                         ? StreamProblem::content_length_mismatch
                         : StreamProblem::stream_protocol_error;
    // A reset the client made the gate send, as a malformed head is: it counts against the
    // rapid-reset limit, or a stream made to end this way (a head that passed, then DATA that
    // disagrees with its content-length) costs the gate a request's work without limit.
    if (side_ == Side::server && !flood_.stream_reset()) {
      fail(flood_.exceeded());
    }
  }
  closed.retry_safe = state.retry_safe ||
                      (side_ == Side::client &&
                       (closed.by == Closer::goaway ||
                        (closed.by == Closer::peer && closed.code == ErrorCode::refused_stream)));
  const bool announced = state.announced;
  streams_.erase(found);
  if (announced) {
    hooks_.on_event(closed);
  }
}

void Connection::resume(StreamId stream, StreamState& state) {
  if (state.deferred) {
    state.deferred = false;
    nghttp2_session_resume_data(session_.get(), stream);
  }
}

SubmitError Connection::submit_head(StreamId stream, const FieldList& block, bool end_stream) {
  if (fatal_) {
    return SubmitError::connection_ended;
  }
  StreamState* state = find(stream);
  if (state == nullptr || !state->announced || state->closer) {
    return SubmitError::unknown_stream;
  }
  const auto nva = to_nv(block);
  nghttp2_data_provider provider{};
  provider.read_callback = &Callbacks::read_body_callback;
  if (nghttp2_submit_response(session_.get(), stream, nva.data(), nva.size(),
                              end_stream ? nullptr : &provider) != 0) {
    return SubmitError::wrong_state;
  }
  state->body_open = !end_stream;
  return SubmitError::none;
}

SubmitError Connection::submit_interim(StreamId stream, const FieldList& block) {
  if (fatal_) {
    return SubmitError::connection_ended;
  }
  StreamState* state = find(stream);
  if (state == nullptr || !state->announced || state->closer) {
    return SubmitError::unknown_stream;
  }
  const auto nva = to_nv(block);
  return nghttp2_submit_headers(session_.get(), NGHTTP2_FLAG_NONE, stream, nullptr, nva.data(),
                                nva.size(), nullptr) == 0
             ? SubmitError::none
             : SubmitError::wrong_state;
}

Expected<StreamId, SubmitError> Connection::submit_request(const FieldList& block,
                                                           bool end_stream) {
  if (fatal_) {
    return Unexpected{SubmitError::connection_ended};
  }
  if (going_away()) {
    return Unexpected{SubmitError::going_away};
  }
  const auto nva = to_nv(block);
  nghttp2_data_provider provider{};
  provider.read_callback = &Callbacks::read_body_callback;
  const std::int32_t id = nghttp2_submit_request(session_.get(), nullptr, nva.data(), nva.size(),
                                                 end_stream ? nullptr : &provider, nullptr);
  if (id < 0) {
    return Unexpected{id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE ? SubmitError::going_away
                                                                : SubmitError::wrong_state};
  }
  StreamState& state = streams_.try_emplace(id, limits_.max_header_list_size).first->second;
  state.announced = true;
  state.body_open = !end_stream;
  return id;
}

Expected<std::size_t, SubmitError> Connection::send_data(StreamId stream, std::string_view bytes) {
  if (fatal_) {
    return Unexpected{SubmitError::connection_ended};
  }
  StreamState* state = find(stream);
  if (state == nullptr || !state->announced || state->closer) {
    return Unexpected{SubmitError::unknown_stream};
  }
  if (!state->body_open || state->end_submitted) {
    return Unexpected{SubmitError::wrong_state};
  }
  if (!state->body_allowed && !bytes.empty()) {
    return Unexpected{SubmitError::body_not_allowed};
  }
  if (state->declared_length && state->body_taken + bytes.size() > *state->declared_length) {
    return Unexpected{SubmitError::body_exceeds_length};
  }
  const std::size_t taken = std::min(bytes.size(), send_capacity(stream));
  state->outgoing.append(bytes.substr(0, taken));
  state->body_taken += taken;
  send_buffered_ += taken;
  state->wants_room = taken < bytes.size();
  if (taken > 0) {
    resume(stream, *state);
  }
  return taken;
}

std::size_t Connection::send_capacity(StreamId stream) const {
  const StreamState* state = find(stream);
  if (state == nullptr || !state->announced || state->closer || !state->body_open ||
      state->end_submitted || !state->body_allowed) {
    return 0;
  }
  const std::size_t stream_room =
      limits_.stream_send_buffer - std::min(limits_.stream_send_buffer, state->buffered());
  const std::size_t connection_room =
      limits_.connection_send_buffer - std::min(limits_.connection_send_buffer, send_buffered_);
  return std::min(stream_room, connection_room);
}

SubmitError Connection::submit_trailers(StreamId stream, FieldList fields) {
  if (const SubmitError ended = end_stream(stream); ended != SubmitError::none) {
    return ended;
  }
  find(stream)->trailers = std::move(fields);
  return SubmitError::none;
}

SubmitError Connection::end_stream(StreamId stream) {
  if (fatal_) {
    return SubmitError::connection_ended;
  }
  StreamState* state = find(stream);
  if (state == nullptr || !state->announced || state->closer) {
    return SubmitError::unknown_stream;
  }
  if (!state->body_open || state->end_submitted) {
    return SubmitError::wrong_state;
  }
  if (state->body_allowed && state->declared_length &&
      state->body_taken != *state->declared_length) {
    // The peer would find the body short of its content-length: the stream is reset instead of
    // ending in a way the peer reads as complete.
    reset_stream(stream, ErrorCode::internal_error);
    return SubmitError::body_shorter_than_length;
  }
  state->end_submitted = true;
  state->wants_room = false;
  resume(stream, *state);
  return SubmitError::none;
}

SubmitError Connection::reset_stream(StreamId stream, ErrorCode code) {
  if (fatal_) {
    return SubmitError::connection_ended;
  }
  StreamState* state = find(stream);
  if (state == nullptr || !state->announced || state->closer) {
    return SubmitError::unknown_stream;
  }
  state->closer = Closer::owner;
  state->code = code;
  state->discard_input = true;
  state->wants_room = false;
  send_buffered_ -= state->buffered();
  state->outgoing.clear();
  state->outgoing_offset = 0;
  nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, stream,
                            static_cast<std::uint32_t>(code));
  return SubmitError::none;
}

void Connection::refuse(StreamId stream, ErrorCode code, StreamProblem problem) {
  StreamState* state = find(stream);
  if (state == nullptr || state->closer) {
    return;
  }
  state->closer = Closer::codec;
  state->code = code;
  state->problem = problem;
  state->discard_input = true;
  nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, stream,
                            static_cast<std::uint32_t>(code));
  if (side_ == Side::server && code != ErrorCode::refused_stream && !flood_.stream_reset()) {
    fail(flood_.exceeded());
  }
}

bool Connection::hold_head_bytes(StreamState& state, std::size_t bytes) {
  if (head_bytes_ + bytes > limits_.connection_head_bytes) {
    return false;
  }
  head_bytes_ += bytes;
  state.head_bytes += bytes;
  return true;
}

void Connection::consume(StreamId stream, std::size_t bytes) {
  StreamState* state = find(stream);
  if (fatal_ || state == nullptr) {
    return;  // a closed stream's bytes went back to the window when it closed
  }
  const auto credited = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, state->unconsumed));
  state->unconsumed -= credited;
  held_ -= credited;
  consume_window(stream, credited);
}

bool Connection::consume_window(StreamId stream, std::size_t bytes) {
  if (bytes == 0) {
    return true;
  }
  // A client's connection window had the bytes back as they came (Limits::origin_held_bytes).
  return (side_ == Side::client ? nghttp2_session_consume_stream(session_.get(), stream, bytes)
                                : nghttp2_session_consume(session_.get(), stream, bytes)) == 0;
}

// (Client) The origin's bytes held for the streams passed Limits::origin_held_bytes: the stream
// holding the most is reset, its bytes let go (its client reads the least; the owner's DataEvents
// still queued for it credit nothing more, and it hears its StreamClosedEvent).
bool Connection::shed_largest_holder() {
  StreamId largest = 0;
  std::uint64_t most = 0;
  for (const auto& [id, state] : streams_) {
    if (state.unconsumed > most && !state.closer) {
      largest = id;
      most = state.unconsumed;
    }
  }
  StreamState* state = find(largest);
  if (state == nullptr) {
    return false;
  }
  held_ -= state->unconsumed;
  state->unconsumed = 0;
  refuse(largest, ErrorCode::cancel, StreamProblem::held_too_much);
  return true;
}

void Connection::ping() {
  if (!fatal_) {
    nghttp2_submit_ping(session_.get(), NGHTTP2_FLAG_NONE, nullptr);
  }
}

void Connection::shutdown() {
  if (fatal_ || local_goaway_) {
    return;
  }
  local_goaway_ = true;
  nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_.get()), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

void Connection::terminate(ErrorCode code) {
  if (fatal_) {
    return;
  }
  local_goaway_ = true;
  nghttp2_session_terminate_session(session_.get(), static_cast<std::uint32_t>(code));
}

std::uint32_t Connection::peer_setting(std::int32_t id) const {
  return nghttp2_session_get_remote_settings(session_.get(), static_cast<nghttp2_settings_id>(id));
}

}  // namespace sandgate::session::exchange::h2
