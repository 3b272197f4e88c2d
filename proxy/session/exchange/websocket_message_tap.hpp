// --log-websocket-messages: what each data message of an inspected WebSocket said, for a log line
// of its own. Off by default: a message holds what an agent sends and is told, as a request body
// does, and the log carries only counts and sizes (the end line's tally) unless the operator asks.
//
// The tap sees each data frame's payload as the relay reads it (a client's unmasked here) and
// keeps the first kShown bytes of each message, cleaned of the real values of the secrets bound to
// the host whichever way it went, as the relay's redaction cleans the origin's stream: a value may
// be cut across frames and messages. So the tap cleans, at once, the last bytes of the direction
// before the message (as many as the widest spelling of a secret spans, so that a value the
// message ends is whole), the message's first kShown bytes and as many again after them (so that
// a value the shown part cuts is whole), with the stream's own cleaning of a beginning the bytes
// end in (secrets::StreamRedaction, as at a body's end); then shows the first kShown. A message is
// logged when its last frame ends, or, unfinished, when the WebSocket ends in the middle of it.
// Control frames are not logged.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/session/exchange/websocket_frame.hpp"

namespace sandgate::session::exchange {

// One message, as the tap hands it to the log.
struct LoggedMessage {
  bool upward = true;      // client to origin
  bool text = true;        // a text message; otherwise binary
  std::uint64_t size = 0;  // its payload bytes (so far, when unfinished)
  std::string_view shown;  // its first bytes (at most kShown), cleaned; raw bytes for binary
  bool finished = true;    // false: the WebSocket ended in the middle of it
};

class MessageLog {
 public:
  virtual ~MessageLog() = default;
  virtual void message(const LoggedMessage& message) = 0;
};

class MessageTap {
 public:
  static constexpr std::size_t kShown = 1024;

  // `redactions` may be null (no secret bound to the host); it and `log` outlive the tap.
  MessageTap(MessageLog& log, const std::vector<secrets::Redaction>* redactions);

  // A data frame's header (text, binary or continuation) before its payload.
  void frame_begins(bool upward, const FrameHeader& header);
  // Some of that frame's payload, as it came (masked, from a client).
  void payload(bool upward, std::string_view bytes);
  // The frame's payload is all passed; with `fin`, its message is logged.
  void frame_ends(bool upward, bool fin);
  // The WebSocket ended: a message in the middle is logged as unfinished.
  void finish();

 private:
  struct Capture {
    bool open = false;
    bool text = true;
    std::uint64_t size = 0;
    std::string bytes;   // the message's first bytes, at most kShown + margin_
    std::string before;  // the direction's last margin_ bytes before the message, as they came
    std::string recent;  // the direction's last bytes so far (becomes `before`), at most margin_
    bool masked = false;
    std::array<std::uint8_t, 4> mask{};
    std::uint64_t frame_offset = 0;  // into the current frame's payload, for the mask
  };
  Capture& of(bool upward) { return upward ? up_ : down_; }
  void log_message(bool upward, bool finished);

  MessageLog& log_;
  const std::vector<secrets::Redaction>* redactions_;
  std::size_t margin_ = 0;  // the widest spelling of a bound secret: bytes kept on either side
  Capture up_;
  Capture down_;
};

}  // namespace sandgate::session::exchange
