// An incremental Server-Sent Events parser (the WHATWG "event stream" format): the one reader of
// event streams in the gate, shared by LaunchDarkly's streaming client (proxy/launchdarkly) and
// the MCP stage's filter of Streamable HTTP answers (proxy/mcp).
//
// Bytes arrive in chunks of any size; complete events come out through a callback. Lines end in
// CRLF, LF or CR (a CRLF split across two chunks counts once); `:` lines are comments (LaunchDarkly
// sends them as heartbeats); `field: value` loses one space after the colon; several `data:`
// lines join with "\n"; a blank line dispatches the event. As the MCP SDKs' readers do
// (eventsource-parser, which the TypeScript SDK uses), an event's fields, its `id` too, reset
// after each blank line, and a block without `data:` lines is no event (its `id`, if any, is
// told to on_id_only, for a filter that writes the stream again). The stream's bytes come from the
// network, so everything is bounded: a line or an event larger than the limit is an error and the
// caller drops the connection.
//
// Pure computation, no I/O: fuzzed in tests/fuzz.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace sandgate::sse {

struct SseEvent {
  std::string type = "message";  // the `event:` field
  std::string data;              // `data:` lines joined with "\n"
  std::string id;                // the `id:` field, if any
};

class SseParser {
 public:
  // Limits: the longest line, and the largest event (its data), in bytes. (LaunchDarkly's `put`
  // is one `data:` line holding every client-side flag of the environment, so its line limit is
  // as large as its event limit.) `limit_name`: the setting that sets them, named in the error.
  explicit SseParser(std::size_t max_line = 32u << 20, std::size_t max_event = 32u << 20,
                     std::string limit_name = {});

  struct Handlers {
    std::function<void(SseEvent&&)> on_event;
    std::function<void()> on_comment;  // a heartbeat; may be empty
    // A valid `retry:` field, in milliseconds, when it is read; may be empty.
    std::function<void(std::size_t)> on_retry = {};
    // A block that ended without `data:` lines but with an `id:`: its id; may be empty.
    std::function<void(std::string&&)> on_id_only = {};
  };

  // Feeds the next bytes. Returns false (and stays failed) when a limit was exceeded; the
  // message says which.
  bool feed(std::string_view bytes, const Handlers& handlers);

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  // The server's `retry:` request, in milliseconds (0: none given).
  std::size_t retry_ms() const { return retry_ms_; }

 private:
  bool consume(std::string_view bytes, const Handlers& handlers);
  void line(std::string_view text, const Handlers& handlers);

  std::size_t max_line_;
  std::size_t max_event_;
  std::string limit_name_;
  bool have_id_ = false;      // the current block has an `id:` line
  std::string partial_;       // the current line, not yet ended
  bool last_was_cr_ = false;  // a CR ended the previous line: a following LF belongs to it
  bool at_start_ = true;      // a UTF-8 byte order mark is skipped at the very start
  std::string bom_held_;      // the first bytes, while they may still be a BOM
  SseEvent event_;
  bool have_data_ = false;
  std::size_t retry_ms_ = 0;
  std::string error_;
};

}  // namespace sandgate::sse
