// Fuzz target: the MCP stage's reading of a server's JSON answer to a judged POST
// (proxy/mcp/response_filter.hpp's finish_json): every 2xx JSON answer is read whole, its lists
// filtered, the gate's answers to a split batch merged in the order of the requests. On
// arbitrary bytes as the answer to a batch of tools/list (id 1), a refused tools/call (id 2)
// and an allowed one (id 3).
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - what the gate writes is JSON: an array (the request was a batch) of objects, the gate's
//     answer for id 2 among them, exactly once where the server sent none for id 2;
//   - no list in it shows a tool the rules do not allow (`allow search` and `deny delete_*`:
//     every entry of a `tools` result is named exactly `search`);
//   - it reads again as it is: filtered a second time (as the answer to the same three calls,
//     all allowed) it comes out the same, nothing more hidden.
#include <boost/json/parse.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/mcp/response_filter.hpp"
#include "rules/request_rules.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using sandgate::fuzz::escaped;
namespace mcp = sandgate::mcp;
namespace json = boost::json;

const sandgate::rules::RequestRules& rules() {
  static const sandgate::rules::RequestRules loaded = [] {
    std::vector<sandgate::rules::LoadIssue> issues;
    return sandgate::rules::RequestRules::parse(
        "allow m.example mcp-tool search\n"
        "deny  m.example mcp-tool delete_*\n",
        "fuzz.txt", {}, "-", issues);
  }();
  return loaded;
}

const mcp::McpStage& stage() {
  static const mcp::McpStage judge = [] {
    mcp::Setting setting;
    setting.rules = &rules().mcp();
    setting.host = sandgate::rules::parse_host("m.example").value();
    setting.limits.response.max_bytes = 4096;
    setting.limits.response.max_depth = 16;
    return mcp::McpStage(std::move(setting));
  }();
  return judge;
}

std::string call(int id, std::string_view tool) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + std::string(tool) + R"("}})";
}

const std::string kList = R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})";

// Every entry of every `tools` result in the answer is `search`.
bool lists_only_search(const json::value& answer) {
  for (const json::value& message : answer.get_array()) {
    const json::value* result = message.as_object().if_contains("result");
    const json::value* tools = result != nullptr && result->is_object()
                                   ? result->as_object().if_contains("tools")
                                   : nullptr;
    if (tools == nullptr || !tools->is_array()) {
      continue;
    }
    for (const json::value& entry : tools->get_array()) {
      const json::value* name = entry.as_object().if_contains("name");
      if (name == nullptr || !name->is_string() || name->get_string() != "search") {
        return false;
      }
    }
  }
  return true;
}

std::size_t with_id(const json::value& answer, std::int64_t id) {
  std::size_t count = 0;
  for (const json::value& message : answer.get_array()) {
    const json::value* found = message.as_object().if_contains("id");
    count += found != nullptr && found->is_int64() && found->get_int64() == id ? 1 : 0;
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 8192) {
    return 0;
  }
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string where = "on '" + escaped(input) + "'";
  static const mcp::Judgement split = stage().judge_request(
      "[" + kList + "," + call(2, "delete_repo") + "," + call(3, "search") + "]", "", {});
  static const mcp::Judgement whole = stage().judge_request(
      "[" + kList + "," + call(2, "search") + "," + call(3, "search") + "]", "", {});
  FUZZ_CHECK(split.plan.has_gate_answers() && !whole.plan.has_gate_answers(), "the plans");

  mcp::ResponseFilter first(stage(), split.plan);
  FUZZ_CHECK(first.start(200, "application/json") == mcp::ResponseFilter::Mode::json, "mode");
  const auto out = first.finish_json(input);
  if (!out) {
    return 0;
  }
  boost::system::error_code ec;
  const json::value answer = json::parse(*out, ec);
  FUZZ_CHECK(!ec && answer.is_array(), "output '" + escaped(*out) + "' " + where);
  for (const json::value& message : answer.get_array()) {
    FUZZ_CHECK(message.is_object(), "output '" + escaped(*out) + "' " + where);
  }
  FUZZ_CHECK(with_id(answer, 2) >= 1, "no answer for id 2 in '" + escaped(*out) + "' " + where);
  FUZZ_CHECK(lists_only_search(answer), "a list in '" + escaped(*out) + "' " + where);

  mcp::ResponseFilter again(stage(), whole.plan);
  FUZZ_CHECK(again.start(200, "application/json") == mcp::ResponseFilter::Mode::json, "mode");
  const auto second = again.finish_json(*out);
  FUZZ_CHECK(second && *second == *out && again.hidden() == 0,
             "filtered again: '" + escaped(second ? *second : second.error()) + "' from '" +
                 escaped(*out) + "' " + where);
  return 0;
}
