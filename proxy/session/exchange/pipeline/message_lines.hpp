// The log lines of an inspected WebSocket's messages (--log-websocket-messages): each names the
// exchange as its end line will (method, host, port, path) and carries one message as the tap
// (websocket_message_tap.hpp) handed it over.
#pragma once

#include <string>

#include "proxy/session/exchange/pipeline/end_line.hpp"
#include "proxy/session/exchange/websocket_message_tap.hpp"
#include "proxy/session/session_context.hpp"

namespace sandgate::session::exchange {

class MessageLines final : public MessageLog {
 public:
  // `context` outlives the lines; the exchange's method, host and path are copied.
  MessageLines(SessionContext& context, const EndLine& exchange);
  void message(const LoggedMessage& message) override;

 private:
  SessionContext& context_;
  std::string method_;
  std::string host_;
  std::uint16_t port_;
  std::string path_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace sandgate::session::exchange
