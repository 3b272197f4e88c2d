// JSON-RPC 2.0 messages as MCP's Streamable HTTP carries them in a POST body: one message or a
// batch (an array; MCP 2025-03-26 has them, and the SDKs' servers still take them), read once
// and strictly (json_reading.hpp), each classified by what the gate does with it:
//
//   judged     tools/call (the tool's name), prompts/get (the prompt's name), resources/read and
//              resources/subscribe (the resource's URI): the MCP lines decide (rules/mcp_rules.hpp)
//   protocol   MCP's own methods, which pass: initialize, ping, notifications/*, the lists
//              (tools/list, prompts/list, resources/list, resources/templates/list),
//              resources/unsubscribe, completion/complete, logging/setLevel, tasks/*
//   unknown    any other method: refused on a host with MCP lines (an allow-list of methods, so
//              that no method the gate does not know runs a tool past it)
//   response   the client's answer to a request of the server's (sampling, elicitation, roots)
//
// A body with anything the gate cannot judge is refused whole (ReadProblem): not JSON, too
// large or too deep, a key twice, an empty batch or one over the bound, a message that is not
// an object or not JSON-RPC 2.0, an id that is not a string or an integer (the gate could not
// answer with it exactly), a judged method whose name is missing or not a string, a member
// spelled in another case than JSON-RPC's and MCP's ("Method", "NAME": servers that read
// names in any case take it for the member the gate did not read).
//
// Pure functions; thread-safe.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/mcp/json_reading.hpp"
#include "rules/expected.hpp"
#include "rules/mcp_rules.hpp"

namespace sandgate::mcp {

enum class MethodClass : std::uint8_t { judged, protocol, unknown, response };

// What a method is; for a judged one, what it is about.
struct MethodInfo {
  MethodClass what = MethodClass::unknown;
  rules::McpKind kind = rules::McpKind::tool;  // judged methods
  std::string_view name_field;                 // "name" or "uri": where params hold the name
};
MethodInfo classify_method(std::string_view method);

// The list methods whose results the gate filters, and the array and field of each entry:
// tools/list -> result.tools[].name, prompts/list -> result.prompts[].name,
// resources/list -> result.resources[].uri.
struct ListShape {
  rules::McpKind kind;
  std::string_view array;  // "tools", "prompts", "resources"
  std::string_view field;  // "name", "uri"
};
inline constexpr ListShape kListShapes[] = {
    {rules::McpKind::tool, "tools", "name"},
    {rules::McpKind::prompt, "prompts", "name"},
    {rules::McpKind::resource, "resources", "uri"},
};
// The list method of `kind` ("tools/list", ...).
std::string_view list_method(rules::McpKind kind);

// One message of a body.
struct Message {
  std::string_view raw;  // its bytes in the body, as sent
  boost::json::value value;
  MethodInfo info;
  std::string method;  // requests and notifications; empty for a response
  bool has_id = false;
  boost::json::value id;  // a string or an integer, when has_id
  std::string name;       // a judged method's name or URI, decoded as the server decodes it
};

struct Body {
  bool batch = false;  // the body was an array (its answer is an array too)
  std::vector<Message> messages;
};

struct ReadProblem {
  bool too_large = false;  // answered 413 rather than 400
  std::string sentence;    // "the request body cannot be judged: it has a key twice ..."
};

struct MessageLimits {
  JsonLimits json;
  std::size_t max_batch = 100;  // the TypeScript SDK server's own bound
};

Expected<Body, ReadProblem> read_body(std::string_view text, const MessageLimits& limits);

// Reads one message an MCP server sent (a JSON answer's element, an SSE event's data) as far as
// the response side needs: the value, and whether it is JSON-RPC at all.
Expected<boost::json::value, JsonProblem> read_server_message(std::string_view text,
                                                              const JsonLimits& limits);

}  // namespace sandgate::mcp
