// The MCP stage (proxy/mcp/mcp_stage.hpp) behind a pipe, for tests that drive it from the MCP
// TypeScript SDK (tests/e2e/mcp/): one JSON object a line on stdin, one answer a line on stdout,
// doing exactly what the HTTP exchange pipeline does with the stage at each call point:
//
//   {"op":"judge","body":B,"accept":A,"answers":[{"name":N,"allowed":true}]}
//       -> {"action":"forward"|"answer"|"ask","body":B2,"changed":bool,"exchange":K,
//           "answer":{"status":S,"content_type":T,"body":X},"questions":[...],"calls":[...]}
//   {"op":"response","exchange":K,"status":S,"content_type":T,"has_body":true}
//       -> {"mode":"pass"|"json"|"sse"|"replace"|"refuse","answer":{...},"refusal":R}
//          (replace: the gate's answer; refuse: why the gate answers 502)
//   {"op":"json","exchange":K,"body":X}          -> {"body":X2} or {"error":E}
//   {"op":"sse","exchange":K,"bytes":X}          -> {"bytes":X2} or {"error":E}
//   {"op":"end","exchange":K}                    -> {"bytes":X2}
//   {"op":"stream"}                              -> {"exchange":K}  (a GET event stream's filter)
//
// Usage: mcp_stage_pipe RULES_FILE HOST deny|ask|report
#include <boost/json.hpp>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/mcp/response_filter.hpp"
#include "rules/request_rules.hpp"

namespace {

namespace json = boost::json;
namespace mcp = sandgate::mcp;

std::string_view action_name(mcp::Judgement::Action action) {
  switch (action) {
    case mcp::Judgement::Action::forward:
      return "forward";
    case mcp::Judgement::Action::answer:
      return "answer";
    case mcp::Judgement::Action::ask:
      return "ask";
  }
  return "";
}

std::string_view mode_name(mcp::ResponseFilter::Mode mode) {
  switch (mode) {
    case mcp::ResponseFilter::Mode::pass:
      return "pass";
    case mcp::ResponseFilter::Mode::json:
      return "json";
    case mcp::ResponseFilter::Mode::sse:
      return "sse";
    case mcp::ResponseFilter::Mode::replace:
      return "replace";
    case mcp::ResponseFilter::Mode::refuse:
      return "refuse";
  }
  return "";
}

std::string_view outcome_name(mcp::Call::Outcome outcome) {
  switch (outcome) {
    case mcp::Call::Outcome::passed:
      return "passed";
    case mcp::Call::Outcome::allowed:
      return "allowed";
    case mcp::Call::Outcome::refused:
      return "refused";
    case mcp::Call::Outcome::would_deny:
      return "would-deny";
  }
  return "";
}

json::object answer_object(const mcp::GateAnswer& answer) {
  return {{"status", answer.status}, {"content_type", answer.content_type}, {"body", answer.body}};
}

struct Exchange {
  std::unique_ptr<mcp::McpStage> stage;
  std::unique_ptr<mcp::ResponseFilter> filter;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: mcp_stage_pipe RULES_FILE HOST deny|ask|report\n";
    return 2;
  }
  std::ifstream file(argv[1]);
  std::stringstream text;
  text << file.rdbuf();
  std::vector<sandgate::rules::LoadIssue> issues;
  const auto rules =
      sandgate::rules::RequestRules::parse(text.str(), argv[1], {}, "SANDGATE_INSPECT", issues);
  for (const auto& issue : issues) {
    std::cerr << issue.source << ":" << issue.line << ": " << issue.message << "\n";
  }
  mcp::Setting base;
  base.rules = &rules.mcp();
  base.host = sandgate::rules::parse_host(argv[2]).value();
  base.ask = std::string_view(argv[3]) == "ask";
  base.report_only = std::string_view(argv[3]) == "report";

  std::map<std::int64_t, Exchange> exchanges;
  std::int64_t next = 1;
  std::optional<mcp::Transport> usual;
  std::string line;
  while (std::getline(std::cin, line)) {
    const json::object in = json::parse(line).as_object();
    const std::string op(in.at("op").as_string());
    json::object out;
    if (op == "judge") {
      mcp::Setting setting = base;
      if (const json::value* answers = in.if_contains("answers")) {
        for (const json::value& a : answers->as_array()) {
          const std::string name(a.at("name").as_string());
          const bool allowed = a.at("allowed").as_bool();
          setting.answers.push_back({sandgate::rules::McpKind::tool, name, allowed,
                                     allowed
                                         ? "answered: tool " + name
                                         : "a person answered deny to the question about tool " +
                                               name + " on " + std::string(argv[2]) + "."});
        }
      }
      auto stage = std::make_unique<mcp::McpStage>(std::move(setting));
      mcp::Judgement j = stage->judge_request(std::string(in.at("body").as_string()),
                                              std::string(in.at("accept").as_string()), usual);
      out["action"] = action_name(j.action);
      out["body"] = j.body;
      out["changed"] = j.body_changed;
      out["answer"] = answer_object(j.answer);
      json::array questions;
      for (const mcp::Question& q : j.questions) {
        questions.push_back(json::object{{"name", q.name},
                                         {"request", q.request},
                                         {"text", q.text},
                                         {"allow_line", q.allow_line},
                                         {"deny_line", q.deny_line}});
      }
      out["questions"] = std::move(questions);
      json::array calls;
      for (const mcp::Call& call : j.calls) {
        calls.push_back(json::object{{"logged", call.logged()},
                                     {"outcome", outcome_name(call.outcome)},
                                     {"rule", call.rule}});
      }
      out["calls"] = std::move(calls);
      const std::int64_t id = next++;
      Exchange exchange;
      exchange.filter = std::make_unique<mcp::ResponseFilter>(*stage, std::move(j.plan));
      exchange.stage = std::move(stage);
      exchanges.emplace(id, std::move(exchange));
      out["exchange"] = id;
    } else if (op == "stream") {
      const std::int64_t id = next++;
      Exchange exchange;
      exchange.stage = std::make_unique<mcp::McpStage>(base);
      exchange.filter = std::make_unique<mcp::ResponseFilter>(*exchange.stage, true);
      exchanges.emplace(id, std::move(exchange));
      out["exchange"] = id;
    } else {
      Exchange& exchange = exchanges.at(in.at("exchange").as_int64());
      mcp::ResponseFilter& filter = *exchange.filter;
      if (op == "response") {
        const json::value* has_body = in.if_contains("has_body");
        const auto mode = filter.start(static_cast<unsigned>(in.at("status").as_int64()),
                                       std::string(in.at("content_type").as_string()),
                                       has_body == nullptr || has_body->as_bool());
        if (filter.seen()) {
          usual = filter.seen();
        }
        out["mode"] = mode_name(mode);
        if (mode == mcp::ResponseFilter::Mode::replace) {
          out["answer"] = answer_object(filter.replacement());
        }
        if (mode == mcp::ResponseFilter::Mode::refuse) {
          out["refusal"] = filter.refusal();
        }
      } else if (op == "json") {
        auto body = filter.finish_json(std::string(in.at("body").as_string()));
        if (body) {
          out["body"] = *body;
        } else {
          out["error"] = body.error();
        }
      } else if (op == "sse") {
        auto bytes = filter.feed_sse(std::string(in.at("bytes").as_string()));
        if (bytes) {
          out["bytes"] = *bytes;
        } else {
          out["error"] = bytes.error();
        }
      } else if (op == "end") {
        out["bytes"] = filter.end_sse();
        exchanges.erase(in.at("exchange").as_int64());
      }
    }
    std::cout << json::serialize(out) << "\n" << std::flush;
  }
  return 0;
}
