// The filter of an MCP server's answers (see response_filter.hpp).
#include "proxy/mcp/response_filter.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace sandgate::mcp {
namespace {

namespace json = boost::json;

bool same_id(const json::value& a, const json::value& b) {
  if (a.is_string() || b.is_string()) {
    return a.is_string() && b.is_string() && a.get_string() == b.get_string();
  }
  // Integers: an id the client sent as 5 and one the server wrote as 5 are the same, whichever
  // of int64 and uint64 each was read as.
  const auto as_wide = [](const json::value& v) -> std::optional<std::uint64_t> {
    if (v.is_int64() && v.get_int64() >= 0) {
      return static_cast<std::uint64_t>(v.get_int64());
    }
    if (v.is_uint64()) {
      return v.get_uint64();
    }
    return std::nullopt;
  };
  if (a.is_int64() && b.is_int64()) {
    return a.get_int64() == b.get_int64();
  }
  const auto wide_a = as_wide(a);
  const auto wide_b = as_wide(b);
  return wide_a && wide_b && *wide_a == *wide_b;
}

// The members of a list result, as the gate reads them (kJsonRpcMembers for the message's): a
// server that spells one in another case is read differently by clients that match names in any
// case.
constexpr std::array<std::string_view, 3> kListArrays = {"tools", "prompts", "resources"};

// Whether an event's data may be passed unread: the older HTTP+SSE transport's `endpoint` event,
// one line of a URL that no client reads as a message (it cannot be a JSON object or array).
bool endpoint_url(const sse::SseEvent& event) {
  if (event.type != "endpoint" || event.data.find('\n') != std::string::npos) {
    return false;
  }
  const std::string_view data = trim_json(event.data);
  return !data.empty() && data.front() != '{' && data.front() != '[';
}

std::string readable(std::string_view content_type) {
  return content_type.empty() ? std::string("no Content-Type")
                              : "Content-Type '" + std::string(content_type.substr(0, 64)) + "'";
}

}  // namespace

ResponseFilter::ResponseFilter(const McpStage& stage, ResponsePlan plan)
    : stage_(&stage),
      plan_(std::move(plan)),
      parser_(stage.setting().limits.response.max_bytes,
              stage.setting().limits.response.max_bytes) {}

ResponseFilter::ResponseFilter(const McpStage& stage, bool stream_asked)
    : ResponseFilter(stage, ResponsePlan{}) {
  post_ = false;
  stream_asked_ = stream_asked;
}

ResponseFilter::Mode ResponseFilter::start(unsigned status, std::string_view type, bool has_body) {
  const std::string media = media_type(type);
  if (media == "application/json") {
    seen_ = Transport::json;
  } else if (media == "text/event-stream") {
    seen_ = Transport::sse;
  }
  if (status < 200 || status > 299) {
    return Mode::pass;  // clients read no message from an error's body
  }
  if (!post_) {
    if (seen_ == Transport::sse) {
      return Mode::sse;
    }
    if (stream_asked_ && has_body) {
      refusal_ = "the MCP server answered the GET for its event stream with " + readable(type) +
                 ": an MCP client reads any answer there as events, so the gate reads only an "
                 "event stream.";
      return Mode::refuse;
    }
    return Mode::pass;
  }
  // A 202 carries nothing a client reads; an answer without a body may still owe the client the
  // gate's answers.
  if (status == 202 || !has_body) {
    return status == 202 || plan_.has_gate_answers() ? Mode::replace : Mode::pass;
  }
  if (seen_ == Transport::sse) {
    return Mode::sse;
  }
  if (seen_ == Transport::json) {
    return Mode::json;
  }
  refusal_ = "the MCP server answered with " + readable(type) +
             ": the gate reads MCP answers as application/json or text/event-stream only, and "
             "passes none unread.";
  return Mode::refuse;
}

GateAnswer ResponseFilter::replacement() const {
  std::vector<std::string> answers;
  for (const ResponsePlan::Slot& slot : plan_.slots) {
    if (slot.gate_answer) {
      answers.push_back(*slot.gate_answer);
    }
  }
  if (answers.empty()) {
    return GateAnswer{202, {}, {}};
  }
  return render(answers, plan_.batch, plan_.gate_transport);
}

// One message with its list result filtered, or nothing when it is unchanged.
ResponseFilter::Filtered ResponseFilter::filter_message(std::string_view text,
                                                        const json::value& message) {
  if (!message.is_object()) {
    return Unexpected{std::string("a message is not a JSON object")};
  }
  if (auto key = misspelled_member(message.get_object(), kJsonRpcMembers)) {
    return Unexpected{"a message has a member " + quoted_key(*key) +
                      ", which clients that read names in any case take for " + folded_key(*key)};
  }
  const json::value* result = message.get_object().if_contains("result");
  if (result == nullptr || !result->is_object()) {
    return std::optional<std::string>();
  }
  if (auto key = misspelled_member(result->get_object(), kListArrays)) {
    return Unexpected{"a result has a member " + quoted_key(*key) +
                      ", which clients that read names in any case take for " + folded_key(*key)};
  }
  for (const ListShape& shape : kListShapes) {
    const json::value* entries = result->get_object().if_contains(shape.array);
    if (entries == nullptr || !entries->is_array()) {
      continue;
    }
    // Which entries stay: those a call could be allowed for. An entry without a string name
    // cannot be judged, and is hidden.
    std::vector<bool> keep;
    for (const json::value& entry : entries->get_array()) {
      const json::value* name =
          entry.is_object() ? entry.get_object().if_contains(shape.field) : nullptr;
      keep.push_back(name != nullptr && name->is_string() &&
                     stage_->listed(shape.kind, std::string_view(name->get_string())));
    }
    if (std::all_of(keep.begin(), keep.end(), [](bool k) { return k; })) {
      continue;
    }
    // The message's own bytes, with the hidden entries cut out of the array.
    std::string_view array_text;
    for (const RawMember& member : raw_members(text)) {
      if (member.key != "result") {
        continue;
      }
      for (const RawMember& inner : raw_members(member.value)) {
        if (inner.key == shape.array) {
          array_text = inner.value;
        }
      }
    }
    const std::vector<std::string_view> elements = raw_elements(array_text);
    if (array_text.empty() || elements.size() != keep.size()) {
      return Unexpected{std::string("a list could not be split")};  // not for what read_json took
    }
    std::string kept = "[";
    bool first = true;
    for (std::size_t i = 0; i < elements.size(); ++i) {
      if (keep[i]) {
        kept += (first ? "" : ",") + std::string(elements[i]);
        first = false;
      } else {
        ++hidden_;
      }
    }
    kept += "]";
    const std::size_t at = static_cast<std::size_t>(array_text.data() - text.data());
    std::string out(text.substr(0, at));
    out += kept;
    out += text.substr(at + array_text.size());
    return std::optional<std::string>(std::move(out));
  }
  return std::optional<std::string>();
}

// One message or a batch of them (an array of objects), each filtered.
ResponseFilter::Filtered ResponseFilter::filter_messages(std::string_view text,
                                                         const json::value& value) {
  if (!value.is_array()) {
    return filter_message(text, value);
  }
  const std::vector<std::string_view> raws = raw_elements(text);
  if (raws.size() != value.get_array().size()) {
    return Unexpected{std::string("a batch could not be split")};
  }
  bool changed = false;
  std::string out = "[";
  for (std::size_t i = 0; i < raws.size(); ++i) {
    auto one = filter_message(raws[i], value.get_array()[i]);
    if (!one) {
      return Unexpected{std::move(one.error())};
    }
    changed = changed || one->has_value();
    out += (i == 0 ? "" : ",") + (one->has_value() ? **one : std::string(raws[i]));
  }
  if (!changed) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(out + "]");
}

Expected<std::string, std::string> ResponseFilter::finish_json(std::string_view body) {
  const JsonLimits& limits = stage_->setting().limits.response;
  // The server's messages, each as its own (possibly filtered) text.
  struct Answer {
    std::string text;
    json::value id;
    bool has_id = false;
    bool used = false;
  };
  std::vector<Answer> answers;
  bool array = false;
  if (body.size() > limits.max_bytes || !trim_json(body).empty()) {
    auto value = read_server_message(body, limits);
    if (!value) {
      return Unexpected{"the MCP server's answer cannot be read: " + value.error().sentence};
    }
    array = value->is_array();
    const std::vector<std::string_view> raws =
        array ? raw_elements(body) : std::vector<std::string_view>{trim_json(body)};
    const std::size_t count = array ? value->get_array().size() : 1;
    if (raws.size() != count) {
      return Unexpected{
          std::string("the MCP server's answer cannot be read: a batch could not "
                      "be split")};
    }
    for (std::size_t i = 0; i < count; ++i) {
      const json::value& message = array ? value->get_array()[i] : *value;
      auto changed = filter_message(raws[i], message);
      if (!changed) {
        return Unexpected{"the MCP server's answer cannot be read: " + changed.error()};
      }
      Answer answer;
      answer.text = changed->has_value() ? std::move(**changed) : std::string(raws[i]);
      if (const json::value* id = message.get_object().if_contains("id")) {
        answer.has_id = true;
        answer.id = *id;
      }
      answers.push_back(std::move(answer));
    }
  }
  if (!plan_.has_gate_answers() && answers.size() == 1 && !array) {
    return std::move(answers.front().text);
  }
  // In the order of the requests: the gate's answer or the server's; then whatever else the
  // server sent (an error without an id, say).
  std::vector<std::string> merged;
  for (const ResponsePlan::Slot& slot : plan_.slots) {
    if (slot.gate_answer) {
      merged.push_back(*slot.gate_answer);
      continue;
    }
    for (Answer& answer : answers) {
      if (!answer.used && answer.has_id && same_id(answer.id, slot.id)) {
        answer.used = true;
        merged.push_back(std::move(answer.text));
        break;
      }
    }
  }
  for (Answer& answer : answers) {
    if (!answer.used && !answer.text.empty()) {
      merged.push_back(std::move(answer.text));
    }
  }
  if (merged.empty()) {
    return std::string();
  }
  const bool as_array = plan_.batch || array || merged.size() != 1;
  return render(merged, as_array, Transport::json).body;
}

std::string ResponseFilter::gate_events() const {
  std::string out;
  for (const ResponsePlan::Slot& slot : plan_.slots) {
    if (slot.gate_answer) {
      out += sse_event("message", {}, *slot.gate_answer);
    }
  }
  return out;
}

// One event of the stream: written again, its data filtered. Every event's data is read,
// whatever its type: a client that takes any event for a message must not get an unfiltered
// list either. A priming event has no data; the older transport's endpoint is a URL.
void ResponseFilter::on_event(sse::SseEvent&& event) {
  if (!error_.empty()) {
    return;
  }
  if (event.data.empty() || endpoint_url(event)) {
    out_ += sse_event(event.type, event.id, event.data);
    return;
  }
  auto value = read_server_message(event.data, stage_->setting().limits.response);
  if (!value) {
    error_ = "an event of the MCP server's stream cannot be read: " + value.error().sentence;
    return;
  }
  auto changed = filter_messages(event.data, *value);
  if (!changed) {
    error_ = "an event of the MCP server's stream cannot be read: " + changed.error();
    return;
  }
  out_ += sse_event(event.type, event.id, changed->has_value() ? **changed : event.data);
}

Expected<std::string, std::string> ResponseFilter::feed_sse(std::string_view bytes) {
  out_.clear();
  if (!prologue_sent_) {
    prologue_sent_ = true;
    out_ = gate_events();
  }
  sse::SseParser::Handlers handlers;
  handlers.on_event = [this](sse::SseEvent&& event) { on_event(std::move(event)); };
  handlers.on_comment = [this] { out_ += ":\n\n"; };
  handlers.on_retry = [this](std::size_t ms) { out_ += "retry: " + std::to_string(ms) + "\n\n"; };
  handlers.on_id_only = [this](std::string&& id) { out_ += "id: " + id + "\n\n"; };
  if (!parser_.feed(bytes, handlers)) {
    return Unexpected{"the MCP server's event stream cannot be read: " + parser_.error()};
  }
  if (!error_.empty()) {
    return Unexpected{error_};
  }
  return std::move(out_);
}

std::string ResponseFilter::end_sse() {
  if (prologue_sent_) {
    return {};
  }
  prologue_sent_ = true;
  return gate_events();
}

}  // namespace sandgate::mcp
