// RFC 6455 frames: reading headers, the order of messages, close payloads, writing headers. See
// websocket_frame.hpp.
#include "proxy/session/exchange/websocket_frame.hpp"

#include <algorithm>

namespace sandgate::session::exchange {

const char* describe(FrameError error) {
  switch (error) {
    case FrameError::none:
      return "no error";
    case FrameError::reserved_bits:
      return "a frame with a reserved bit set (no extension was negotiated)";
    case FrameError::unknown_opcode:
      return "a frame with an opcode RFC 6455 does not define";
    case FrameError::client_frame_unmasked:
      return "a client frame without a mask";
    case FrameError::server_frame_masked:
      return "a server frame with a mask";
    case FrameError::length_not_minimal:
      return "a frame length not in its shortest form";
    case FrameError::length_too_long:
      return "a 64-bit frame length with its most significant bit set";
    case FrameError::control_frame_too_long:
      return "a control frame longer than 125 bytes";
    case FrameError::control_frame_fragmented:
      return "a fragmented control frame";
    case FrameError::continuation_unexpected:
      return "a continuation frame with no message begun";
    case FrameError::message_unfinished:
      return "a new message inside a fragmented one";
    case FrameError::close_payload_malformed:
      return "a close frame with a one-byte payload";
    case FrameError::close_code_invalid:
      return "a close frame with a code an endpoint may not send";
    case FrameError::frame_too_large:
      return "a frame larger than the gate's limit";
    case FrameError::message_too_large:
      return "a message larger than the gate's limit";
  }
  return "a malformed frame";
}

std::uint16_t close_code_for(FrameError error) {
  return error == FrameError::frame_too_large || error == FrameError::message_too_large
             ? kCloseMessageTooBig
             : kCloseProtocolError;
}

HeaderRead read_frame_header(std::string_view bytes, Sender sender, std::uint8_t allowed_reserved) {
  HeaderRead read;
  if (bytes.size() < 2) {
    return read;
  }
  const auto byte = [&bytes](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
  auto refuse = [&read](FrameError error) {
    read.status = HeaderRead::Status::refused;
    read.error = error;
    return read;
  };
  FrameHeader& h = read.header;
  h.fin = (byte(0) & 0x80) != 0;
  h.reserved = byte(0) & 0x70;
  const std::uint8_t opcode = byte(0) & 0x0f;
  h.masked = (byte(1) & 0x80) != 0;
  const std::uint8_t length7 = byte(1) & 0x7f;
  if ((h.reserved & ~allowed_reserved) != 0) {
    return refuse(FrameError::reserved_bits);
  }
  if ((opcode > 0x2 && opcode < 0x8) || opcode > 0xa) {
    return refuse(FrameError::unknown_opcode);
  }
  h.opcode = static_cast<Opcode>(opcode);
  if (sender == Sender::client && !h.masked) {
    return refuse(FrameError::client_frame_unmasked);
  }
  if (sender == Sender::server && h.masked) {
    return refuse(FrameError::server_frame_masked);
  }
  if (h.control()) {
    // Known from the first two bytes: refused before any more is read.
    if (!h.fin) {
      return refuse(FrameError::control_frame_fragmented);
    }
    if (length7 > 125) {
      return refuse(FrameError::control_frame_too_long);
    }
  }
  std::size_t size = 2;
  if (length7 == 126) {
    if (bytes.size() < 4) {
      return read;
    }
    h.length = (std::uint64_t{byte(2)} << 8) | byte(3);
    if (h.length < 126) {
      return refuse(FrameError::length_not_minimal);
    }
    size = 4;
  } else if (length7 == 127) {
    if (bytes.size() < 10) {
      return read;
    }
    if ((byte(2) & 0x80) != 0) {
      return refuse(FrameError::length_too_long);
    }
    h.length = 0;
    for (std::size_t i = 2; i < 10; ++i) {
      h.length = (h.length << 8) | byte(i);
    }
    if (h.length <= 0xffff) {
      return refuse(FrameError::length_not_minimal);
    }
    size = 10;
  } else {
    h.length = length7;
  }
  if (h.masked) {
    if (bytes.size() < size + 4) {
      return read;
    }
    for (std::size_t i = 0; i < 4; ++i) {
      h.mask[i] = byte(size + i);
    }
    size += 4;
  }
  h.header_size = size;
  read.status = HeaderRead::Status::ok;
  return read;
}

FrameError MessageSequence::accept(const FrameHeader& header) {
  ended_ = false;
  if (header.length > limits_.max_frame) {
    return FrameError::frame_too_large;
  }
  if (header.control()) {
    return FrameError::none;  // between fragments as anywhere; read_frame_header checked it
  }
  if (header.opcode == Opcode::continuation) {
    if (!in_message_) {
      return FrameError::continuation_unexpected;
    }
  } else {
    if (in_message_) {
      return FrameError::message_unfinished;
    }
    in_message_ = true;
    message_size_ = 0;
    ++messages_;
  }
  if (header.length > limits_.max_message - message_size_) {
    return FrameError::message_too_large;
  }
  message_size_ += header.length;
  if (header.fin) {
    in_message_ = false;
    ended_ = true;
  }
  return FrameError::none;
}

FrameError read_close_payload(std::string_view payload, ClosePayload& close) {
  close = {};
  if (payload.empty()) {
    return FrameError::none;
  }
  if (payload.size() == 1) {
    return FrameError::close_payload_malformed;
  }
  const auto code = static_cast<std::uint16_t>((static_cast<std::uint8_t>(payload[0]) << 8) |
                                               static_cast<std::uint8_t>(payload[1]));
  // An allow-list of what an endpoint may put on the wire: the codes RFC 6455 and IANA's
  // registry define (1004-1006 and 1015 are reserved for reports, never sent), and the ranges
  // left to libraries and applications.
  const bool defined = (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014);
  const bool private_use = code >= 3000 && code <= 4999;
  if (!defined && !private_use) {
    return FrameError::close_code_invalid;
  }
  close.code = code;
  close.reason = payload.substr(2);
  return FrameError::none;
}

void apply_mask(char* data, std::size_t size, const std::array<std::uint8_t, 4>& mask,
                std::uint64_t offset) {
  for (std::size_t i = 0; i < size; ++i) {
    data[i] = static_cast<char>(static_cast<std::uint8_t>(data[i]) ^ mask[(offset + i) % 4]);
  }
}

std::string encode_frame_header(bool fin, Opcode opcode, std::uint64_t length,
                                const std::array<std::uint8_t, 4>* mask) {
  std::string header;
  header.push_back(static_cast<char>((fin ? 0x80 : 0x00) | static_cast<std::uint8_t>(opcode)));
  const std::uint8_t mask_bit = mask != nullptr ? 0x80 : 0x00;
  if (length < 126) {
    header.push_back(static_cast<char>(mask_bit | length));
  } else if (length <= 0xffff) {
    header.push_back(static_cast<char>(mask_bit | 126));
    header.push_back(static_cast<char>(length >> 8));
    header.push_back(static_cast<char>(length & 0xff));
  } else {
    header.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      header.push_back(static_cast<char>((length >> shift) & 0xff));
    }
  }
  if (mask != nullptr) {
    header.append(reinterpret_cast<const char*>(mask->data()), mask->size());
  }
  return header;
}

std::string encode_close_frame(std::uint16_t code, std::string_view reason,
                               const std::array<std::uint8_t, 4>* mask) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xff));
  payload.append(reason.substr(0, 123));
  if (mask != nullptr) {
    apply_mask(payload.data(), payload.size(), *mask, 0);
  }
  return encode_frame_header(true, Opcode::close, payload.size(), mask) + payload;
}

}  // namespace sandgate::session::exchange
