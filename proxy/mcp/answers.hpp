// The answers the MCP stage writes itself, and in which transport: a refused tools/call's tool
// result marked isError (the text the model reads), another refused request's JSON-RPC error, a
// body the gate cannot read's parse error; as one JSON message, a JSON array (a batch), or
// server-sent events as the SDKs' servers write them. Every string goes through the one JSON
// writer (proxy/json/json_writer.hpp).
//
// Pure functions; thread-safe.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::mcp {

// JSON-RPC error codes of the gate's answers: a refused request (a server error of the
// implementation-defined range, as the SDKs' own transport refusals use), an unknown method, and
// a body the gate cannot read (a parse error, as the SDKs answer one).
inline constexpr int kRefusedCode = -32000;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kParseError = -32700;

// How an answer travels: application/json or text/event-stream.
enum class Transport : std::uint8_t { json, sse };
std::string_view content_type(Transport transport);

// The media type of a Content-Type (or of one Accept range): lower case, without parameters.
std::string media_type(std::string_view content_type);

// The transport of the gate's own answer: JSON when the request's Accept takes it (or names
// nothing), unless the server answered this connection in SSE last (`usual`) and Accept takes
// that; SSE when Accept takes only that.
Transport choose_transport(std::string_view accept, std::optional<Transport> usual);

// An answer the gate writes itself.
struct GateAnswer {
  unsigned status = 200;
  std::string content_type;  // empty for a 202 without a body
  std::string body;
};

// A refused tools/call's answer (one JSON-RPC message): a tool result marked isError.
std::string tool_error_result(const boost::json::value& id, std::string_view text);
// Any other refused request's answer: a JSON-RPC error, with the reason code and the rule as its
// data when `reason` is not empty.
std::string error_answer(const boost::json::value& id, int code, std::string_view message,
                         std::string_view reason, std::string_view rule);
// One event of a stream: `event:`, `id:` when not empty, one `data:` line per line of `data`.
std::string sse_event(std::string_view type, std::string_view id, std::string_view data);
// Messages as one answer in `transport`: a JSON object (an array for a batch or for several),
// or one event each.
GateAnswer render(const std::vector<std::string>& messages, bool batch, Transport transport);

}  // namespace sandgate::mcp
