// The MCP stage on real traffic: the official TypeScript SDK's Client and McpServer talking on
// loopback, each POST's request and answer recorded as the wire carried them
// (tests/e2e/mcp/capture.mjs wrote captured/*.json; run it again to record a newer SDK), fed to
// the stage exchange by exchange as the pipeline would: judge the request, then filter the answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/mcp/response_filter.hpp"
#include "rules/request_rules.hpp"

namespace sandgate::mcp {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

struct Exchange {
  std::string accept;
  std::string request;
  unsigned status = 0;
  std::string content_type;
  std::string response;
};

std::vector<Exchange> load(std::string_view name) {
  std::ifstream file(std::string(SANDGATE_SOURCE_DIR) + "/tests/unit/proxy/mcp/captured/" +
                     std::string(name));
  std::stringstream text;
  text << file.rdbuf();
  std::vector<Exchange> exchanges;
  const json::value all = json::parse(text.str());
  for (const json::value& e : all.as_array()) {
    exchanges.push_back(Exchange{
        std::string(e.at("accept").as_string()), std::string(e.at("request").as_string()),
        static_cast<unsigned>(e.at("status").as_int64()),
        std::string(e.at("content_type").as_string()), std::string(e.at("response").as_string())});
  }
  return exchanges;
}

class CapturedTraffic : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::vector<rules::LoadIssue> issues;
    requests_ = rules::RequestRules::parse(
        "allow mcp.example.com mcp-tool search\n"
        "allow mcp.example.com mcp-tool read_*\n"
        "deny  mcp.example.com mcp-tool delete_*  #! agents never delete\n"
        "allow mcp.example.com mcp-resource repo://docs/**\n",
        "requests.txt", {}, "-", issues);
    ASSERT_TRUE(issues.empty());
    setting_.rules = &requests_.mcp();
    setting_.host = rules::parse_host("mcp.example.com").value();
  }
  rules::RequestRules requests_;
  Setting setting_;
};

// The names a tools/list answer (JSON, or one SSE event's data) shows.
std::vector<std::string> tool_names(std::string_view text) {
  std::string data(text);
  if (const auto at = data.find("data: "); at != std::string::npos) {
    data = data.substr(at + 6, data.find('\n', at) - at - 6);
  }
  std::vector<std::string> names;
  const json::value list = json::parse(data);
  for (const json::value& tool : list.at("result").at("tools").as_array()) {
    names.emplace_back(tool.at("name").as_string());
  }
  return names;
}

TEST_P(CapturedTraffic, TheStageJudgesAndFiltersWhatTheSdkSends) {
  const std::vector<Exchange> exchanges = load(GetParam());
  ASSERT_EQ(exchanges.size(), 8u);
  const McpStage stage(setting_);
  std::optional<Transport> usual;
  std::size_t checked = 0;
  for (const Exchange& e : exchanges) {
    SCOPED_TRACE(e.request.substr(0, 80));
    const Judgement j = stage.judge_request(e.request, e.accept, usual);
    ASSERT_FALSE(j.unjudgeable) << j.problem;
    const json::value request = json::parse(e.request);
    const std::string method(request.at("method").as_string());
    if (method == "tools/call" && request.at("params").at("name") == "delete_repo") {
      // Refused: answered by the gate in the transport the server has been answering in, the
      // server never asked.
      ASSERT_EQ(j.action, Judgement::Action::answer);
      EXPECT_EQ(j.answer.content_type, e.content_type.starts_with("text/event-stream")
                                           ? "text/event-stream"
                                           : "application/json");
      EXPECT_THAT(j.answer.body, HasSubstr(R"("isError":true)"));
      EXPECT_THAT(j.answer.body, HasSubstr("agents never delete"));
      EXPECT_THAT(j.answer.body, HasSubstr(R"("id":3)"));
      ++checked;
      continue;
    }
    // Everything else goes on as the SDK sent it.
    ASSERT_EQ(j.action, Judgement::Action::forward) << method;
    EXPECT_FALSE(j.body_changed);
    EXPECT_EQ(j.body, e.request);
    ResponseFilter filter(stage, j.plan);
    const ResponseFilter::Mode mode = filter.start(e.status, e.content_type);
    if (filter.seen()) {
      usual = filter.seen();
    }
    std::string out = e.response;
    if (mode == ResponseFilter::Mode::json) {
      auto filtered = filter.finish_json(e.response);
      ASSERT_TRUE(filtered) << filtered.error();
      out = *filtered;
    } else if (mode == ResponseFilter::Mode::sse) {
      // Fed in pieces of 7 bytes, as a network might cut it.
      out.clear();
      for (std::size_t at = 0; at < e.response.size(); at += 7) {
        auto piece = filter.feed_sse(std::string_view(e.response).substr(at, 7));
        ASSERT_TRUE(piece) << piece.error();
        out += *piece;
      }
      out += filter.end_sse();
    } else if (mode == ResponseFilter::Mode::replace) {
      // A 202 (to a notification) stays a 202, without a body.
      EXPECT_EQ(e.status, 202u) << method;
      EXPECT_EQ(filter.replacement().status, 202u) << method;
      out = filter.replacement().body;
    } else {
      EXPECT_TRUE(mode == ResponseFilter::Mode::pass) << method;
    }
    if (method == "tools/list") {
      EXPECT_THAT(tool_names(e.response), ::testing::Contains("delete_repo"));
      EXPECT_EQ(tool_names(out), (std::vector<std::string>{"search", "read_file"}));
      EXPECT_EQ(filter.hidden(), 3u);
      ++checked;
    } else {
      // Unfiltered answers reach the client byte for byte, event streams too.
      EXPECT_EQ(out, e.response) << method;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8u);
}

INSTANTIATE_TEST_SUITE_P(Sdk, CapturedTraffic,
                         ::testing::Values("sdk_traffic_json.json", "sdk_traffic_sse.json"));

}  // namespace
}  // namespace sandgate::mcp
