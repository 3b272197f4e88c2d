// HTTP/2 frames written and read byte by byte, for the tests that send what no well-behaved peer
// sends (floods, oversized blocks, broken framing) and read exactly what the codec answered. HPACK
// is nghttp2's own encoder and decoder (its public nghttp2_hd API).
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/session/exchange/h2/messages.hpp"

namespace sandgate::session::exchange::h2::testing {

inline constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

enum FrameType : std::uint8_t {
  kData = 0x0,
  kHeaders = 0x1,
  kPriority = 0x2,
  kRstStream = 0x3,
  kSettings = 0x4,
  kPushPromise = 0x5,
  kPing = 0x6,
  kGoaway = 0x7,
  kWindowUpdate = 0x8,
  kContinuation = 0x9,
};
enum FrameFlag : std::uint8_t {
  kEndStream = 0x1,
  kAck = 0x1,
  kEndHeaders = 0x4,
  kPadded = 0x8,
};

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload);
std::string settings(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& entries);
std::string settings_ack();
std::string ping_frame(bool ack = false);
std::string data_frame(std::uint32_t stream, std::string_view bytes, bool end_stream);
std::string headers_frame(std::uint32_t stream, std::string_view block, bool end_stream,
                          bool end_headers = true);
std::string continuation_frame(std::uint32_t stream, std::string_view block, bool end_headers);
std::string rst_stream_frame(std::uint32_t stream, std::uint32_t code);
std::string window_update_frame(std::uint32_t stream, std::uint32_t increment);

struct Frame {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::uint32_t stream = 0;
  std::string payload;
  // RST_STREAM's and GOAWAY's error code; GOAWAY's last stream id.
  std::uint32_t error_code() const;
  std::uint32_t last_stream_id() const;
};
// The whole frames in `bytes` (a partial one at the end is left out).
std::vector<Frame> read_frames(std::string_view bytes);

class HpackEncoder {
 public:
  HpackEncoder();
  ~HpackEncoder();
  std::string encode(const FieldList& fields);

 private:
  struct Deleter {
    void operator()(nghttp2_hd_deflater* deflater) const { nghttp2_hd_deflate_del(deflater); }
  };
  std::unique_ptr<nghttp2_hd_deflater, Deleter> deflater_;
};

class HpackDecoder {
 public:
  HpackDecoder();
  ~HpackDecoder();
  FieldList decode(std::string_view block);

 private:
  struct Deleter {
    void operator()(nghttp2_hd_inflater* inflater) const { nghttp2_hd_inflate_del(inflater); }
  };
  std::unique_ptr<nghttp2_hd_inflater, Deleter> inflater_;
};

// A request's block: the four pseudo-header fields, then `fields`.
FieldList request_block(std::string_view method, std::string_view path,
                        std::string_view authority = "example.test",
                        std::string_view scheme = "https", FieldList fields = {});

}  // namespace sandgate::session::exchange::h2::testing
