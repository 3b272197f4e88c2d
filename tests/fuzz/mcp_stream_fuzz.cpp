// Fuzz target: the MCP stage's filter of a server's event stream (proxy/mcp/mcp_stage.hpp's
// ResponseFilter over proxy/sse/), on arbitrary bytes in arbitrary chunks.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - chunking never matters: the stream fed whole and split at a point the input chooses gives
//     the same bytes out and the same failure;
//   - what the gate writes is a stream it reads again: filtered a second time, it comes out the
//     same (every list already shows only what may be called), and every event's data is JSON
//     (but an `endpoint` event's URL, which the older transport sends and no client reads as a
//     message).
#include <boost/json/parse.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/mcp/response_filter.hpp"
#include "proxy/sse/sse_parser.hpp"
#include "rules/request_rules.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using sandgate::fuzz::escaped;
namespace mcp = sandgate::mcp;

const mcp::McpStage& stage() {
  static const sandgate::rules::RequestRules rules = [] {
    std::vector<sandgate::rules::LoadIssue> issues;
    return sandgate::rules::RequestRules::parse(
        "allow m.example mcp-tool search\n"
        "deny  m.example mcp-tool delete_*\n"
        "allow m.example mcp-prompt p*\n",
        "fuzz.txt", {}, "-", issues);
  }();
  static const mcp::McpStage stage = [] {
    mcp::Setting setting;
    setting.rules = &rules.mcp();
    setting.host = sandgate::rules::parse_host("m.example").value();
    setting.limits.response.max_bytes = 1024;
    setting.limits.response.max_depth = 16;
    return mcp::McpStage(std::move(setting));
  }();
  return stage;
}

struct Run {
  std::string out;
  bool failed = false;
};

Run filter(std::string_view input, std::size_t cut) {
  Run run;
  mcp::ResponseFilter filter(stage(), true);
  FUZZ_CHECK(filter.start(200, "text/event-stream") == mcp::ResponseFilter::Mode::sse, "mode");
  for (const std::string_view piece : {input.substr(0, cut), input.substr(cut)}) {
    auto out = filter.feed_sse(piece);
    if (!out) {
      run.failed = true;
      return run;
    }
    run.out += *out;
  }
  run.out += filter.end_sse();
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 8192) {
    return 0;
  }
  const std::size_t split = data[0] % size;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string where = "on '" + escaped(input) + "'";
  const Run whole = filter(input, input.size());
  const Run halves = filter(input, std::min(split, input.size()));
  FUZZ_CHECK(whole.failed == halves.failed, where);
  if (whole.failed) {
    return 0;
  }
  FUZZ_CHECK(whole.out == halves.out, where);
  const Run again = filter(whole.out, whole.out.size());
  FUZZ_CHECK(!again.failed && again.out == whole.out,
             "output '" + escaped(whole.out) + "' " + where);
  sandgate::sse::SseParser parser;
  sandgate::sse::SseParser::Handlers handlers;
  handlers.on_event = [&where](sandgate::sse::SseEvent&& event) {
    boost::system::error_code ec;
    const bool url =
        event.type == "endpoint" && !event.data.starts_with('{') && !event.data.starts_with('[');
    if (!event.data.empty() && !url) {
      (void)boost::json::parse(event.data, ec);
      FUZZ_CHECK(!ec, "event data '" + escaped(event.data) + "' " + where);
    }
  };
  FUZZ_CHECK(parser.feed(whole.out, handlers), where);
  return 0;
}
