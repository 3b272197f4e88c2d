// The MCP stage (proxy/mcp/): strict reading (duplicates, escapes, depth, size, shapes), the
// judgement of each message, the gate's answers, batch splitting and merging, list filtering in
// JSON and event streams, questions under ask, report-only, and the calls' /metrics.
#include "proxy/mcp/mcp_stage.hpp"
#include "proxy/mcp/response_filter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "proxy/mcp/call_tally.hpp"
#include "rules/request_rules.hpp"

namespace sandgate::mcp {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kRules =
    "allow mcp.example.com mcp-tool search\n"
    "allow mcp.example.com mcp-tool read_*\n"
    "deny  mcp.example.com mcp-tool delete_*   #! agents never delete\n";

constexpr std::string_view kAccept = "application/json, text/event-stream";

struct Fixture {
  explicit Fixture(std::string_view text = kRules, bool ask = false, bool report_only = false) {
    std::vector<rules::LoadIssue> issues;
    requests = rules::RequestRules::parse(text, "requests.txt", {}, "-", issues);
    EXPECT_TRUE(issues.empty());
    setting.rules = &requests.mcp();
    setting.host = rules::parse_host("mcp.example.com").value();
    setting.ask = ask;
    setting.report_only = report_only;
  }
  McpStage stage() const { return McpStage(setting); }
  rules::RequestRules requests;
  Setting setting;
};

std::string call(int id, std::string_view tool) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + std::string(tool) +
         R"(","arguments":{"q":"secret argument"}}})";
}

json::value parsed(std::string_view text) { return json::parse(text); }

TEST(McpStage, AnAllowedCallGoesOnUnchanged) {
  const Fixture f;
  const std::string body = call(1, "search");
  const Judgement j = f.stage().judge_request(body, kAccept, std::nullopt);
  ASSERT_EQ(j.action, Judgement::Action::forward);
  EXPECT_FALSE(j.body_changed);
  EXPECT_EQ(j.body, body);
  ASSERT_EQ(j.calls.size(), 1u);
  EXPECT_EQ(j.calls[0].outcome, Call::Outcome::allowed);
  EXPECT_EQ(j.calls[0].logged(), "tool search");
  EXPECT_EQ(j.calls[0].rule, "requests.txt:1 allow mcp.example.com mcp-tool search");
  EXPECT_EQ(j.forwarded_calls, 1u);
}

// A call's arguments are kept for its decision line only when asked (log_mcp_arguments), as
// sent, at most kMaxLoggedArguments bytes of them, never cut inside a character.
TEST(McpStage, ArgumentsAreKeptOnlyWhenAskedAndBounded) {
  Fixture f;
  EXPECT_EQ(f.stage().judge_request(call(1, "search"), kAccept, std::nullopt).calls[0].arguments,
            "");
  f.setting.keep_arguments = true;
  const McpStage stage = f.stage();
  const Judgement j = stage.judge_request("[" + call(1, "search") + "," + call(2, "delete_x") +
                                              R"(,{"jsonrpc":"2.0","id":3,"method":"ping"}])",
                                          kAccept, std::nullopt);
  ASSERT_EQ(j.calls.size(), 3u);
  EXPECT_EQ(j.calls[0].arguments, R"({"q":"secret argument"})");
  EXPECT_EQ(j.calls[1].arguments, R"({"q":"secret argument"})");
  EXPECT_EQ(j.calls[2].arguments, "");
  // Long arguments: cut before a character that would straddle the bound.
  const std::string long_text =
      std::string(kMaxLoggedArguments - 9, 'a') + "\xC3\xA9\xC3\xA9\xC3\xA9";
  const Judgement big = stage.judge_request(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search",)"
      R"("arguments":{"q":")" +
          long_text + R"("}}})",
      kAccept, std::nullopt);
  ASSERT_EQ(big.calls.size(), 1u);
  const std::string& kept = big.calls[0].arguments;
  EXPECT_TRUE(kept.ends_with("...")) << kept;
  EXPECT_LE(kept.size(), kMaxLoggedArguments + 3);
  EXPECT_EQ(kept.substr(0, 7), R"({"q":"a)");
  EXPECT_NE(static_cast<unsigned char>(kept[kept.size() - 4]), 0xC3) << kept;
}

TEST(McpStage, ARefusedCallIsAnsweredByTheGateWithAToolErrorNamingTheRule) {
  const Fixture f;
  const Judgement j = f.stage().judge_request(call(7, "delete_repo"), kAccept, std::nullopt);
  ASSERT_EQ(j.action, Judgement::Action::answer);
  EXPECT_EQ(j.answer.status, 200u);
  EXPECT_EQ(j.answer.content_type, "application/json");
  const json::value answer = parsed(j.answer.body);
  EXPECT_EQ(answer.at("id"), 7);
  EXPECT_EQ(answer.at("result").at("isError"), true);
  const std::string text(answer.at("result").at("content").at(0).at("text").as_string());
  EXPECT_EQ(text,
            "sandgate refused this call: tool delete_repo on mcp.example.com is denied by the "
            "request rule 'deny  mcp.example.com mcp-tool delete_*' (requests.txt line 3). agents "
            "never delete");
  ASSERT_EQ(j.calls.size(), 1u);
  EXPECT_EQ(j.calls[0].outcome, Call::Outcome::refused);
  EXPECT_EQ(j.calls[0].reason, rules::Reason::request_denied);
  // The log's text names the tool, never its arguments.
  EXPECT_EQ(j.calls[0].logged(), "tool delete_repo");
  EXPECT_THAT(j.calls[0].sentence, Not(HasSubstr("secret argument")));
  EXPECT_EQ(j.forwarded_calls, 0u);
}

TEST(McpStage, TheGateAnswersInTheTransportAsked) {
  const Fixture f;
  // Accept takes only SSE, or the server answers this connection in SSE: an event.
  for (const auto& [accept, usual] :
       std::vector<std::pair<std::string_view, std::optional<Transport>>>{
           {"text/event-stream", std::nullopt}, {kAccept, Transport::sse}}) {
    const Judgement j = f.stage().judge_request(call(3, "push"), accept, usual);
    ASSERT_EQ(j.action, Judgement::Action::answer);
    EXPECT_EQ(j.answer.content_type, "text/event-stream");
    EXPECT_THAT(j.answer.body, HasSubstr("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,"));
    EXPECT_TRUE(j.answer.body.ends_with("}\n\n"));
  }
  EXPECT_EQ(choose_transport("", std::nullopt), Transport::json);
  EXPECT_EQ(choose_transport("application/json", Transport::sse), Transport::json);
  EXPECT_EQ(choose_transport("text/event-stream, application/json;q=0", std::nullopt),
            Transport::sse);
  EXPECT_EQ(choose_transport("*/*", Transport::sse), Transport::sse);
}

TEST(McpStage, NotAllowedCallsAndUnknownMethodsAreRefusedProtocolMethodsPass) {
  const Fixture f;
  const std::string body =
      "[" + call(1, "push_files") +
      R"(,{"jsonrpc":"2.0","id":2,"method":"tools/execute","params":{"name":"search"}})"
      R"(,{"jsonrpc":"2.0","id":3,"method":"ping"})"
      R"(,{"jsonrpc":"2.0","method":"notifications/initialized"})"
      R"(,{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}])";
  const Judgement j = f.stage().judge_request(body, kAccept, std::nullopt);
  ASSERT_EQ(j.action, Judgement::Action::forward);
  ASSERT_EQ(j.calls.size(), 5u);
  EXPECT_EQ(j.calls[0].reason, rules::Reason::request_not_allowed);
  EXPECT_EQ(j.calls[0].outcome, Call::Outcome::refused);
  EXPECT_EQ(j.calls[1].outcome, Call::Outcome::refused);
  EXPECT_THAT(j.calls[1].sentence, HasSubstr("the method tools/execute"));
  EXPECT_EQ(j.calls[2].outcome, Call::Outcome::passed);
  EXPECT_EQ(j.calls[3].outcome, Call::Outcome::passed);
  EXPECT_EQ(j.calls[4].outcome, Call::Outcome::passed);
  // The smaller batch is the sender's own bytes.
  EXPECT_TRUE(j.body_changed);
  EXPECT_EQ(j.body, R"([{"jsonrpc":"2.0","id":3,"method":"ping"},)"
                    R"({"jsonrpc":"2.0","method":"notifications/initialized"},)"
                    R"({"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}])");
  // The unknown method is answered with a JSON-RPC error (method not found).
  ASSERT_EQ(j.plan.slots.size(), 3u);
  ASSERT_TRUE(j.plan.slots[1].gate_answer);
  EXPECT_EQ(parsed(*j.plan.slots[1].gate_answer).at("error").at("code"), -32601);
}

TEST(McpStage, ABatchIsSplitAndTheAnswersMergedInRequestOrder) {
  const Fixture f;
  const McpStage stage = f.stage();
  const std::string body =
      "[" + call(1, "search") + "," + call(2, "delete_repo") + "," + call(3, "read_file") + "]";
  const Judgement j = stage.judge_request(body, kAccept, std::nullopt);
  ASSERT_EQ(j.action, Judgement::Action::forward);
  EXPECT_EQ(j.body, "[" + call(1, "search") + "," + call(3, "read_file") + "]");
  EXPECT_EQ(j.forwarded_calls, 2u);
  // A JSON answer: the gate's answer for id 2 goes between the server's for 3 and 1 (which the
  // server sent in its own order), as the requests came.
  ResponseFilter filter(stage, j.plan);
  ASSERT_EQ(filter.start(200, "application/json"), ResponseFilter::Mode::json);
  const std::string server =
      R"([{"jsonrpc":"2.0","id":3,"result":{"content":[]}},)"
      R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"found"}]}}])";
  auto merged = filter.finish_json(server);
  ASSERT_TRUE(merged) << merged.error();
  const json::value out = parsed(*merged);
  ASSERT_EQ(out.as_array().size(), 3u);
  EXPECT_EQ(out.at(0).at("id"), 1);
  EXPECT_EQ(out.at(1).at("id"), 2);
  EXPECT_EQ(out.at(1).at("result").at("isError"), true);
  EXPECT_EQ(out.at(2).at("id"), 3);
  // The server answered one message as an object (as the TypeScript SDK does for one answer).
  const std::string single_body = "[" + call(4, "search") + "," + call(5, "delete_x") + "]";
  const Judgement single = stage.judge_request(single_body, kAccept, std::nullopt);
  ResponseFilter one(stage, single.plan);
  ASSERT_EQ(one.start(200, "application/json; charset=utf-8"), ResponseFilter::Mode::json);
  auto merged_one = one.finish_json(R"({"jsonrpc":"2.0","id":4,"result":{"content":[]}})");
  ASSERT_TRUE(merged_one);
  EXPECT_EQ(parsed(*merged_one).as_array().size(), 2u);
  // An event stream: the gate's answers come first, then the server's events.
  ResponseFilter stream(stage, j.plan);
  ASSERT_EQ(stream.start(200, "text/event-stream"), ResponseFilter::Mode::sse);
  auto first = stream.feed_sse("event: message\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,");
  ASSERT_TRUE(first);
  EXPECT_THAT(*first, HasSubstr("\"id\":2,"));
  EXPECT_THAT(*first, Not(HasSubstr("\"id\":1")));
  auto rest = stream.feed_sse("\"result\":{}}\n\n");
  ASSERT_TRUE(rest);
  EXPECT_EQ(*rest,
            "event: message\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n");
}

TEST(McpStage, OnlyRefusedRequestsLeaveNothingToSendAndA202IsReplaced) {
  const Fixture f;
  const McpStage stage = f.stage();
  // Every request refused: the gate answers alone (a batch gets an array).
  const Judgement all = stage.judge_request("[" + call(1, "x") + "]", kAccept, std::nullopt);
  ASSERT_EQ(all.action, Judgement::Action::answer);
  EXPECT_TRUE(parsed(all.answer.body).is_array());
  // A refused notification has no answer: a 202 with nothing.
  const Judgement note = stage.judge_request(
      R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"}})", kAccept,
      std::nullopt);
  ASSERT_EQ(note.action, Judgement::Action::answer);
  EXPECT_EQ(note.answer.status, 202u);
  EXPECT_TRUE(note.answer.body.empty());
  // A refused request beside a notification that goes on: the server's 202 becomes the gate's
  // answer.
  const std::string body =
      "[" + call(9, "delete_repo") + R"(,{"jsonrpc":"2.0","method":"notifications/cancelled"}])";
  const Judgement mixed = stage.judge_request(body, kAccept, std::nullopt);
  ASSERT_EQ(mixed.action, Judgement::Action::forward);
  ResponseFilter filter(stage, mixed.plan);
  ASSERT_EQ(filter.start(202, ""), ResponseFilter::Mode::replace);
  const GateAnswer replaced = filter.replacement();
  EXPECT_EQ(replaced.status, 200u);
  EXPECT_EQ(parsed(replaced.body).at(0).at("id"), 9);
}

TEST(McpStage, NamesAreJudgedAsTheServerDecodesThem) {
  const Fixture f("deny mcp.example.com mcp-tool delete_*\nallow mcp.example.com mcp-tool *\n");
  const McpStage stage = f.stage();
  const auto outcome = [&](std::string_view body) {
    const Judgement j = stage.judge_request(body, kAccept, std::nullopt);
    EXPECT_FALSE(j.unjudgeable) << body << ": " << j.problem;
    return j.calls.empty() ? Call::Outcome::passed : j.calls[0].outcome;
  };
  // `\u` escapes are decoded: this is delete_repo.
  EXPECT_EQ(outcome(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                    R"("params":{"name":"\u0064elete_repo"}})"),
            Call::Outcome::refused);
  // Escaped method names too.
  EXPECT_EQ(outcome(R"({"jsonrpc":"2.0","id":1,"method":"tools\/c\u0061ll",)"
                    R"("params":{"name":"delete_repo"}})"),
            Call::Outcome::refused);
  // Case: the deny line stops it in any case.
  EXPECT_EQ(outcome(call(1, "DELETE_REPO")), Call::Outcome::refused);
  // A Cyrillic е (escaped or raw): `*` does not allow a name that is not plain.
  EXPECT_EQ(outcome(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                    R"("params":{"name":"d\u0435lete_repo"}})"),
            Call::Outcome::refused);
  EXPECT_EQ(outcome(call(1, "d\xD0\xB5lete_repo")), Call::Outcome::refused);
  EXPECT_EQ(outcome(call(1, "search")), Call::Outcome::allowed);
  // A method in another case is not tools/call: an unknown method, refused.
  EXPECT_EQ(outcome(R"({"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"x"}})"),
            Call::Outcome::refused);
}

TEST(McpStage, ABodyTheGateCannotJudgeIsRefusedWhole) {
  Fixture f;
  f.setting.limits.request.json.max_bytes = 4096;
  f.setting.limits.request.json.max_depth = 8;
  f.setting.limits.request.max_batch = 3;
  const McpStage stage = f.stage();
  const auto refused = [&](std::string_view body, unsigned status, std::string_view why) {
    const Judgement j = stage.judge_request(body, kAccept, std::nullopt);
    EXPECT_TRUE(j.unjudgeable) << body;
    EXPECT_EQ(j.action, Judgement::Action::answer);
    EXPECT_EQ(j.answer.status, status) << body;
    EXPECT_THAT(j.problem, HasSubstr(why)) << body;
    EXPECT_TRUE(j.calls.empty());
    if (j.answer.status == 400 || j.answer.status == 413) {
      EXPECT_EQ(parsed(j.answer.body).at("id"), nullptr);
    }
  };
  // The same key twice: judged as search, run as delete_repo by a server keeping the last.
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
          R"("params":{"name":"search","name":"delete_repo"}})",
          400, "a key twice in one object (\"name\")");
  // A key spelled twice through an escape is the same key.
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
          R"("params":{"name":"search","n\u0061me":"delete_repo"}})",
          400, "a key twice");
  refused(R"({"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"})", 400, "a key twice");
  // Keys compared as servers that match names in any case compare them (Go's encoding/json runs
  // the last of these): ASCII case, and the letters outside ASCII whose case mappings reach it.
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
          R"("params":{"name":"search","NAME":"delete_repo"}})",
          400, "a key twice in one object (\"NAME\")");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"},)"
          R"("param\u017f":{"name":"delete_repo"}})",
          400, "a key twice in one object (\"param\\xC5\\xBF\")");
  refused(R"({"jsonrpc":"2.0","id":1,"\u0130d":2,"method":"ping"})", 400, "a key twice");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"\u212aey":1,"key":2}})", 400,
          "a key twice");
  // A member spelled in another case alone: read by such a server, never by the gate.
  refused(R"({"jsonrpc":"2.0","id":1,"Method":"tools/call","result":{},)"
          R"("params":{"name":"delete_repo"}})",
          400, "a member \"Method\", which servers that read names in any case take for method");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"delete_repo"}})", 400,
          "a member \"Name\"");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","param\u017f":{}})", 400, "take for params");
  refused("not json", 400, "not valid JSON");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"ping"} {})", 400, "not valid JSON");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"ping",})", 400, "not valid JSON");
  refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} // c", 400, "not valid JSON");
  refused(
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\xff\"}}",
      400, "not valid JSON");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}})", 400,
          "not valid JSON");
  refused(std::string(5000, ' '), 413, "larger than 4096 bytes");
  refused(std::string(9, '[') + std::string(9, ']'), 400, "nested deeper than 8");
  refused("[]", 400, "an empty batch");
  refused("[" + call(1, "a") + "," + call(2, "a") + "," + call(3, "a") + "," + call(4, "a") + "]",
          400, "more than 3 messages");
  refused("[1]", 400, "not a JSON object");
  refused(R"({"id":1,"method":"ping"})", 400, "not JSON-RPC 2.0");
  refused(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", 400, "id is not a string");
  refused(R"({"jsonrpc":"2.0","id":null,"method":"ping"})", 400, "id is not a string");
  refused(R"({"jsonrpc":"2.0","id":1,"method":7})", 400, "method is not a string");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]})", 400,
          "are not an object");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}})", 400,
          "has no name string");
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})", 400, "has no name string");
  refused(R"({"jsonrpc":"2.0","id":1})", 400, "neither a request");
}

TEST(McpStage, ListsShowOnlyWhatMayBeCalledInJsonAndStreams) {
  const Fixture f;
  const McpStage stage = f.stage();
  const Judgement j = stage.judge_request(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}})", kAccept, std::nullopt);
  ASSERT_EQ(j.action, Judgement::Action::forward);
  EXPECT_TRUE(j.plan.lists);
  const std::string list =
      R"({"result":{"tools":[{"name":"search","inputSchema":{"type":"object","maximum":)"
      R"(123456789012345678901234567890}},{"name":"delete_repo"},{"name":"push_files"},)"
      R"({"nameless":true},{"name":"read_file"}],"nextCursor":"c"},"jsonrpc":"2.0","id":2})";
  ResponseFilter filter(stage, j.plan);
  ASSERT_EQ(filter.start(200, "application/json"), ResponseFilter::Mode::json);
  auto out = filter.finish_json(list);
  ASSERT_TRUE(out) << out.error();
  // The server's own bytes, less the hidden entries (a number no double holds stays as sent).
  EXPECT_EQ(*out,
            R"({"result":{"tools":[{"name":"search","inputSchema":{"type":"object","maximum":)"
            R"(123456789012345678901234567890}},{"name":"read_file"}],"nextCursor":"c"},)"
            R"("jsonrpc":"2.0","id":2})");
  EXPECT_EQ(filter.hidden(), 3u);
  // The same list in an event stream, fed in two pieces, and on the GET stream (a list asked
  // again after notifications/tools/list_changed, or a resumed stream).
  ResponseFilter get_stream(stage, true);
  ASSERT_EQ(get_stream.start(200, "text/event-stream"), ResponseFilter::Mode::sse);
  auto a = get_stream.feed_sse(
      "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/"
      "list_changed\"}\n\n: keep-alive\n\nretry: 1000\nid: 7\nevent: message\ndata: " +
      list.substr(0, 40));
  ASSERT_TRUE(a);
  auto b = get_stream.feed_sse(list.substr(40) + "\n\n");
  ASSERT_TRUE(b);
  EXPECT_EQ(*a + *b,
            "event: message\ndata: "
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n:\n\nretry: "
            "1000\n\nevent: message\nid: 7\ndata: " +
                *out + "\n\n");
  // A request of the server's on its stream (sampling) passes as it is: it runs nothing here, and
  // the client's answer to it is a response, which passes too.
  ResponseFilter asks(stage, true);
  asks.start(200, "text/event-stream");
  const std::string sampling = R"({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage",)"
                               R"("params":{"messages":[],"maxTokens":10}})";
  auto asked = asks.feed_sse("data: " + sampling + "\n\n");
  ASSERT_TRUE(asked) << asked.error();
  EXPECT_EQ(*asked, "event: message\ndata: " + sampling + "\n\n");
  // A call's result is not read as a list, however it looks.
  ResponseFilter calls(stage, true);
  calls.start(200, "text/event-stream");
  auto c = calls.feed_sse("data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c,
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n\n");
}

TEST(McpStage, AStreamTheGateCannotReadIsCut) {
  Fixture f;
  f.setting.limits.response.max_bytes = 64;
  const McpStage stage = f.stage();
  ResponseFilter bad(stage, true);
  bad.start(200, "text/event-stream");
  auto out = bad.feed_sse("data: {\"a\":1,\"a\":2}\n\n");
  ASSERT_FALSE(out);
  EXPECT_THAT(out.error(), HasSubstr("a key twice"));
  ResponseFilter big(stage, true);
  big.start(200, "text/event-stream");
  EXPECT_FALSE(big.feed_sse("data: " + std::string(100, 'x') + "\n\n"));
  ResponseFilter not_json(stage, true);
  not_json.start(200, "text/event-stream");
  EXPECT_FALSE(not_json.feed_sse("data: hello\n\n"));
  // A JSON answer too large to hold.
  const Judgement j = stage.judge_request(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
                                          kAccept, std::nullopt);
  ResponseFilter json_answer(stage, j.plan);
  ASSERT_EQ(json_answer.start(200, "application/json"), ResponseFilter::Mode::json);
  EXPECT_FALSE(json_answer.finish_json(std::string(100, ' ')));
}

// Every answer a client reads messages from is read: a POST's 2xx body as JSON or events (a
// tool's result too: a list sent as the answer to another request is filtered as well), a
// GET's event stream; any other type there is refused, never passed unread.
TEST(McpStage, EveryAnswerAClientReadsIsReadAndNoOtherTypePasses) {
  const Fixture f;
  const McpStage stage = f.stage();
  const Judgement j = stage.judge_request(call(1, "search"), kAccept, std::nullopt);
  const auto mode = [&](unsigned status, std::string_view type, bool has_body = true) {
    ResponseFilter filter(stage, j.plan);
    return filter.start(status, type, has_body);
  };
  EXPECT_EQ(mode(200, "application/json"), ResponseFilter::Mode::json);
  EXPECT_EQ(mode(200, "Application/JSON; charset=utf-8"), ResponseFilter::Mode::json);
  EXPECT_EQ(mode(200, "text/event-stream"), ResponseFilter::Mode::sse);
  EXPECT_EQ(mode(404, "application/json"), ResponseFilter::Mode::pass);  // an error's body
  EXPECT_EQ(mode(200, "application/json", false), ResponseFilter::Mode::pass);
  for (const std::string_view type :
       {"text/plain", "", "application/json-seq", "text/event-streams", "text/html"}) {
    ResponseFilter filter(stage, j.plan);
    EXPECT_EQ(filter.start(200, type), ResponseFilter::Mode::refuse) << type;
    EXPECT_THAT(filter.refusal(), HasSubstr("application/json or text/event-stream only"));
  }
  // A 202 carries nothing a client reads: its body is dropped.
  ResponseFilter accepted(stage, j.plan);
  ASSERT_EQ(accepted.start(202, "text/plain"), ResponseFilter::Mode::replace);
  EXPECT_EQ(accepted.replacement().status, 202u);
  EXPECT_TRUE(accepted.replacement().body.empty());
  EXPECT_TRUE(accepted.replacement().content_type.empty());
  // A tool's JSON result is read; one carrying a tools/list result (for another request's id)
  // is filtered.
  ResponseFilter result(stage, j.plan);
  ASSERT_EQ(result.start(200, "application/json"), ResponseFilter::Mode::json);
  auto out = result.finish_json(
      R"([{"jsonrpc":"2.0","id":1,"result":{"content":[]}},)"
      R"({"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"search"},{"name":"delete_repo"}]}}])");
  ASSERT_TRUE(out) << out.error();
  EXPECT_THAT(*out, Not(HasSubstr("delete_repo")));
  // The GET that asked for the server's stream gets one or a 502; another GET passes.
  ResponseFilter stream(stage, true);
  EXPECT_EQ(stream.start(200, "text/event-stream"), ResponseFilter::Mode::sse);
  for (const std::string_view type : {"application/json", "text/plain", ""}) {
    ResponseFilter other(stage, true);
    EXPECT_EQ(other.start(200, type), ResponseFilter::Mode::refuse) << type;
    EXPECT_THAT(other.refusal(), HasSubstr("reads only an event stream"));
  }
  ResponseFilter page(stage, false);
  EXPECT_EQ(page.start(200, "text/html"), ResponseFilter::Mode::pass);
  ResponseFilter page_stream(stage, false);
  EXPECT_EQ(page_stream.start(200, "text/event-stream"), ResponseFilter::Mode::sse);
}

// A server message the clients would read differently than the gate: not an object, or a
// JSON-RPC member (or a list's array) spelled in another case, which clients that match names
// in any case (Go's encoding/json) read as the member the gate did not filter.
TEST(McpStage, AServerMessageSpelledAnotherWayIsCut) {
  const Fixture f;
  const McpStage stage = f.stage();
  const Judgement j = stage.judge_request(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
                                          kAccept, std::nullopt);
  for (const std::string_view body :
       {R"({"jsonrpc":"2.0","id":2,"Result":{"tools":[{"name":"delete_repo"}]}})",
        R"({"jsonrpc":"2.0","id":2,"result":{"Tools":[{"name":"delete_repo"}]}})",
        R"({"jsonrpc":"2.0","id":2,"result":{"tool\u017f":[{"name":"delete_repo"}]}})",
        R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"search","NAME":"delete_repo"}]}})",
        R"([{"jsonrpc":"2.0","id":2,"result":{"tools":[]}},7])", R"("text")"}) {
    ResponseFilter json_answer(stage, j.plan);
    ASSERT_EQ(json_answer.start(200, "application/json"), ResponseFilter::Mode::json);
    EXPECT_FALSE(json_answer.finish_json(body)) << body;
    ResponseFilter events(stage, j.plan);
    ASSERT_EQ(events.start(200, "text/event-stream"), ResponseFilter::Mode::sse);
    EXPECT_FALSE(events.feed_sse("data: " + std::string(body) + "\n\n")) << body;
  }
  // A batch in one event is filtered message by message.
  ResponseFilter events(stage, true);
  ASSERT_EQ(events.start(200, "text/event-stream"), ResponseFilter::Mode::sse);
  auto out =
      events.feed_sse(R"(data: [{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"delete_repo"},)"
                      R"({"name":"search"}]}}])"
                      "\n\n");
  ASSERT_TRUE(out) << out.error();
  EXPECT_EQ(*out,
            "event: message\ndata: "
            R"([{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"search"}]}}])"
            "\n\n");
  // The older transport's endpoint event (a URL) passes as it is; one that holds JSON is read.
  ResponseFilter old(stage, true);
  old.start(200, "text/event-stream");
  auto endpoint = old.feed_sse("event: endpoint\ndata: /messages?sessionId=a1\n\n");
  ASSERT_TRUE(endpoint) << endpoint.error();
  EXPECT_EQ(*endpoint, "event: endpoint\ndata: /messages?sessionId=a1\n\n");
  ResponseFilter sly(stage, true);
  sly.start(200, "text/event-stream");
  auto listed =
      sly.feed_sse(R"(event: endpoint)"
                   "\n"
                   R"(data: {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"delete_repo"}]}})"
                   "\n\n");
  ASSERT_TRUE(listed) << listed.error();
  EXPECT_THAT(*listed, Not(HasSubstr("delete_repo")));
}

TEST(McpStage, UnderAskACallNoLineDecidesIsAQuestionThenTheAnswerDecides) {
  Fixture f(kRules, true);
  const std::string body = "[" + call(1, "create_issue") + "," + call(2, "create_issue") + "," +
                           call(3, "delete_repo") + "]";
  const Judgement asked = f.stage().judge_request(body, kAccept, std::nullopt);
  ASSERT_EQ(asked.action, Judgement::Action::ask);
  ASSERT_EQ(asked.questions.size(), 1u);  // once per name; the denied one is never asked
  const Question& q = asked.questions[0];
  EXPECT_EQ(q.request, "tool create_issue");
  EXPECT_EQ(q.text, "allow tool create_issue on mcp.example.com?");
  EXPECT_EQ(q.allow_line, "allow mcp.example.com mcp-tool create_issue");
  EXPECT_EQ(q.deny_line, "deny mcp.example.com mcp-tool create_issue");
  // Under ask the list shows it (a call would ask); a denied one stays hidden.
  EXPECT_TRUE(f.stage().listed(rules::McpKind::tool, "create_issue"));
  EXPECT_FALSE(f.stage().listed(rules::McpKind::tool, "delete_repo"));
  // Allowed by a person: both calls go on, the denied one does not.
  f.setting.answers = {{rules::McpKind::tool, "create_issue", true, "answered: tool create_issue"}};
  const Judgement yes = f.stage().judge_request(body, kAccept, std::nullopt);
  ASSERT_EQ(yes.action, Judgement::Action::forward);
  EXPECT_EQ(yes.body, "[" + call(1, "create_issue") + "," + call(2, "create_issue") + "]");
  EXPECT_EQ(yes.calls[0].rule, "answered: tool create_issue");
  // Refused by a person: the gate answers with the person's sentence.
  f.setting.answers = {{rules::McpKind::tool, "create_issue", false,
                        "a person answered deny to the question about tool create_issue."}};
  const Judgement no = f.stage().judge_request(call(4, "create_issue"), kAccept, std::nullopt);
  ASSERT_EQ(no.action, Judgement::Action::answer);
  EXPECT_THAT(no.answer.body, HasSubstr("a person answered deny"));
  // A name that is not plain is refused, not asked: a person cannot see a lookalike.
  Fixture odd(kRules, true);
  const Judgement lookalike = odd.stage().judge_request(call(5,
                                                             "s\xD0\xB5"
                                                             "arch"),
                                                        kAccept, std::nullopt);
  EXPECT_EQ(lookalike.action, Judgement::Action::answer);
  EXPECT_TRUE(lookalike.questions.empty());
}

TEST(McpStage, ReportOnlyLetsRefusalsThroughAsWouldDeny) {
  const Fixture f(kRules, false, true);
  const std::string body = "[" + call(1, "delete_repo") + "," + call(2, "unknown_tool") + "]";
  const Judgement j = f.stage().judge_request(body, kAccept, std::nullopt);
  ASSERT_EQ(j.action, Judgement::Action::forward);
  EXPECT_FALSE(j.body_changed);
  EXPECT_EQ(j.calls[0].outcome, Call::Outcome::would_deny);
  EXPECT_EQ(j.calls[0].reason, rules::Reason::request_denied);
  EXPECT_EQ(j.calls[1].outcome, Call::Outcome::would_deny);
  EXPECT_TRUE(f.stage().listed(rules::McpKind::tool, "delete_repo"));
}

TEST(McpStage, PromptsAndResourcesAreJudgedWhereLinesNameThem) {
  const Fixture f(
      "allow mcp.example.com mcp-prompt summarise\n"
      "allow mcp.example.com mcp-resource repo://docs/**\n");
  const McpStage stage = f.stage();
  const auto judged = [&](std::string_view body) {
    return stage.judge_request(body, kAccept, std::nullopt);
  };
  EXPECT_EQ(
      judged(R"({"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x"}})").action,
      Judgement::Action::answer);
  const Judgement read =
      judged(R"({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"repo://k"}})");
  ASSERT_EQ(read.action, Judgement::Action::answer);
  // Not a tool: a JSON-RPC error, with the reason and the rule as data.
  const json::value answer = parsed(read.answer.body);
  EXPECT_EQ(answer.at("error").at("code"), -32000);
  EXPECT_EQ(answer.at("error").at("data").at("reason"), "request-not-allowed");
  EXPECT_EQ(judged(R"({"jsonrpc":"2.0","id":1,"method":"resources/read",)"
                   R"("params":{"uri":"repo://docs/a.md"}})")
                .action,
            Judgement::Action::forward);
  // No tool lines here: tools pass.
  EXPECT_EQ(judged(call(1, "anything")).action, Judgement::Action::forward);
}

TEST(CallTally, CountsPerToolAndVerdictWithBoundedNames) {
  const Fixture f;
  const McpStage stage = f.stage();
  CallTally tally;
  for (int i = 0; i < 3; ++i) {
    tally.count("mcp.example.com",
                stage.judge_request(call(1, "search"), kAccept, std::nullopt).calls);
  }
  tally.count("mcp.example.com",
              stage.judge_request(call(1, "delete_repo"), kAccept, std::nullopt).calls);
  tally.count("mcp.example.com",
              stage.judge_request(call(1, "d\xD0\xB5lete"), kAccept, std::nullopt).calls);
  const std::string text = tally.render_prometheus();
  EXPECT_THAT(text, HasSubstr("sandgate_mcp_calls_total{host=\"mcp.example.com\",kind=\"tool\","
                              "name=\"search\",verdict=\"allow\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("name=\"delete_repo\",verdict=\"deny\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("name=\"(odd)\",verdict=\"deny\"} 1\n"));
  // Past the bound, new names share one series.
  for (std::size_t i = 0; i < CallTally::kMaxSeries + 10; ++i) {
    tally.count("mcp.example.com",
                stage.judge_request(call(1, "t" + std::to_string(i)), kAccept, std::nullopt).calls);
  }
  const std::string full = tally.render_prometheus();
  EXPECT_LE(std::count(full.begin(), full.end(), '\n'), CallTally::kMaxSeries + 4);
  EXPECT_THAT(full, HasSubstr("name=\"(other)\",verdict=\"deny\"}"));
}

}  // namespace
}  // namespace sandgate::mcp
