// The gate's own MCP answers (see answers.hpp).
#include "proxy/mcp/answers.hpp"

#include <algorithm>
#include <cctype>

#include "proxy/json/json_writer.hpp"
#include "rules/ascii.hpp"

namespace sandgate::mcp {
namespace {

namespace json = boost::json;

void append_id(std::string& out, const json::value& id) {
  if (id.is_string()) {
    json_writer::append_string(out, std::string_view(id.get_string()));
  } else if (id.is_int64()) {
    out += std::to_string(id.get_int64());
  } else if (id.is_uint64()) {
    out += std::to_string(id.get_uint64());
  } else {
    out += "null";
  }
}

}  // namespace

// The media type of a Content-Type, lower case, without parameters.
std::string media_type(std::string_view content_type) {
  return rules::ascii_lower(rules::trim_ows(content_type.substr(0, content_type.find(';'))));
}

// A refused tools/call's answer: a tool result marked isError, whose text the model reads.
std::string tool_error_result(const json::value& id, std::string_view text) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  append_id(out, id);
  out += R"(,"result":{"content":[{"type":"text","text":)";
  json_writer::append_string(out, text);
  out += R"(}],"isError":true}})";
  return out;
}

// Any other refused request's answer: a JSON-RPC error with the reason and rule as its data.
std::string error_answer(const json::value& id, int code, std::string_view message,
                         std::string_view reason, std::string_view rule) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  append_id(out, id);
  out += R"(,"error":{"code":)" + std::to_string(code) + R"(,"message":)";
  json_writer::append_string(out, message);
  if (!reason.empty()) {
    out += R"(,"data":{"reason":)";
    json_writer::append_string(out, reason);
    out += R"(,"rule":)";
    json_writer::append_string(out, rule);
    out += "}";
  }
  out += "}}";
  return out;
}

// One event of a stream, as the SDKs' servers write them.
std::string sse_event(std::string_view type, std::string_view id, std::string_view data) {
  std::string out = "event: " + std::string(type) + "\n";
  if (!id.empty()) {
    out += "id: " + std::string(id) + "\n";
  }
  std::size_t at = 0;
  while (true) {
    const std::size_t end = data.find('\n', at);
    out += "data: " + std::string(data.substr(at, end - at)) + "\n";
    if (end == std::string_view::npos) {
      break;
    }
    at = end + 1;
  }
  return out + "\n";
}

// Messages as one answer in `transport`: a JSON object (or an array for a batch), or events.
GateAnswer render(const std::vector<std::string>& messages, bool batch, Transport transport) {
  GateAnswer answer;
  answer.content_type = std::string(content_type(transport));
  if (transport == Transport::sse) {
    for (const std::string& message : messages) {
      answer.body += sse_event("message", {}, message);
    }
    return answer;
  }
  if (!batch && messages.size() == 1) {
    answer.body = messages.front();
    return answer;
  }
  answer.body = "[";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    answer.body += (i == 0 ? "" : ",") + messages[i];
  }
  answer.body += "]";
  return answer;
}

std::string_view content_type(Transport transport) {
  return transport == Transport::sse ? "text/event-stream" : "application/json";
}

Transport choose_transport(std::string_view accept, std::optional<Transport> usual) {
  bool json_ok = accept.empty();
  bool sse_ok = accept.empty();
  while (!accept.empty()) {
    const std::size_t comma = accept.find(',');
    const std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    const std::string type = media_type(range);
    // `q=0` says "not this one".
    const std::string params =
        rules::ascii_lower(range.substr(std::min(range.size(), range.find(';'))));
    if (params.find("q=0") != std::string::npos && params.find("q=0.") == std::string::npos) {
      continue;
    }
    json_ok = json_ok || type == "application/json" || type == "application/*" || type == "*/*";
    sse_ok = sse_ok || type == "text/event-stream" || type == "text/*" || type == "*/*";
  }
  if (sse_ok && (!json_ok || usual == Transport::sse)) {
    return Transport::sse;
  }
  return Transport::json;
}

}  // namespace sandgate::mcp
