// RFC 6455 frames as the gate reads and writes them on an inspected WebSocket: a strict, pure
// codec (no I/O, no allocation on the read path) that the relay (websocket_relay.hpp) runs on
// both directions and the fuzz target runs on arbitrary bytes.
//
// What is refused, each with the close code the gate answers with:
//   - a reserved bit set (RSV1-3) when no extension gave it a meaning (the gate negotiates none);
//   - an opcode RFC 6455 does not define (3-7, 11-15);
//   - a client frame without a mask, a server frame with one (section 5.1);
//   - a length not in its shortest form (126 for < 126 bytes, 127 for < 65536) or a 64-bit
//     length with its most significant bit set (section 5.2);
//   - a control frame (close, ping, pong) longer than 125 bytes or fragmented (section 5.5);
//   - a continuation with no message begun, a new text or binary frame inside a fragmented
//     message (section 5.4);
//   - a close payload of one byte, or with a code an endpoint may not send (section 7.4);
//   - a frame longer than the limits' max_frame, or a message longer than max_message in all
//     (1009, message too big).
// The UTF-8 of text messages and of a close reason is left to the endpoints.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::session::exchange {

enum class Opcode : std::uint8_t {
  continuation = 0x0,
  text = 0x1,
  binary = 0x2,
  close = 0x8,
  ping = 0x9,
  pong = 0xa,
};

// Which end sent a frame: a client's frames are masked, a server's are not.
enum class Sender : std::uint8_t { client, server };

// What a frame or a message may be at most. Defaults: a frame of 16 MiB and a message of
// 64 MiB, far above what realtime APIs send (audio in pieces of tens of kilobytes) and far
// below what would hurt the gate (a frame's payload streams; only a control frame is held).
struct FrameLimits {
  std::uint64_t max_frame = 16 * 1024 * 1024;
  std::uint64_t max_message = 64 * 1024 * 1024;
};

// Close codes (RFC 6455 section 7.4.1) the gate sends.
inline constexpr std::uint16_t kCloseNormal = 1000;
inline constexpr std::uint16_t kCloseGoingAway = 1001;
inline constexpr std::uint16_t kCloseProtocolError = 1002;
inline constexpr std::uint16_t kClosePolicyViolation = 1008;
inline constexpr std::uint16_t kCloseMessageTooBig = 1009;

// Why a frame was refused.
enum class FrameError : std::uint8_t {
  none,
  reserved_bits,             // RSV1-3 set without an extension that gives them a meaning
  unknown_opcode,            // 3-7 or 11-15
  client_frame_unmasked,     // a client must mask every frame
  server_frame_masked,       // a server must mask none
  length_not_minimal,        // 126 or 127 for a length the shorter form holds
  length_too_long,           // a 64-bit length with its most significant bit set
  control_frame_too_long,    // a control frame's payload over 125 bytes
  control_frame_fragmented,  // a control frame without FIN
  continuation_unexpected,   // a continuation with no message begun
  message_unfinished,        // a text or binary frame while a fragmented message goes on
  close_payload_malformed,   // a close payload of one byte
  close_code_invalid,        // a close code an endpoint may not send
  frame_too_large,           // a frame longer than FrameLimits::max_frame
  message_too_large,         // a message longer than FrameLimits::max_message
};

// A sentence for the log ("a client frame without a mask"); never names payload bytes.
const char* describe(FrameError error);
// The close code the gate answers `error` with: 1009 for a limit, 1002 for the rest.
std::uint16_t close_code_for(FrameError error);

struct FrameHeader {
  bool fin = true;
  std::uint8_t reserved = 0;  // RSV1-3, as the three bits below 0x80 of the first byte
  Opcode opcode = Opcode::binary;
  bool masked = false;
  std::array<std::uint8_t, 4> mask{};
  std::uint64_t length = 0;     // the payload's
  std::size_t header_size = 0;  // bytes of the header on the wire (2 to 14)

  bool control() const { return (static_cast<std::uint8_t>(opcode) & 0x8) != 0; }
};

// The result of reading a header from the front of some bytes.
struct HeaderRead {
  enum class Status : std::uint8_t { need_more, ok, refused };
  Status status = Status::need_more;
  FrameHeader header;                   // with ok
  FrameError error = FrameError::none;  // with refused
};

// Reads one frame header from the front of `bytes` and checks what the header alone shows
// (everything above but the sequence and the close payload). `allowed_reserved`: the RSV bits a
// negotiated extension gives a meaning (0: none). Pure; never reads past `bytes`.
HeaderRead read_frame_header(std::string_view bytes, Sender sender,
                             std::uint8_t allowed_reserved = 0);

// The order of one direction's frames: messages, their fragments, and the limits. Feed it every
// header read_frame_header() accepted, in order.
class MessageSequence {
 public:
  explicit MessageSequence(FrameLimits limits = {}) : limits_(limits) {}
  // Checks `header` against the message in progress and the limits, and takes it into account.
  // After an error the sequence is broken: the connection ends.
  FrameError accept(const FrameHeader& header);
  // Whether a data frame is the last of its message (a message ended with it).
  bool message_ended() const { return ended_; }
  bool in_message() const { return in_message_; }
  // Messages begun so far.
  std::uint64_t messages() const { return messages_; }

 private:
  FrameLimits limits_;
  bool in_message_ = false;
  bool ended_ = false;
  std::uint64_t message_size_ = 0;
  std::uint64_t messages_ = 0;
};

// A close frame's payload, unmasked: none, or a code (and a reason, left unread).
// The reason is a copy (at most 123 bytes), so that a close read from a scratch buffer stays
// valid after the buffer goes.
struct ClosePayload {
  std::optional<std::uint16_t> code;
  std::string reason;
};
// Reads a close payload; close_payload_malformed or close_code_invalid when it is neither
// empty nor a code an endpoint may send (1000-1003, 1007-1014, 3000-4999) with a reason.
FrameError read_close_payload(std::string_view payload, ClosePayload& close);

// XORs `size` bytes with `mask`, the first of them being byte `offset` of the payload.
void apply_mask(char* data, std::size_t size, const std::array<std::uint8_t, 4>& mask,
                std::uint64_t offset);

// A frame header in its shortest form. With `mask`, the mask bit is set and the key follows.
std::string encode_frame_header(bool fin, Opcode opcode, std::uint64_t length,
                                const std::array<std::uint8_t, 4>* mask = nullptr);

// A whole close frame with `code` and `reason` (cut to fit in 125 bytes), masked with `mask`
// when given (the gate writing to a server).
std::string encode_close_frame(std::uint16_t code, std::string_view reason,
                               const std::array<std::uint8_t, 4>* mask = nullptr);

}  // namespace sandgate::session::exchange
