// The response side of the MCP stage: what the pipeline does with an MCP server's answer to a
// POST the stage judged (with the plan judge_request left), or with the server's own GET stream.
//   - tools/list, prompts/list and resources/list results (on a host with lines of that word)
//     are filtered to what may be called (McpStage::listed), by shape: any JSON-RPC result with a
//     `tools` (`prompts`, `resources`) array, in a JSON answer or in any event of a stream, so a
//     list fetched after notifications/tools/list_changed, or replayed on a resumed stream, is
//     filtered too. What stays is the server's own bytes, less the hidden entries;
//   - the gate's answers to the refused requests of a split batch are merged in: into a JSON
//     answer in the order of the requests, before the events of a stream, or instead of a 202;
//   - a JSON answer is read only when there is a list to filter or an answer to merge; an event
//     stream always, event by event (each at most Limits::response bytes): every event is
//     written again as the SDKs' servers write them, so what the client reads is what the gate
//     read. A message the gate cannot read (not JSON, a key twice, too large) is an error: the
//     pipeline cuts the exchange.
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
  // The GET stream (server-initiated messages; a resumed POST stream): lists filtered.
  explicit ResponseFilter(const McpStage& stage);

  enum class Mode : std::uint8_t {
    pass,     // send the answer as it is
    json,     // hold the whole body (at most Limits::response bytes), then finish_json()
    sse,      // each piece through feed_sse(), then end_sse()
    replace,  // write replacement() instead (a 202 for a batch whose requests the gate answered)
  };
  // From the answer's status and Content-Type.
  Mode start(unsigned status, std::string_view content_type);

  // The body to send instead of `body` (Mode::json); the error: cut the exchange (502).
  Expected<std::string, std::string> finish_json(std::string_view body);
  // The bytes to send now for `bytes` of the stream (Mode::sse; the first call also gives the
  // gate's answers); the error: cut the stream.
  Expected<std::string, std::string> feed_sse(std::string_view bytes);
  // At the stream's end: what is still to send (the gate's answers, if no byte came).
  std::string end_sse();
  GateAnswer replacement() const;

  // The transport the server answered in (for the connection's `usual`), once start() saw it.
  std::optional<Transport> seen() const { return seen_; }
  // List entries hidden so far.
  std::size_t hidden() const { return hidden_; }

 private:
  std::optional<std::string> filtered(std::string_view message_text,
                                      const boost::json::value& message);
  std::string gate_events() const;

  const McpStage* stage_;
  ResponsePlan plan_;
  std::optional<Transport> seen_;
  bool prologue_sent_ = false;
  std::size_t hidden_ = 0;
  sse::SseParser parser_;
  std::string out_;  // what feed_sse() gives back, built by the parser's handlers
  std::string error_;
};

}  // namespace sandgate::mcp
