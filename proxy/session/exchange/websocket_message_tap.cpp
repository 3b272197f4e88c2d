// What each message of an inspected WebSocket said. See websocket_message_tap.hpp.
#include "proxy/session/exchange/websocket_message_tap.hpp"

#include <algorithm>

#include "proxy/secrets/redaction.hpp"

namespace sandgate::session::exchange {

MessageTap::MessageTap(MessageLog& log, const std::vector<secrets::Redaction>* redactions)
    : log_(log), redactions_(redactions) {
  if (redactions_ != nullptr && !redactions_->empty()) {
    // Half the stream's front: the bytes an echo of the widest form may span.
    margin_ = secrets::StreamRedaction(*redactions_).front_limit() / 2;
  }
}

void MessageTap::frame_begins(bool upward, const FrameHeader& header) {
  Capture& c = of(upward);
  if (header.opcode != Opcode::continuation) {
    c.open = true;
    c.text = header.opcode == Opcode::text;
    c.size = 0;
    c.bytes.clear();
    c.before = c.recent;
  }
  c.masked = header.masked;
  c.mask = header.mask;
  c.frame_offset = 0;
}

void MessageTap::payload(bool upward, std::string_view bytes) {
  Capture& c = of(upward);
  if (!c.open) {
    return;
  }
  const std::size_t keep = kShown + margin_;
  const std::size_t wanted =
      c.bytes.size() < keep ? std::min(bytes.size(), keep - c.bytes.size()) : 0;
  const std::size_t from = c.bytes.size();
  c.bytes.append(bytes.substr(0, wanted));
  if (c.masked) {
    for (std::size_t i = 0; i < wanted; ++i) {
      c.bytes[from + i] = static_cast<char>(c.bytes[from + i] ^ c.mask[(c.frame_offset + i) % 4]);
    }
  }
  if (margin_ > 0) {
    // The direction's last margin_ bytes, unmasked where they are appended.
    const std::size_t tail = std::min(bytes.size(), margin_);
    const std::size_t appended = c.recent.size();
    c.recent.append(bytes.substr(bytes.size() - tail));
    if (c.masked) {
      const std::uint64_t at = c.frame_offset + (bytes.size() - tail);
      for (std::size_t i = 0; i < tail; ++i) {
        c.recent[appended + i] = static_cast<char>(c.recent[appended + i] ^ c.mask[(at + i) % 4]);
      }
    }
    if (c.recent.size() > margin_) {
      c.recent.erase(0, c.recent.size() - margin_);
    }
  }
  c.size += bytes.size();
  c.frame_offset += bytes.size();
}

void MessageTap::frame_ends(bool upward, bool fin) {
  if (fin && of(upward).open) {
    log_message(upward, true);
  }
}

void MessageTap::finish() {
  for (const bool upward : {true, false}) {
    if (of(upward).open) {
      log_message(upward, false);
    }
  }
}

void MessageTap::log_message(bool upward, bool finished) {
  Capture& c = of(upward);
  c.open = false;
  std::string_view shown = c.bytes;
  std::string cleaned;
  if (margin_ > 0) {
    // The bytes before the message, so that a value it begins in the middle of is whole; then the
    // stream's cleaning, which also cleans a value's beginning the bytes end in.
    cleaned = c.before + c.bytes;
    secrets::StreamRedaction stream(*redactions_);
    stream.pass(cleaned.data(), cleaned.size(), true);
    shown = std::string_view(cleaned).substr(c.before.size());
  }
  LoggedMessage message;
  message.upward = upward;
  message.text = c.text;
  message.size = c.size;
  message.shown = shown.substr(0, kShown);
  message.finished = finished;
  log_.message(message);
}

}  // namespace sandgate::session::exchange
