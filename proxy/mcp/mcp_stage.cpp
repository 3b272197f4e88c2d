// The MCP stage's request side (see mcp_stage.hpp): judging a POST body's messages.
#include "proxy/mcp/mcp_stage.hpp"

#include <algorithm>
#include <utility>

namespace sandgate::mcp {

using rules::McpKind;
using rules::McpVerdict;

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

namespace {

// A call's `params.arguments` as sent, cut to kMaxLoggedArguments bytes (at a character's start).
std::string logged_arguments(std::string_view raw) {
  for (const RawMember& member : raw_members(raw)) {
    if (member.key != "params") {
      continue;
    }
    for (const RawMember& inner : raw_members(member.value)) {
      if (inner.key != "arguments") {
        continue;
      }
      if (inner.value.size() <= kMaxLoggedArguments) {
        return std::string(inner.value);
      }
      std::size_t cut = kMaxLoggedArguments;
      while (cut > 0 && (static_cast<unsigned char>(inner.value[cut]) & 0xC0) == 0x80) {
        --cut;  // not inside a UTF-8 sequence
      }
      return std::string(inner.value.substr(0, cut)) + "...";
    }
  }
  return {};
}

}  // namespace

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
  if (setting_.keep_arguments) {
    call.arguments = logged_arguments(message.raw);
  }
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
    judgement.answer.body = error_answer(boost::json::value(nullptr), kParseError,
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

}  // namespace sandgate::mcp
