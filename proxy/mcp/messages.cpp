// JSON-RPC messages of a POST body: reading, checking and classifying (see messages.hpp).
#include "proxy/mcp/messages.hpp"

#include <array>
#include <utility>

namespace sandgate::mcp {
namespace {

namespace json = boost::json;

// MCP's own methods (client to server) that pass: the 2025-03-26, 2025-06-18 and 2025-11-25
// revisions. Notifications (`notifications/...`) pass by prefix.
constexpr std::array<std::string_view, 13> kProtocolMethods = {
    "initialize",
    "ping",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
};

std::string problem(std::string_view what) {
  return "the request body cannot be judged: " + std::string(what) + ".";
}

// The message's checks and class; the sentence of what is wrong, or nothing.
std::optional<std::string> read_message(Message& message) {
  if (!message.value.is_object()) {
    return "a message is not a JSON object";
  }
  const json::object& object = message.value.get_object();
  if (auto key = misspelled_member(object, kJsonRpcMembers)) {
    return "a message has a member " + quoted_key(*key) +
           ", which servers that read names in any case take for " + folded_key(*key);
  }
  const json::value* version = object.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() || version->get_string() != "2.0") {
    return "a message is not JSON-RPC 2.0 (no \"jsonrpc\": \"2.0\")";
  }
  if (const json::value* id = object.if_contains("id")) {
    if (!id->is_string() && !id->is_int64() && !id->is_uint64()) {
      return "a message's id is not a string or an integer";
    }
    message.has_id = true;
    message.id = *id;
  }
  const json::value* method = object.if_contains("method");
  if (method == nullptr) {
    const bool result = object.contains("result");
    const bool error = object.contains("error");
    if (!message.has_id || result == error) {
      return "a message is neither a request, a notification nor a response";
    }
    message.info.what = MethodClass::response;
    return std::nullopt;
  }
  if (!method->is_string()) {
    return "a message's method is not a string";
  }
  message.method = std::string(method->get_string());
  message.info = classify_method(message.method);
  const json::value* params = object.if_contains("params");
  if (params != nullptr && !params->is_object()) {
    return "the params of " + message.method + " are not an object";
  }
  if (message.info.what != MethodClass::judged) {
    return std::nullopt;
  }
  if (params != nullptr) {
    const std::array<std::string_view, 1> name_field = {message.info.name_field};
    if (auto key = misspelled_member(params->get_object(), name_field)) {
      return "the params of " + message.method + " have a member " + quoted_key(*key) +
             ", which servers that read names in any case take for " + folded_key(*key);
    }
  }
  const json::value* name =
      params == nullptr ? nullptr : params->get_object().if_contains(message.info.name_field);
  if (name == nullptr || !name->is_string()) {
    return message.method + " has no " + std::string(message.info.name_field) + " string";
  }
  message.name = std::string(name->get_string());
  return std::nullopt;
}

}  // namespace

MethodInfo classify_method(std::string_view method) {
  if (method == "tools/call") {
    return {MethodClass::judged, rules::McpKind::tool, "name"};
  }
  if (method == "prompts/get") {
    return {MethodClass::judged, rules::McpKind::prompt, "name"};
  }
  if (method == "resources/read" || method == "resources/subscribe") {
    return {MethodClass::judged, rules::McpKind::resource, "uri"};
  }
  if (method.starts_with("notifications/")) {
    return {MethodClass::protocol, rules::McpKind::tool, {}};
  }
  for (const std::string_view known : kProtocolMethods) {
    if (method == known) {
      return {MethodClass::protocol, rules::McpKind::tool, {}};
    }
  }
  return {MethodClass::unknown, rules::McpKind::tool, {}};
}

std::string_view list_method(rules::McpKind kind) {
  switch (kind) {
    case rules::McpKind::tool:
      return "tools/list";
    case rules::McpKind::prompt:
      return "prompts/list";
    case rules::McpKind::resource:
      return "resources/list";
  }
  return {};
}

Expected<Body, ReadProblem> read_body(std::string_view text, const MessageLimits& limits) {
  auto value = read_json(text, limits.json);
  if (!value) {
    return Unexpected{ReadProblem{value.error().kind == JsonProblem::Kind::too_large,
                                  problem(value.error().sentence)}};
  }
  Body body;
  std::vector<std::string_view> raws;
  if (value->is_array()) {
    body.batch = true;
    const json::array& array = value->get_array();
    if (array.empty()) {
      return Unexpected{ReadProblem{false, problem("it is an empty batch")}};
    }
    if (array.size() > limits.max_batch) {
      return Unexpected{ReadProblem{
          false,
          problem("it is a batch of more than " + std::to_string(limits.max_batch) + " messages")}};
    }
    raws = raw_elements(text);
    if (raws.size() != array.size()) {
      return Unexpected{ReadProblem{false, problem("its batch could not be split")}};
    }
    for (std::size_t i = 0; i < array.size(); ++i) {
      body.messages.push_back(Message{raws[i], array[i], {}, {}, false, {}, {}});
    }
  } else {
    body.messages.push_back(Message{trim_json(text), std::move(*value), {}, {}, false, {}, {}});
  }
  for (Message& message : body.messages) {
    if (auto wrong = read_message(message)) {
      return Unexpected{ReadProblem{false, problem(*wrong)}};
    }
  }
  return body;
}

Expected<json::value, JsonProblem> read_server_message(std::string_view text,
                                                       const JsonLimits& limits) {
  return read_json(text, limits);
}

}  // namespace sandgate::mcp
