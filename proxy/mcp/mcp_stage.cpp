// The MCP stage (see mcp_stage.hpp): judging a POST body's messages, the gate's own answers, and
// the filter of the server's answers.
#include "proxy/mcp/mcp_stage.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "proxy/json/json_writer.hpp"

namespace sandgate::mcp {
namespace {

namespace json = boost::json;
using rules::McpKind;
using rules::McpVerdict;

// JSON-RPC error codes of the gate's answers: a refused request (a server error of the
// implementation-defined range, as the SDKs' own transport refusals use), an unknown method,
// and a body the gate cannot read (a parse error, as the SDKs answer one).
constexpr int kRefusedCode = -32000;
constexpr int kMethodNotFound = -32601;
constexpr int kParseError = -32700;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// The media type of a Content-Type, lower case, without parameters.
std::string media_type(std::string_view content_type) {
  return lower(trim(content_type.substr(0, content_type.find(';'))));
}

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

}  // namespace

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
    const std::string params = lower(range.substr(std::min(range.size(), range.find(';'))));
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

std::string Call::logged() const {
  if (what == MethodClass::judged) {
    return std::string(rules::mcp_noun(kind)) + " " + rules::shown_name(kind, name);
  }
  return method;
}

bool ResponsePlan::has_gate_answers() const {
  return std::any_of(slots.begin(), slots.end(),
                     [](const Slot& slot) { return slot.gate_answer.has_value(); });
}

McpStage::McpStage(Setting setting) : setting_(std::move(setting)) {}

bool McpStage::listed(McpKind kind, std::string_view name) const {
  const rules::McpRules& rules = *setting_.rules;
  if (setting_.report_only || !rules.judges(setting_.host, setting_.port, kind)) {
    return true;
  }
  const McpVerdict verdict = rules.decide(setting_.host, setting_.port, kind, name);
  if (verdict.kind == McpVerdict::Kind::not_allowed) {
    const auto answered =
        std::find_if(setting_.answers.begin(), setting_.answers.end(),
                     [&](const PersonAnswer& a) { return a.kind == kind && a.name == name; });
    if (answered != setting_.answers.end()) {
      return answered->allowed;
    }
    // Under ask, a call no line decides may still be allowed by a person: the model is shown
    // it, and a call asks.
    return setting_.ask && rules::plain_name(kind, name);
  }
  return verdict.permits();
}

Call McpStage::judge(const Message& message, std::size_t index,
                     std::vector<Question>& questions) const {
  Call call;
  call.index = index;
  call.method = message.method;
  call.what = message.info.what;
  const std::string host = setting_.host.display();
  const auto refuse = [&](rules::Reason reason, std::string rule, std::string sentence) {
    call.reason = reason;
    call.rule = std::move(rule);
    call.sentence = std::move(sentence);
    call.outcome = setting_.report_only ? Call::Outcome::would_deny : Call::Outcome::refused;
  };
  if (message.info.what == MethodClass::unknown) {
    refuse(rules::Reason::request_not_allowed, {},
           "the method " + rules::shown_name(McpKind::tool, message.method) + " on " + host +
               " is not one of MCP's that the gate knows, and on a host with MCP rules only "
               "those pass.");
    return call;
  }
  if (message.info.what != MethodClass::judged) {
    return call;  // passed
  }
  call.kind = message.info.kind;
  call.name = message.name;
  const rules::McpRules& rules = *setting_.rules;
  const McpVerdict verdict = rules.decide(setting_.host, setting_.port, call.kind, call.name);
  switch (verdict.kind) {
    case McpVerdict::Kind::unruled:
      return call;
    case McpVerdict::Kind::allowed:
      call.outcome = Call::Outcome::allowed;
      call.rule = rules::mcp_rule_text(verdict);
      return call;
    case McpVerdict::Kind::denied:
      refuse(rules::Reason::request_denied, rules::mcp_rule_text(verdict),
             rules.explain(verdict, host, call.name));
      return call;
    case McpVerdict::Kind::not_allowed:
      break;
  }
  const auto answered = std::find_if(
      setting_.answers.begin(), setting_.answers.end(),
      [&](const PersonAnswer& a) { return a.kind == call.kind && a.name == call.name; });
  if (answered != setting_.answers.end()) {
    if (answered->allowed) {
      call.outcome = Call::Outcome::allowed;
      call.rule = answered->why;
    } else {
      refuse(rules::Reason::request_not_allowed, rules::mcp_rule_text(verdict), answered->why);
    }
    return call;
  }
  if (setting_.ask && !setting_.report_only && rules::plain_name(call.kind, call.name)) {
    const bool asked = std::any_of(questions.begin(), questions.end(), [&](const Question& q) {
      return q.kind == call.kind && q.name == call.name;
    });
    if (!asked) {
      const std::string noun(rules::mcp_noun(call.kind));
      const std::string rest = std::string(verdict.group) + " " +
                               std::string(rules::mcp_word(call.kind)) + " " + call.name;
      questions.push_back(Question{call.kind, call.name, noun + " " + call.name,
                                   "allow " + noun + " " + call.name + " on " + host + "?",
                                   "allow " + rest, "deny " + rest});
    }
    call.outcome = Call::Outcome::passed;  // undecided until the answers come
    return call;
  }
  refuse(rules::Reason::request_not_allowed, rules::mcp_rule_text(verdict),
         rules.explain(verdict, host, call.name));
  return call;
}

Judgement McpStage::judge_request(std::string_view text, std::string_view accept,
                                  std::optional<Transport> usual) const {
  Judgement judgement;
  auto body = read_body(text, setting_.limits.request);
  if (!body) {
    judgement.action = Judgement::Action::answer;
    judgement.unjudgeable = true;
    judgement.problem = body.error().sentence;
    judgement.answer.status = body.error().too_large ? 413 : 400;
    judgement.answer.content_type = "application/json";
    judgement.answer.body = error_answer(json::value(nullptr), kParseError,
                                         "sandgate: " + body.error().sentence, "bad-request", "");
    return judgement;
  }
  const Transport transport = choose_transport(accept, usual);
  judgement.plan.batch = body->batch;
  judgement.plan.gate_transport = transport;
  std::vector<std::string_view> forwarded;
  std::vector<std::string> gate_answers;
  for (std::size_t i = 0; i < body->messages.size(); ++i) {
    const Message& message = body->messages[i];
    Call call = judge(message, i, judgement.questions);
    const bool refused = call.outcome == Call::Outcome::refused;
    if (!refused) {
      forwarded.push_back(message.raw);
      judgement.forwarded_calls += call.is_call() ? 1 : 0;
      const bool request = message.has_id && message.info.what != MethodClass::response;
      for (const ListShape& shape : kListShapes) {
        if (request && message.method == list_method(shape.kind) && !setting_.report_only &&
            setting_.rules->judges(setting_.host, setting_.port, shape.kind)) {
          judgement.plan.lists = true;
        }
      }
    }
    if (message.has_id && message.info.what != MethodClass::response) {
      ResponsePlan::Slot slot{message.id, std::nullopt};
      if (refused) {
        const std::string text = "sandgate refused this call: " + call.sentence;
        slot.gate_answer = message.info.what == MethodClass::unknown
                               ? error_answer(message.id, kMethodNotFound, text,
                                              rules::reason_code(call.reason), call.rule)
                           : call.kind == McpKind::tool
                               ? tool_error_result(message.id, text)
                               : error_answer(message.id, kRefusedCode, text,
                                              rules::reason_code(call.reason), call.rule);
        gate_answers.push_back(*slot.gate_answer);
      }
      judgement.plan.slots.push_back(std::move(slot));
    }
    judgement.calls.push_back(std::move(call));
  }
  if (!judgement.questions.empty()) {
    judgement.action = Judgement::Action::ask;
    return judgement;
  }
  if (forwarded.empty()) {
    judgement.action = Judgement::Action::answer;
    if (gate_answers.empty()) {
      judgement.answer.status = 202;  // only notifications, all refused: nothing to answer
    } else {
      judgement.answer = render(gate_answers, body->batch, transport);
    }
    return judgement;
  }
  judgement.action = Judgement::Action::forward;
  if (forwarded.size() == body->messages.size()) {
    judgement.body = std::string(text);
    return judgement;
  }
  judgement.body_changed = true;
  judgement.body = "[";
  for (std::size_t i = 0; i < forwarded.size(); ++i) {
    judgement.body += (i == 0 ? "" : ",") + std::string(forwarded[i]);
  }
  judgement.body += "]";
  return judgement;
}

// ---- The response side ----

ResponseFilter::ResponseFilter(const McpStage& stage, ResponsePlan plan)
    : stage_(&stage),
      plan_(std::move(plan)),
      parser_(stage.setting().limits.response.max_bytes,
              stage.setting().limits.response.max_bytes) {}

ResponseFilter::ResponseFilter(const McpStage& stage) : ResponseFilter(stage, ResponsePlan{}) {}

ResponseFilter::Mode ResponseFilter::start(unsigned status, std::string_view type) {
  const std::string media = media_type(type);
  if (media == "application/json") {
    seen_ = Transport::json;
  } else if (media == "text/event-stream") {
    seen_ = Transport::sse;
  }
  if (status == 202 && plan_.has_gate_answers()) {
    return Mode::replace;
  }
  if (status < 200 || status > 299) {
    return Mode::pass;
  }
  if (seen_ == Transport::sse) {
    return Mode::sse;
  }
  if (seen_ == Transport::json && (plan_.lists || plan_.has_gate_answers())) {
    return Mode::json;
  }
  return Mode::pass;
}

GateAnswer ResponseFilter::replacement() const {
  std::vector<std::string> answers;
  for (const ResponsePlan::Slot& slot : plan_.slots) {
    if (slot.gate_answer) {
      answers.push_back(*slot.gate_answer);
    }
  }
  return render(answers, plan_.batch, plan_.gate_transport);
}

// The message with its list result filtered, or nothing when it is unchanged.
std::optional<std::string> ResponseFilter::filtered(std::string_view text,
                                                    const json::value& message) {
  if (!message.is_object()) {
    return std::nullopt;
  }
  const json::value* result = message.get_object().if_contains("result");
  if (result == nullptr || !result->is_object()) {
    return std::nullopt;
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
      return std::nullopt;  // cannot happen for text read_json accepted
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
    return out;
  }
  return std::nullopt;
}

Expected<std::string, std::string> ResponseFilter::finish_json(std::string_view body) {
  const JsonLimits& limits = stage_->setting().limits.response;
  auto value = read_server_message(body, limits);
  if (!value) {
    return Unexpected{"the MCP server's answer cannot be read: " + value.error().sentence};
  }
  // The server's messages, each as its own (possibly filtered) text.
  struct Answer {
    std::string text;
    json::value id;
    bool has_id = false;
    bool used = false;
  };
  std::vector<Answer> answers;
  const auto add = [&](std::string_view text, const json::value& message) {
    Answer answer;
    answer.text = std::string(text);
    if (auto changed = filtered(text, message)) {
      answer.text = std::move(*changed);
    }
    if (message.is_object()) {
      if (const json::value* id = message.get_object().if_contains("id")) {
        answer.has_id = true;
        answer.id = *id;
      }
    }
    answers.push_back(std::move(answer));
  };
  if (value->is_array()) {
    const std::vector<std::string_view> raws = raw_elements(body);
    for (std::size_t i = 0; i < raws.size() && i < value->get_array().size(); ++i) {
      add(raws[i], value->get_array()[i]);
    }
  } else {
    add(trim_json(body), *value);
  }
  if (!plan_.has_gate_answers()) {
    if (answers.size() == 1 && !value->is_array()) {
      return std::move(answers.front().text);
    }
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
  const bool as_array = plan_.batch || value->is_array() || merged.size() != 1;
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

Expected<std::string, std::string> ResponseFilter::feed_sse(std::string_view bytes) {
  out_.clear();
  if (!prologue_sent_) {
    prologue_sent_ = true;
    out_ = gate_events();
  }
  sse::SseParser::Handlers handlers;
  handlers.on_event = [this](sse::SseEvent&& event) {
    if (!error_.empty()) {
      return;
    }
    // Every event's data is read, whatever its type: a client that takes any event for a
    // message must not get an unfiltered list either. A priming event has no data.
    if (event.data.empty()) {
      out_ += sse_event(event.type, event.id, event.data);
      return;
    }
    auto value = read_server_message(event.data, stage_->setting().limits.response);
    if (!value) {
      error_ = "an event of the MCP server's stream cannot be read: " + value.error().sentence;
      return;
    }
    auto changed = filtered(event.data, *value);
    out_ += sse_event(event.type, event.id, changed ? *changed : event.data);
  };
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
