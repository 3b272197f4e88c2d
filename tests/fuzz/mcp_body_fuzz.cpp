// Fuzz target: the MCP stage's request side (proxy/mcp/): the strict JSON reader, the JSON-RPC
// messages of a POST body and their judgement, on arbitrary bytes.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - what the gate writes is JSON (its answers) and what it forwards is a body it reads again;
//   - judging is stable: a forwarded body judged again goes on unchanged, with no refusal (a
//     smaller batch holds only what was allowed, and its bytes split back into the same
//     messages);
//   - a body is refused whole or judged, never both; a refusal leaves nothing forwarded.
#include <boost/json/parse.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/mcp/mcp_stage.hpp"
#include "rules/request_rules.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using sandgate::fuzz::escaped;
namespace mcp = sandgate::mcp;

const sandgate::rules::RequestRules& rules() {
  static const sandgate::rules::RequestRules loaded = [] {
    std::vector<sandgate::rules::LoadIssue> issues;
    return sandgate::rules::RequestRules::parse(
        "allow m.example mcp-tool search\n"
        "allow m.example mcp-tool read_*\n"
        "deny  m.example mcp-tool delete_*  #! never\n"
        "allow m.example mcp-prompt p*\n"
        "allow m.example mcp-resource repo://docs/**\n",
        "fuzz.txt", {}, "-", issues);
  }();
  return loaded;
}

mcp::McpStage stage() {
  mcp::Setting setting;
  setting.rules = &rules().mcp();
  setting.host = sandgate::rules::parse_host("m.example").value();
  setting.limits.request.json.max_bytes = 4096;
  setting.limits.request.json.max_depth = 16;
  setting.limits.request.max_batch = 8;
  return mcp::McpStage(std::move(setting));
}

bool is_json(std::string_view text) {
  boost::system::error_code ec;
  (void)boost::json::parse(text, ec);
  return !ec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static const mcp::McpStage judge = stage();
  const mcp::Judgement j = judge.judge_request(body, "application/json", std::nullopt);
  const std::string where = "on '" + escaped(body) + "'";
  if (j.unjudgeable) {
    FUZZ_CHECK(j.action == mcp::Judgement::Action::answer, where);
    FUZZ_CHECK(j.calls.empty(), where);
  }
  if (j.action == mcp::Judgement::Action::answer && !j.answer.body.empty()) {
    FUZZ_CHECK(is_json(j.answer.body),
               "the gate's answer '" + escaped(j.answer.body) + "' " + where);
  }
  for (const auto& slot : j.plan.slots) {
    if (slot.gate_answer) {
      FUZZ_CHECK(is_json(*slot.gate_answer), where);
    }
  }
  if (j.action == mcp::Judgement::Action::forward) {
    FUZZ_CHECK(j.body_changed || j.body == body, where);
    const mcp::Judgement again = judge.judge_request(j.body, "application/json", std::nullopt);
    FUZZ_CHECK(again.action == mcp::Judgement::Action::forward,
               "forwarded '" + escaped(j.body) + "' " + where);
    FUZZ_CHECK(!again.body_changed && again.body == j.body, where);
    for (const mcp::Call& call : again.calls) {
      FUZZ_CHECK(call.outcome != mcp::Call::Outcome::refused, where);
    }
  }
  return 0;
}
