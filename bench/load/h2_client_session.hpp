// The load tool's HTTP/2 client connection, sans-IO: GET requests submitted, each stream followed
// to its end (status, body size, whether it was reset), on an nghttp2 client session whose bytes
// the owner moves with run_h2_io (h2_wire.hpp). The h2 and h2-hold workloads drive it.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/load/client_slot.hpp"
#include "bench/load/h2_wire.hpp"
#include "bench/load/tunnel.hpp"

namespace sandgate::load {

class h2_client_session {
 public:
  // A stream that closed, as it ended.
  struct stream_end {
    std::int32_t stream = 0;
    int status = 0;                // the response's :status; 0 when no head came
    std::uint32_t error_code = 0;  // RST_STREAM's (or GOAWAY's) code; 0 when it ended cleanly
    std::size_t body_bytes = 0;
    steady::time_point started;  // when it was submitted
  };

  // Queues the connection preface and SETTINGS (no server push) for every request to
  // `authority` (HOST:PORT) over https. valid() is false when nghttp2 could not start.
  explicit h2_client_session(std::string authority);
  h2_client_session(const h2_client_session&) = delete;
  h2_client_session& operator=(const h2_client_session&) = delete;

  bool valid() const { return session_ != nullptr; }
  nghttp2_session* native() { return session_.get(); }

  // Queues `GET path`; returns its stream, or a negative nghttp2 error (no stream IDs left, the
  // server's GOAWAY). Written when the owner next moves the session's bytes.
  std::int32_t submit_get(const std::string& path);

  // Streams closed since the owner last cleared this; the owner takes and clears it after each
  // read.
  std::vector<stream_end>& ended() { return ended_; }
  // Streams open whose response head has come (h2-hold: streams the origin is holding open).
  std::size_t open_with_head() const { return open_with_head_; }
  std::size_t open_streams() const { return open_.size(); }
  bool goaway_received() const { return goaway_received_; }

 private:
  struct open_stream {
    steady::time_point started;
    int status = 0;
    std::size_t body_bytes = 0;
    bool head = false;  // the response head has come
  };

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t flags, void* self);
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_data(nghttp2_session*, std::uint8_t flags, std::int32_t stream,
                     const std::uint8_t* data, std::size_t length, void* self);
  static int on_close(nghttp2_session*, std::int32_t stream, std::uint32_t error_code, void* self);

  std::string authority_;
  h2_session_ptr session_;
  std::unordered_map<std::int32_t, open_stream> open_;
  std::vector<stream_end> ended_;
  std::size_t open_with_head_ = 0;
  bool goaway_received_ = false;
};

// What one stream's end says: none for a completed request (a clean end, status 200 and a body
// of `body_bytes`), refused for another status (the proxy's own answer, say), io for a reset
// before the response ended, mismatch for a body of the wrong size.
error_kind stream_outcome(const h2_client_session::stream_end& ended, std::size_t body_bytes);

}  // namespace sandgate::load
