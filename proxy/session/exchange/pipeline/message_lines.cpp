// The log lines of an inspected WebSocket's messages. See message_lines.hpp.
#include "proxy/session/exchange/pipeline/message_lines.hpp"

#include "rules/base64.hpp"

namespace sandgate::session::exchange {

MessageLines::MessageLines(SessionContext& context, const EndLine& exchange)
    : context_(context),
      method_(exchange.method),
      host_(exchange.host),
      port_(exchange.port),
      path_(exchange.path),
      started_(exchange.started) {}

void MessageLines::message(const LoggedMessage& message) {
  EndLine identity;
  identity.method = method_;
  identity.host = host_;
  identity.port = port_;
  identity.path = path_;
  identity.started = started_;
  log::Record line = end_record(context_, identity);
  line.event = log::Record::Event::message;
  line.direction = message.upward ? "up" : "down";
  line.message_kind = message.text ? "text" : "binary";
  line.message_size = message.size;
  // A binary message's bytes would reach the log as escapes of every byte: base64 reads back.
  const std::string encoded = message.text ? std::string() : rules::base64_encoded(message.shown);
  line.contents = message.text ? message.shown : std::string_view(encoded);
  line.contents_cut = message.shown.size() < message.size;
  line.unfinished = !message.finished;
  context_.log().write(line);
}

}  // namespace sandgate::session::exchange
