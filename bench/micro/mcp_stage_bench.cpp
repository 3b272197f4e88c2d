// What judging an MCP call costs (proxy/mcp/), per POST body, against the same POST judged by an
// HTTP request rule only (`allow mcp.example.com POST /mcp`: the path's normal form and the
// host's group, what an inspected request to an MCP server pays without MCP rules): an allowed
// tools/call (read once, judged, forwarded unchanged), a refused one (the gate's answer written),
// batches of N calls half refused (split and answered), and the answer side: a tools/list of N
// tools filtered, and a call's result read as a JSON answer and through an event-stream filter.
// Compare the ratios in one run: the machine is shared and noisy.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/mcp/response_filter.hpp"
#include "rules/request_rules.hpp"

namespace {

namespace mcp = sandgate::mcp;
namespace rules = sandgate::rules;

constexpr std::string_view kAccept = "application/json, text/event-stream";

const rules::RequestRules& loaded() {
  static const rules::RequestRules requests = [] {
    std::vector<rules::LoadIssue> issues;
    return rules::RequestRules::parse(
        "allow mcp.example.com POST /mcp\n"
        "allow mcp.example.com mcp-tool search\n"
        "allow mcp.example.com mcp-tool read_*\n"
        "allow mcp.example.com mcp-tool list_*\n"
        "allow mcp.example.com mcp-tool get_*\n"
        "deny  mcp.example.com mcp-tool delete_*  #! agents never delete\n",
        "requests.txt", {}, "-", issues);
  }();
  return requests;
}

mcp::McpStage stage() {
  mcp::Setting setting;
  setting.rules = &loaded().mcp();
  setting.host = rules::parse_host("mcp.example.com").value();
  return mcp::McpStage(std::move(setting));
}

std::string call(int id, std::string_view tool) {
  return R"({"method":"tools/call","params":{"name":")" + std::string(tool) +
         R"(","arguments":{"query":"open issues about TLS","per_page":30}},"jsonrpc":"2.0","id":)" +
         std::to_string(id) + "}";
}

// The baseline: the same POST judged by the HTTP lines alone.
void BM_HttpRequestRuleOnly(benchmark::State& state) {
  const rules::RequestRules& requests = loaded();
  const rules::Host host = rules::parse_host("mcp.example.com").value();
  for (auto _ : state) {
    auto normal = rules::normalise_path("/mcp");
    const rules::RequestFacts facts{"POST", normal.value().path, normal.value().query,
                                    "application/json"};
    benchmark::DoNotOptimize(requests.decide(host, 443, facts));
  }
}
BENCHMARK(BM_HttpRequestRuleOnly);

void BM_JudgeAllowedCall(benchmark::State& state) {
  const mcp::McpStage judge = stage();
  const std::string body = call(7, "read_file");
  for (auto _ : state) {
    benchmark::DoNotOptimize(judge.judge_request(body, kAccept, std::nullopt));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_JudgeAllowedCall);

void BM_JudgeRefusedCall(benchmark::State& state) {
  const mcp::McpStage judge = stage();
  const std::string body = call(7, "delete_repo");
  for (auto _ : state) {
    benchmark::DoNotOptimize(judge.judge_request(body, kAccept, std::nullopt));
  }
}
BENCHMARK(BM_JudgeRefusedCall);

// A batch of N calls, every other one refused: split, the rest answered.
void BM_JudgeMixedBatch(benchmark::State& state) {
  const mcp::McpStage judge = stage();
  std::string body = "[";
  for (int i = 0; i < state.range(0); ++i) {
    body += (i == 0 ? "" : ",") + call(i, i % 2 == 0 ? "search" : "delete_branch");
  }
  body += "]";
  for (auto _ : state) {
    benchmark::DoNotOptimize(judge.judge_request(body, kAccept, std::nullopt));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_JudgeMixedBatch)->RangeMultiplier(4)->Range(4, 64);

// A tools/list answer of N tools (a third of them hidden), held whole and filtered.
void BM_FilterToolsList(benchmark::State& state) {
  const mcp::McpStage judge = stage();
  const mcp::Judgement listed = judge.judge_request(
      R"({"method":"tools/list","jsonrpc":"2.0","id":1})", kAccept, std::nullopt);
  const char* prefixes[] = {"read_", "list_", "delete_"};
  std::string body = R"({"result":{"tools":[)";
  for (int i = 0; i < state.range(0); ++i) {
    body += (i == 0 ? "" : ",") + std::string(R"({"name":")") + prefixes[i % 3] +
            std::to_string(i) +
            R"(","description":"a tool of the benchmark's","inputSchema":{"type":"object",)"
            R"("properties":{"q":{"type":"string"}}}})";
  }
  body += R"(]},"jsonrpc":"2.0","id":1})";
  for (auto _ : state) {
    mcp::ResponseFilter filter(judge, listed.plan);
    filter.start(200, "application/json");
    benchmark::DoNotOptimize(filter.finish_json(body));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_FilterToolsList)->RangeMultiplier(4)->Range(4, 256);

// A call's result (N bytes of text) as a JSON answer, held whole and read (every 2xx answer to a
// judged POST is: a list sent as the answer to another request is filtered too).
void BM_ReadJsonResult(benchmark::State& state) {
  const mcp::McpStage judge = stage();
  const mcp::Judgement called = judge.judge_request(call(7, "read_file"), kAccept, std::nullopt);
  const std::string body = R"({"result":{"content":[{"type":"text","text":")" +
                           std::string(static_cast<std::size_t>(state.range(0)), 'x') +
                           R"("}]},"jsonrpc":"2.0","id":7})";
  for (auto _ : state) {
    mcp::ResponseFilter filter(judge, called.plan);
    filter.start(200, "application/json");
    benchmark::DoNotOptimize(filter.finish_json(body));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ReadJsonResult)->RangeMultiplier(16)->Range(64, 64 << 10);

// A call's result (N bytes of text) through the event-stream filter, as the SDK's server writes it.
void BM_FilterSseResult(benchmark::State& state) {
  const mcp::McpStage judge = stage();
  const std::string event =
      "event: message\nid: 1\ndata: "
      R"({"result":{"content":[{"type":"text","text":")" +
      std::string(static_cast<std::size_t>(state.range(0)), 'x') +
      R"("}]},"jsonrpc":"2.0","id":7})" + "\n\n";
  for (auto _ : state) {
    mcp::ResponseFilter filter(judge, true);
    filter.start(200, "text/event-stream");
    benchmark::DoNotOptimize(filter.feed_sse(event));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * event.size()));
}
BENCHMARK(BM_FilterSseResult)->RangeMultiplier(16)->Range(64, 64 << 10);

}  // namespace
