// The stage that cleans what an origin sends on a WebSocket of the real values of masked
// secrets (proxy/secrets/redaction.hpp), as the HTTP response side cleans a body.
//
// The payloads of the origin's data frames are one stream to StreamRedaction, across the frames
// of a message and across messages, so an echo split between two frames (or two messages) is
// still found whole. A redaction keeps the length, so every byte stays at its place in the
// stream and every frame keeps its length: the stage writes each frame's header back exactly
// where its payload begins in that stream, and holds nothing but the tail StreamRedaction holds
// (a frame whose end is held waits, whole but for that tail, until the next bytes decide it).
// A server's frames are not masked: the payload is the bytes themselves.
//
// Not thread-safe; one per WebSocket, on its worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/secrets/redaction.hpp"

namespace sandgate::session::exchange {

class PayloadRedaction {
 public:
  // How many payload bytes one pass takes at most: a TLS record's plaintext, the most one read
  // of the origin brings (a larger buffer would only cost every open WebSocket memory).
  static constexpr std::size_t kPiece = 16 * 1024;

  explicit PayloadRedaction(const std::vector<secrets::Redaction>& redactions);

  // A data frame begins: `header` is written just before its first payload byte.
  void frame_begins(std::string header, std::uint64_t length);
  // Where the next payload bytes go (room for kPiece of them); then pass() says how many.
  char* fresh_space() { return buffer_.data() + redaction_.carried(); }
  // Cleans `fresh` new payload bytes and appends to `out` what may be written now (headers
  // and cleaned payload, in order).
  void pass(std::size_t fresh, std::string& out);
  // The origin paused: appends what of the held tail may go now.
  void on_pause(std::string& out);
  // Everything held goes now, cleaned as far as it goes (before a control frame, which may not
  // be written inside a data frame, and at the end).
  void flush(std::string& out);
  // A control frame's payload (a close reason, a ping's or pong's data), cleaned whole in place:
  // at most 125 bytes, apart from the data frames' stream (an origin could otherwise hand the
  // value over in a close reason).
  void clean_control(std::string& payload);
  // Payload bytes received and not yet given out.
  std::uint64_t held() const { return received_ - released_; }
  // Whether the last frame begun is written whole: a frame of the gate's own may follow.
  bool between_frames() const { return released_ == frame_end_ && pending_.empty(); }
  // Forms of secrets replaced so far.
  std::size_t replaced() const { return redaction_.replaced() + control_replaced_; }

 private:
  // Appends `size` cleaned bytes at the stream's release point to `out`, each frame header
  // before the first byte of its frame.
  void release(const char* data, std::size_t size, std::string& out);
  void headers_due(std::string& out);

  const std::vector<secrets::Redaction>& redactions_;
  secrets::StreamRedaction redaction_;
  std::vector<char> buffer_;
  std::size_t control_replaced_ = 0;
  struct PendingHeader {
    std::uint64_t at;  // the stream position of the frame's first payload byte
    std::string header;
  };
  std::deque<PendingHeader> pending_;
  std::uint64_t received_ = 0;   // payload bytes passed in
  std::uint64_t released_ = 0;   // of them, given out
  std::uint64_t frame_end_ = 0;  // where the last frame begun ends
};

}  // namespace sandgate::session::exchange
