// A plain nghttp2 session as a codec's peer in tests (nghttp2_peer.hpp).
#include "tests/unit/proxy/session/exchange/h2/nghttp2_peer.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace sandgate::session::exchange::h2::testing {
namespace {

std::vector<nghttp2_nv> to_nv(const FieldList& fields) {
  std::vector<nghttp2_nv> nva;
  for (const Field& field : fields) {
    nva.push_back(nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(field.name.data())),
                             reinterpret_cast<std::uint8_t*>(const_cast<char*>(field.value.data())),
                             field.name.size(), field.value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  return nva;
}

Nghttp2Peer& self(void* user) { return *static_cast<Nghttp2Peer*>(user); }

// Whether a finished head is final: a request's always, a response's unless 1xx.
bool final_head(const FieldList& head) {
  for (const Field& field : head) {
    if (field.name == ":status") {
      return !field.value.empty() && field.value[0] != '1';
    }
  }
  return true;
}

}  // namespace

Nghttp2Peer::Nghttp2Peer(Role role, std::vector<nghttp2_settings_entry> settings, bool consume,
                         bool strict)
    : role_(role), consume_(consume) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &on_header);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &on_begin_headers);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &on_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &on_frame_send);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, consume ? 0 : 1);
  nghttp2_option_set_no_http_messaging(option, strict ? 0 : 1);
  nghttp2_session* session = nullptr;
  const int created = role == Role::client
                          ? nghttp2_session_client_new2(&session, callbacks, this, option)
                          : nghttp2_session_server_new2(&session, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (created != 0) {
    throw std::runtime_error("nghttp2 session");
  }
  session_.reset(session);
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
}

Nghttp2Peer::~Nghttp2Peer() = default;

nghttp2_data_provider Nghttp2Peer::provider() {
  nghttp2_data_provider provider{};
  provider.read_callback = &read_body;
  return provider;
}

std::int32_t Nghttp2Peer::submit_request(const FieldList& block, std::optional<std::string> body,
                                         FieldList trailers, bool open) {
  const auto nva = to_nv(block);
  const bool has_body = body.has_value() || open;
  nghttp2_data_provider data = provider();
  const std::int32_t id = nghttp2_submit_request(session_.get(), nullptr, nva.data(), nva.size(),
                                                 has_body ? &data : nullptr, nullptr);
  if (id > 0) {
    Stream& stream = streams[id];
    stream.outgoing = body.value_or("");
    stream.outgoing_done = !open;
    stream.outgoing_trailers = std::move(trailers);
  }
  return id;
}

void Nghttp2Peer::submit_response(std::int32_t id, const FieldList& block,
                                  std::optional<std::string> body, FieldList trailers) {
  const auto nva = to_nv(block);
  Stream& stream = streams[id];
  stream.outgoing = body.value_or("");
  stream.outgoing_done = true;
  stream.outgoing_trailers = std::move(trailers);
  nghttp2_data_provider data = provider();
  nghttp2_submit_response(session_.get(), id, nva.data(), nva.size(),
                          body.has_value() ? &data : nullptr);
}

void Nghttp2Peer::submit_headers(std::int32_t id, const FieldList& block, bool end_stream) {
  const auto nva = to_nv(block);
  nghttp2_submit_headers(session_.get(), end_stream ? NGHTTP2_FLAG_END_STREAM : NGHTTP2_FLAG_NONE,
                         id, nullptr, nva.data(), nva.size(), nullptr);
}

void Nghttp2Peer::send_body(std::int32_t id, std::string_view bytes) {
  Stream& stream = streams[id];
  stream.outgoing.append(bytes);
  if (stream.deferred) {
    stream.deferred = false;
    nghttp2_session_resume_data(session_.get(), id);
  }
}

void Nghttp2Peer::finish(std::int32_t id, FieldList trailers) {
  Stream& stream = streams[id];
  stream.outgoing_done = true;
  stream.outgoing_trailers = std::move(trailers);
  if (stream.deferred) {
    stream.deferred = false;
    nghttp2_session_resume_data(session_.get(), id);
  }
}

void Nghttp2Peer::reset(std::int32_t id, std::uint32_t code) {
  nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, id, code);
}

void Nghttp2Peer::goaway(std::int32_t last_stream_id, std::uint32_t code) {
  nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE, last_stream_id, code, nullptr, 0);
}

void Nghttp2Peer::ping() { nghttp2_submit_ping(session_.get(), NGHTTP2_FLAG_NONE, nullptr); }

void Nghttp2Peer::consume(std::int32_t id, std::size_t bytes) {
  nghttp2_session_consume(session_.get(), id, bytes);
}

void Nghttp2Peer::consume_connection(std::size_t bytes) {
  nghttp2_session_consume_connection(session_.get(), bytes);
}

long Nghttp2Peer::receive(std::string_view bytes) {
  return nghttp2_session_mem_recv(
      session_.get(), reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

std::string Nghttp2Peer::take_output() {
  std::string out;
  for (;;) {
    const std::uint8_t* data = nullptr;
    const auto produced = nghttp2_session_mem_send(session_.get(), &data);
    if (produced <= 0) {
      break;
    }
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(produced));
  }
  return out;
}

bool Nghttp2Peer::wants_read() const { return nghttp2_session_want_read(session_.get()) != 0; }

int Nghttp2Peer::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  Nghttp2Peer& peer = self(user);
  Stream& stream = peer.streams[frame->hd.stream_id];
  const bool trailers = !stream.heads.empty() && final_head(stream.heads.back());
  peer.in_trailers_[frame->hd.stream_id] = trailers;
  if (!trailers) {
    stream.heads.emplace_back();
  }
  return 0;
}

int Nghttp2Peer::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                           std::size_t name_length, const std::uint8_t* value,
                           std::size_t value_length, std::uint8_t, void* user) {
  Nghttp2Peer& peer = self(user);
  Stream& stream = peer.streams[frame->hd.stream_id];
  Field field{std::string(reinterpret_cast<const char*>(name), name_length),
              std::string(reinterpret_cast<const char*>(value), value_length)};
  if (peer.in_trailers_[frame->hd.stream_id]) {
    stream.trailers.push_back(std::move(field));
  } else {
    stream.heads.back().push_back(std::move(field));
  }
  return 0;
}

int Nghttp2Peer::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  Nghttp2Peer& peer = self(user);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
        peer.streams[frame->hd.stream_id].ended = true;
      }
      break;
    case NGHTTP2_RST_STREAM:
      peer.streams[frame->hd.stream_id].reset = frame->rst_stream.error_code;
      break;
    case NGHTTP2_GOAWAY:
      peer.goaway_received = Goaway{frame->goaway.last_stream_id, frame->goaway.error_code};
      break;
    case NGHTTP2_PING:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
        ++peer.ping_acks;
      }
      break;
    case NGHTTP2_SETTINGS:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
        ++peer.settings_received;
      }
      break;
    default:
      break;
  }
  return 0;
}

int Nghttp2Peer::on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                         std::size_t length, void* user) {
  self(user).streams[id].body.append(reinterpret_cast<const char*>(data), length);
  return 0;
}

int Nghttp2Peer::on_close(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
  Stream& stream = self(user).streams[id];
  stream.closed = true;
  stream.close_code = code;
  return 0;
}

int Nghttp2Peer::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type == NGHTTP2_RST_STREAM) {
    self(user).rst_sent.push_back(frame->rst_stream.error_code);
  }
  return 0;
}

ssize_t Nghttp2Peer::read_body(nghttp2_session* session, std::int32_t id, std::uint8_t* buffer,
                               std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                               void* user) {
  Stream& stream = self(user).streams[id];
  const std::size_t n = std::min(length, stream.outgoing.size());
  std::memcpy(buffer, stream.outgoing.data(), n);
  stream.outgoing.erase(0, n);
  if (stream.outgoing.empty() && stream.outgoing_done) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!stream.outgoing_trailers.empty()) {
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const auto nva = to_nv(stream.outgoing_trailers);
      nghttp2_submit_trailer(session, id, nva.data(), nva.size());
    }
    return static_cast<ssize_t>(n);
  }
  if (n == 0) {
    stream.deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<ssize_t>(n);
}

}  // namespace sandgate::session::exchange::h2::testing
