// The origin's HTTP/2 sessions (see h2_origin.hpp).
#include "bench/load/h2_origin.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include "bench/load/h2_wire.hpp"

namespace sandgate::load {

namespace asio = boost::asio;

namespace {

constexpr std::size_t max_body = 64 * 1024;
constexpr std::uint32_t max_streams = 1000;

// Every body is this buffer's first N bytes.
const std::string& body_bytes() {
  static const std::string body(max_body, 'h');
  return body;
}

// One connection's server session and its streams' state. The streams are at most max_streams
// (nghttp2 refuses more), each a path and what is left of its body.
class origin_session {
 public:
  origin_session() {
    nghttp2_session_callbacks* raw = nullptr;
    if (nghttp2_session_callbacks_new(&raw) != 0) {
      return;
    }
    const h2_callbacks_ptr callbacks(raw);
    nghttp2_session_callbacks_set_on_begin_headers_callback(raw, &origin_session::on_begin);
    nghttp2_session_callbacks_set_on_header_callback(raw, &origin_session::on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(raw, &origin_session::on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(raw, &origin_session::on_close);
    nghttp2_session* session = nullptr;
    if (nghttp2_session_server_new(&session, raw, this) != 0) {
      return;
    }
    session_.reset(session);
    const std::array<nghttp2_settings_entry, 1> settings{
        {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams}}};
    if (nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings.data(), settings.size()) !=
        0) {
      session_.reset();
    }
  }

  nghttp2_session* native() { return session_.get(); }

 private:
  struct stream_state {
    std::string path;
    std::size_t left = 0;  // body bytes still to send
  };

  static int on_begin(nghttp2_session*, const nghttp2_frame* frame, void* self) {
    auto& me = *static_cast<origin_session*>(self);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      me.streams_.try_emplace(frame->hd.stream_id);
    }
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t, void* self) {
    auto& me = *static_cast<origin_session*>(self);
    const auto stream = me.streams_.find(frame->hd.stream_id);
    if (stream != me.streams_.end() &&
        std::string_view(reinterpret_cast<const char*>(name), name_length) == ":path") {
      stream->second.path.assign(reinterpret_cast<const char*>(value),
                                 std::min<std::size_t>(value_length, 64));
    }
    return 0;
  }

  // A request is answered once the client's side has ended (GET: with its head).
  static int on_frame(nghttp2_session* session, const nghttp2_frame* frame, void* self) {
    auto& me = *static_cast<origin_session*>(self);
    const bool request_end =
        (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    const auto stream = me.streams_.find(frame->hd.stream_id);
    if (request_end && stream != me.streams_.end()) {
      return respond(session, frame->hd.stream_id, stream->second);
    }
    return 0;
  }

  static int on_close(nghttp2_session*, std::int32_t stream, std::uint32_t, void* self) {
    static_cast<origin_session*>(self)->streams_.erase(stream);
    return 0;
  }

  static int respond(nghttp2_session* session, std::int32_t id, stream_state& stream) {
    const auto status = h2_field(":status", "200");
    const auto type = h2_field("content-type", "application/octet-stream");
    if (stream.path == "/hold") {
      // A head without END_STREAM, and nothing after it: the stream stays open.
      const std::array<nghttp2_nv, 2> head{status, type};
      return nghttp2_submit_headers(session, NGHTTP2_FLAG_NONE, id, nullptr, head.data(),
                                    head.size(), nullptr) < 0
                 ? NGHTTP2_ERR_CALLBACK_FAILURE
                 : 0;
    }
    // "/N": N bytes (a path that is not a number: none), as the HTTP/1.1 origin answers.
    std::size_t size = 0;
    if (stream.path.size() > 1) {
      std::from_chars(stream.path.data() + 1, stream.path.data() + stream.path.size(), size);
    }
    stream.left = std::min(size, max_body);
    const std::string length = std::to_string(stream.left);
    const std::array<nghttp2_nv, 3> head{status, type, h2_field("content-length", length)};
    nghttp2_data_provider body{};
    body.source.ptr = &stream;
    body.read_callback = &origin_session::read_body;
    return nghttp2_submit_response(session, id, head.data(), head.size(),
                                   stream.left > 0 ? &body : nullptr) != 0
               ? NGHTTP2_ERR_CALLBACK_FAILURE
               : 0;
  }

  // The body, in what pieces nghttp2 asks for (the stream's state is stable: map nodes do not
  // move, and it is erased only when the stream closes).
  static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* out, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source* source, void*) {
    auto& stream = *static_cast<stream_state*>(source->ptr);
    const std::size_t n = std::min(length, stream.left);
    std::memcpy(out, body_bytes().data(), n);
    stream.left -= n;
    if (stream.left == 0) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return static_cast<ssize_t>(n);
  }

  h2_session_ptr session_;
  std::unordered_map<std::int32_t, stream_state> streams_;
};

}  // namespace

asio::awaitable<void> serve_h2(tls_stream& stream) {
  origin_session session;
  if (session.native() == nullptr) {
    co_return;
  }
  co_await run_h2_io(stream, session.native(), [] { return true; });
}

}  // namespace sandgate::load
