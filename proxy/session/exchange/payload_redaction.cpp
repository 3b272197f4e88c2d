// Cleaning an origin's WebSocket payloads. See payload_redaction.hpp.
#include "proxy/session/exchange/payload_redaction.hpp"

#include <utility>

namespace sandgate::session::exchange {

PayloadRedaction::PayloadRedaction(const std::vector<secrets::Redaction>& redactions)
    : redactions_(redactions), redaction_(redactions), buffer_(redaction_.front_limit() + kPiece) {}

void PayloadRedaction::clean_control(std::string& payload) {
  control_replaced_ += secrets::redact(payload.data(), payload.size(), redactions_);
}

void PayloadRedaction::frame_begins(std::string header, std::uint64_t length) {
  pending_.push_back({received_, std::move(header)});
  frame_end_ = received_ + length;
}

void PayloadRedaction::headers_due(std::string& out) {
  while (!pending_.empty() && pending_.front().at <= released_) {
    out += pending_.front().header;
    pending_.pop_front();
  }
}

void PayloadRedaction::release(const char* data, std::size_t size, std::string& out) {
  std::size_t done = 0;
  for (;;) {
    headers_due(out);
    if (done == size) {
      return;
    }
    std::uint64_t until = released_ + (size - done);
    if (!pending_.empty() && pending_.front().at < until) {
      until = pending_.front().at;
    }
    const auto count = static_cast<std::size_t>(until - released_);
    out.append(data + done, count);
    done += count;
    released_ += count;
  }
}

void PayloadRedaction::pass(std::size_t fresh, std::string& out) {
  received_ += fresh;
  const auto ready = redaction_.pass(buffer_.data(), fresh, false);
  release(buffer_.data() + ready.from, ready.size, out);
  redaction_.to_front(buffer_.data());
}

void PayloadRedaction::on_pause(std::string& out) {
  const auto ready = redaction_.on_pause();
  release(buffer_.data() + ready.from, ready.size, out);
  redaction_.to_front(buffer_.data());
}

void PayloadRedaction::flush(std::string& out) {
  const auto ready = redaction_.pass(buffer_.data(), 0, true);
  release(buffer_.data() + ready.from, ready.size, out);
  redaction_.to_front(buffer_.data());
}

}  // namespace sandgate::session::exchange
