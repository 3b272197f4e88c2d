// HTTP/2 frames byte by byte (raw_frames.hpp).
#include "tests/unit/proxy/session/exchange/h2/raw_frames.hpp"

#include <stdexcept>

namespace sandgate::session::exchange::h2::testing {
namespace {

void put32(std::string& out, std::uint32_t value) {
  out += static_cast<char>(value >> 24);
  out += static_cast<char>(value >> 16);
  out += static_cast<char>(value >> 8);
  out += static_cast<char>(value);
}

std::uint32_t get32(std::string_view bytes) {
  return (std::uint32_t(std::uint8_t(bytes[0])) << 24) |
         (std::uint32_t(std::uint8_t(bytes[1])) << 16) |
         (std::uint32_t(std::uint8_t(bytes[2])) << 8) | std::uint32_t(std::uint8_t(bytes[3]));
}

}  // namespace

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload) {
  std::string out;
  const auto length = static_cast<std::uint32_t>(payload.size());
  out += static_cast<char>(length >> 16);
  out += static_cast<char>(length >> 8);
  out += static_cast<char>(length);
  out += static_cast<char>(type);
  out += static_cast<char>(flags);
  put32(out, stream & 0x7fffffffU);
  out.append(payload);
  return out;
}

std::string settings(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& entries) {
  std::string payload;
  for (const auto& [id, value] : entries) {
    payload += static_cast<char>(id >> 8);
    payload += static_cast<char>(id);
    put32(payload, value);
  }
  return frame(kSettings, 0, 0, payload);
}

std::string settings_ack() { return frame(kSettings, kAck, 0, ""); }

std::string ping_frame(bool ack) { return frame(kPing, ack ? kAck : 0, 0, std::string(8, '\x01')); }

std::string data_frame(std::uint32_t stream, std::string_view bytes, bool end_stream) {
  return frame(kData, end_stream ? kEndStream : 0, stream, bytes);
}

std::string headers_frame(std::uint32_t stream, std::string_view block, bool end_stream,
                          bool end_headers) {
  return frame(
      kHeaders,
      static_cast<std::uint8_t>((end_stream ? kEndStream : 0) | (end_headers ? kEndHeaders : 0)),
      stream, block);
}

std::string continuation_frame(std::uint32_t stream, std::string_view block, bool end_headers) {
  return frame(kContinuation, end_headers ? kEndHeaders : 0, stream, block);
}

std::string rst_stream_frame(std::uint32_t stream, std::uint32_t code) {
  std::string payload;
  put32(payload, code);
  return frame(kRstStream, 0, stream, payload);
}

std::string window_update_frame(std::uint32_t stream, std::uint32_t increment) {
  std::string payload;
  put32(payload, increment);
  return frame(kWindowUpdate, 0, stream, payload);
}

std::uint32_t Frame::error_code() const {
  if (type == kRstStream && payload.size() >= 4) {
    return get32(payload);
  }
  if (type == kGoaway && payload.size() >= 8) {
    return get32(std::string_view(payload).substr(4));
  }
  return ~0U;
}

std::uint32_t Frame::last_stream_id() const {
  return type == kGoaway && payload.size() >= 4 ? get32(payload) & 0x7fffffffU : ~0U;
}

std::vector<Frame> read_frames(std::string_view bytes) {
  std::vector<Frame> frames;
  while (bytes.size() >= 9) {
    const std::size_t length = (std::size_t(std::uint8_t(bytes[0])) << 16) |
                               (std::size_t(std::uint8_t(bytes[1])) << 8) | std::uint8_t(bytes[2]);
    if (bytes.size() < 9 + length) {
      break;
    }
    frames.push_back(Frame{std::uint8_t(bytes[3]), std::uint8_t(bytes[4]),
                           get32(bytes.substr(5)) & 0x7fffffffU,
                           std::string(bytes.substr(9, length))});
    bytes.remove_prefix(9 + length);
  }
  return frames;
}

HpackEncoder::HpackEncoder() {
  nghttp2_hd_deflater* deflater = nullptr;
  if (nghttp2_hd_deflate_new(&deflater, 4096) != 0) {
    throw std::runtime_error("nghttp2_hd_deflate_new");
  }
  deflater_.reset(deflater);
}

HpackEncoder::~HpackEncoder() = default;

std::string HpackEncoder::encode(const FieldList& fields) {
  std::vector<nghttp2_nv> nva;
  for (const Field& field : fields) {
    nva.push_back(nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(field.name.data())),
                             reinterpret_cast<std::uint8_t*>(const_cast<char*>(field.value.data())),
                             field.name.size(), field.value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  std::string out(nghttp2_hd_deflate_bound(deflater_.get(), nva.data(), nva.size()), '\0');
  const auto written =
      nghttp2_hd_deflate_hd(deflater_.get(), reinterpret_cast<std::uint8_t*>(out.data()),
                            out.size(), nva.data(), nva.size());
  if (written < 0) {
    throw std::runtime_error("nghttp2_hd_deflate_hd");
  }
  out.resize(static_cast<std::size_t>(written));
  return out;
}

HpackDecoder::HpackDecoder() {
  nghttp2_hd_inflater* inflater = nullptr;
  if (nghttp2_hd_inflate_new(&inflater) != 0) {
    throw std::runtime_error("nghttp2_hd_inflate_new");
  }
  inflater_.reset(inflater);
}

HpackDecoder::~HpackDecoder() = default;

FieldList HpackDecoder::decode(std::string_view block) {
  FieldList fields;
  auto* in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(block.data()));
  std::size_t left = block.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const auto read = nghttp2_hd_inflate_hd2(inflater_.get(), &nv, &flags, in, left, 1);
    if (read < 0) {
      throw std::runtime_error("nghttp2_hd_inflate_hd2");
    }
    in += read;
    left -= static_cast<std::size_t>(read);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      fields.push_back(Field{std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                             std::string(reinterpret_cast<char*>(nv.value), nv.valuelen)});
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
      nghttp2_hd_inflate_end_headers(inflater_.get());
      break;
    }
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) {
      break;
    }
  }
  return fields;
}

FieldList request_block(std::string_view method, std::string_view path, std::string_view authority,
                        std::string_view scheme, FieldList fields) {
  FieldList block{{":method", std::string(method)},
                  {":scheme", std::string(scheme)},
                  {":authority", std::string(authority)},
                  {":path", std::string(path)}};
  block.insert(block.end(), fields.begin(), fields.end());
  return block;
}

}  // namespace sandgate::session::exchange::h2::testing
