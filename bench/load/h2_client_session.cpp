// The load tool's HTTP/2 client connection on nghttp2 (see h2_client_session.hpp).
#include "bench/load/h2_client_session.hpp"

#include <array>
#include <charconv>
#include <string_view>

namespace sandgate::load {

h2_client_session::h2_client_session(std::string authority) : authority_(std::move(authority)) {
  nghttp2_session_callbacks* raw = nullptr;
  if (nghttp2_session_callbacks_new(&raw) != 0) {
    return;
  }
  const h2_callbacks_ptr callbacks(raw);
  nghttp2_session_callbacks_set_on_header_callback(raw, &h2_client_session::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(raw, &h2_client_session::on_frame);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(raw, &h2_client_session::on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(raw, &h2_client_session::on_close);
  nghttp2_session* session = nullptr;
  if (nghttp2_session_client_new(&session, raw, this) != 0) {
    return;
  }
  session_.reset(session);
  // The windows stay at HTTP/2's defaults (64 KiB): the bodies asked for are small.
  const std::array<nghttp2_settings_entry, 1> settings{{{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}}};
  if (nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings.data(), settings.size()) != 0) {
    session_.reset();
  }
}

std::int32_t h2_client_session::submit_get(const std::string& path) {
  const std::array<nghttp2_nv, 4> head{h2_field(":method", "GET"), h2_field(":scheme", "https"),
                                       h2_field(":authority", authority_), h2_field(":path", path)};
  const std::int32_t stream =
      nghttp2_submit_request(session_.get(), nullptr, head.data(), head.size(), nullptr, nullptr);
  if (stream > 0) {
    open_[stream] = open_stream{steady::now()};
  }
  return stream;
}

int h2_client_session::on_header(nghttp2_session*, const nghttp2_frame* frame,
                                 const std::uint8_t* name, std::size_t name_length,
                                 const std::uint8_t* value, std::size_t value_length, std::uint8_t,
                                 void* self) {
  auto& me = *static_cast<h2_client_session*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_RESPONSE) {
    return 0;
  }
  const std::string_view field(reinterpret_cast<const char*>(name), name_length);
  const auto open = me.open_.find(frame->hd.stream_id);
  if (field == ":status" && open != me.open_.end()) {
    const char* text = reinterpret_cast<const char*>(value);
    std::from_chars(text, text + value_length, open->second.status);
  }
  return 0;
}

int h2_client_session::on_frame(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& me = *static_cast<h2_client_session*>(self);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    me.goaway_received_ = true;
  } else if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_RESPONSE) {
    const auto open = me.open_.find(frame->hd.stream_id);
    if (open != me.open_.end() && !open->second.head) {
      open->second.head = true;
      ++me.open_with_head_;
    }
  }
  return 0;
}

int h2_client_session::on_data(nghttp2_session*, std::uint8_t, std::int32_t stream,
                               const std::uint8_t*, std::size_t length, void* self) {
  auto& me = *static_cast<h2_client_session*>(self);
  if (const auto open = me.open_.find(stream); open != me.open_.end()) {
    open->second.body_bytes += length;
  }
  return 0;
}

int h2_client_session::on_close(nghttp2_session*, std::int32_t stream, std::uint32_t error_code,
                                void* self) {
  auto& me = *static_cast<h2_client_session*>(self);
  const auto open = me.open_.find(stream);
  if (open == me.open_.end()) {
    return 0;
  }
  if (open->second.head) {
    --me.open_with_head_;
  }
  me.ended_.push_back(stream_end{stream, open->second.status, error_code, open->second.body_bytes,
                                 open->second.started});
  me.open_.erase(open);
  return 0;
}

error_kind stream_outcome(const h2_client_session::stream_end& ended, std::size_t body_bytes) {
  if (ended.status != 0 && ended.status != 200) {
    return error_kind::refused;
  }
  if (ended.error_code != NGHTTP2_NO_ERROR || ended.status == 0) {
    return error_kind::io;
  }
  return ended.body_bytes == body_bytes ? error_kind::none : error_kind::mismatch;
}

}  // namespace sandgate::load
