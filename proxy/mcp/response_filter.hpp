// The response side of the MCP stage: what the pipeline does with an MCP server's answer to a
// POST the stage judged (with the plan judge_request left), or to a GET of the same host.
//   - every answer a client could read messages from is read, and nothing of it passes unread:
//     a POST's 2xx answer with a body is read whole (application/json, at most
//     Limits::response bytes) or event by event (text/event-stream), and any other type is
//     refused (Mode::refuse: the pipeline answers 502); a GET that asked for an event stream
//     (the server's own stream, which the TypeScript SDK's client reads as events whatever its
//     Content-Type) gets one, or a 502. A 202's body is dropped (clients never read one);
//   - tools/list, prompts/list and resources/list results (on a host with lines of that word)
//     are filtered to what may be called (McpStage::listed), by shape: any JSON-RPC result with a
//     `tools` (`prompts`, `resources`) array, in any message of a JSON answer or of any event of
//     a stream (a batch in one event too), so a list sent as the answer to another request, asked
//     for after notifications/tools/list_changed, or replayed on a resumed stream, is filtered
//     too. What stays is the server's own bytes, less the hidden entries;
//   - the gate's answers to the refused requests of a split batch are merged in: into a JSON
//     answer in the order of the requests, before the events of a stream, or instead of a 202
//     (or of an answer without a body);
//   - every event is written again as the SDKs' servers write them, so what the client reads is
//     what the gate read. A message the gate cannot read (not JSON, not an object, a key twice,
//     a JSON-RPC member spelled in another case, too large) is an error: the pipeline cuts the
//     exchange. The one event passed unread is the older HTTP+SSE transport's `endpoint`, whose
//     data is a URL, not JSON.
//
// Thread safety: one filter belongs to one exchange on one thread; it points to its McpStage,
// which must outlive it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/mcp/answers.hpp"
#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/sse/sse_parser.hpp"
#include "rules/expected.hpp"

namespace sandgate::mcp {

class ResponseFilter {
 public:
  // A POST's answer, with what judge_request planned.
  ResponseFilter(const McpStage& stage, ResponsePlan plan);
  // A GET's answer: `stream_asked` when its Accept named text/event-stream (the server's own
  // stream: server-initiated messages, a resumed POST stream), which must be an event stream.
  ResponseFilter(const McpStage& stage, bool stream_asked);

  enum class Mode : std::uint8_t {
    pass,     // send the answer as it is (not 2xx, no body, or a GET no MCP client reads)
    json,     // hold the whole body (at most Limits::response bytes), then finish_json()
    sse,      // each piece through feed_sse(), then end_sse()
    replace,  // write replacement() instead (a 202, or the gate's answers where no body came)
    refuse,   // a 2xx body in a type the gate does not read: answer 502 with refusal()
  };
  // From the answer's status, Content-Type, and whether a body follows.
  Mode start(unsigned status, std::string_view content_type, bool has_body = true);
  // Mode::refuse: why, as a sentence.
  const std::string& refusal() const { return refusal_; }

  // The body to send instead of `body` (Mode::json; one without a message gives the gate's
  // answers alone); the error: cut the exchange (502).
  Expected<std::string, std::string> finish_json(std::string_view body);
  // The bytes to send now for `bytes` of the stream (Mode::sse; the first call also gives the
  // gate's answers); the error: cut the stream.
  Expected<std::string, std::string> feed_sse(std::string_view bytes);
  // At the stream's end: what is still to send (the gate's answers, if no byte came).
  std::string end_sse();
  // Mode::replace: the gate's answers (200), or a 202 without a body when there are none.
  GateAnswer replacement() const;

  // The transport the server answered in (for the connection's `usual`), once start() saw it.
  std::optional<Transport> seen() const { return seen_; }
  // List entries hidden so far.
  std::size_t hidden() const { return hidden_; }

 private:
  using Filtered = Expected<std::optional<std::string>, std::string>;
  Filtered filter_message(std::string_view text, const boost::json::value& message);
  Filtered filter_messages(std::string_view text, const boost::json::value& value);
  void on_event(sse::SseEvent&& event);
  std::string gate_events() const;

  const McpStage* stage_;
  ResponsePlan plan_;
  bool post_ = true;
  bool stream_asked_ = false;
  std::string refusal_;
  std::optional<Transport> seen_;
  bool prologue_sent_ = false;
  std::size_t hidden_ = 0;
  sse::SseParser parser_;
  std::string out_;  // what feed_sse() gives back, built by the parser's handlers
  std::string error_;
};

}  // namespace sandgate::mcp
