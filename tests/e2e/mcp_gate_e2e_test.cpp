// MCP lines end to end: the official MCP TypeScript SDK's real Client (tests/e2e/mcp/
// gate_client.mjs) through a real sandgate gate that inspects the MCP host, to the SDK's real
// McpServer serving TLS on loopback (tests/e2e/mcp/tls_origin.mjs), answering in JSON and in
// server-sent events. An allowed tool runs; a refused one comes back as the isError result
// naming the rule and its `#!` message and never reaches the server; tools/list is filtered; a
// mixed batch is split; the decision lines name the tool, never its arguments; /metrics counts;
// report-only logs would-deny and passes; a body over 1 MiB is 413 and a list answer over 16 MiB
// a 502; under --unknown=ask a question is asked and answered on the admin endpoint; plain HTTP
// (curl through http_proxy) is judged the same; a batch's calls each count against the request
// budget; and curl --http2 to a host with MCP lines speaks HTTP/1.1 (the gate offers nothing
// else), so the call is judged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "proxy/ask/admin_routes.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/child_server.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"

#ifndef SANDGATE_SOURCE_DIR
#error "SANDGATE_SOURCE_DIR must name the source tree"
#endif
#ifndef SANDGATE_NODE
#error "SANDGATE_NODE must name node"
#endif

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kMcpDir = SANDGATE_SOURCE_DIR "/tests/e2e/mcp";
constexpr const char* kHost = "mcp.origin.test";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class McpGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/mcp-gate-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {std::string("DNS:") + kHost}, "mcp-origin-ca");
    for (const char* mode : {"json", "sse", "both", "plain"}) {
      run_shell("mkdir -p " + folder_ + "/" + mode);
    }
    json_port_ = start_origin("json", json_origin_);
    sse_port_ = start_origin("sse", sse_origin_);
    both_port_ = start_origin("both", both_origin_);
    plain_port_ = start_origin("plain", plain_origin_);
    std::ofstream(folder_ + "/requests.txt")
        << "allow " << kHost << " mcp-tool search\n"
        << "allow " << kHost << " mcp-tool read_file\n"
        << "deny  " << kHost << " mcp-tool delete_*   #! agents never delete\n";
    std::ofstream(folder_ + "/allow.txt") << kHost << "\n";
  }
  void TearDown() override {
    json_origin_.reset();
    sse_origin_.reset();
    both_origin_.reset();
    plain_origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  std::uint16_t start_origin(const std::string& mode, std::unique_ptr<ChildServer>& origin) {
    const std::uint16_t port = free_port();
    origin = std::make_unique<ChildServer>(
        port, std::string(SANDGATE_NODE " ") + kMcpDir + "/tls_origin.mjs " + std::to_string(port) +
                  " " + folder_ + "/server.pem " + folder_ + "/server.key " + mode + " " + folder_ +
                  "/" + mode);
    EXPECT_TRUE(port_accepts(port)) << "the " << mode << " origin did not start";
    return port;
  }

  // A gate with the MCP lines, inspecting their host with the test CA trusted.
  std::unique_ptr<TestProxy> gate(bool report_only = false, bool ask = false,
                                  const std::string& budgets = "") {
    if (!budgets.empty()) {
      std::ofstream(folder_ + "/budgets.txt") << budgets;
    }
    auto proxy = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the test origins are on loopback
      s.tls_ports = {json_port_, sse_port_, both_port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.request_rules_path = folder_ + "/requests.txt";
      s.enforce = !report_only;
      if (!budgets.empty()) {
        s.budgets_path = folder_ + "/budgets.txt";
      }
      if (ask) {
        s.policy.unknown = rules::UnknownMode::ask;
        s.allowlist_path = folder_ + "/allow.txt";
        s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
        s.ask_timeout = std::chrono::seconds(20);
      }
    });
    proxy->dns().set(kHost, {"127.0.0.1"});
    return proxy;
  }

  std::string url(std::uint16_t port) const {
    return std::string("https://") + kHost + ":" + std::to_string(port) + "/mcp";
  }
  // The SDK client (gate_client.mjs) through `proxy`; its output.
  CommandResult client(const TestProxy& proxy, std::uint16_t port, const std::string& mode,
                       const std::string& tool = "") const {
    return run_shell(std::string(SANDGATE_NODE " ") + kMcpDir + "/gate_client.mjs " +
                     std::to_string(proxy.port()) + " " + url(port) + " " + folder_ +
                     "/gate-ca/ca.pem " + mode + " " + tool + " 2>&1");
  }
  std::string ran(const std::string& mode) const {
    return read_file(folder_ + "/" + mode + "/ran.txt");
  }
  std::string bodies(const std::string& mode) const {
    return read_file(folder_ + "/" + mode + "/bodies.txt");
  }

  // The session through the gate, against the origin answering in `mode`.
  void expect_judged_session(const std::string& mode, std::uint16_t port) {
    auto proxy = gate();
    const auto got = client(*proxy, port, "session");
    ASSERT_EQ(got.exit_code, 0) << got.output;
    const std::string& out = got.output;
    // tools/list: only what may be called.
    EXPECT_TRUE(contains(out, R"("tools":["search","read_file"])")) << out;
    EXPECT_TRUE(contains(out, R"("search":"search ran with secret-argument")")) << out;
    // The refused call: a tool error naming the rule and its message.
    EXPECT_TRUE(contains(out, R"("refused":{"isError":true,"text":"sandgate refused this call: )"))
        << out;
    EXPECT_TRUE(contains(out, "agents never delete")) << out;
    EXPECT_TRUE(contains(out, "requests.txt")) << out;
    // The batch: split, the answers merged in request order.
    EXPECT_TRUE(contains(out, R"("batch":{"status":200,"messages":[{"id":11,"isError":false,)"
                              R"("text":"search ran with 11"},{"id":12,"isError":true,)"))
        << out;
    EXPECT_TRUE(contains(out, R"({"id":13,"isError":false,"text":"read_file ran with 13"})"))
        << out;
    // delete_repo never reached the server.
    EXPECT_EQ(ran(mode), "search\nsearch\nread_file\n");
    EXPECT_FALSE(contains(bodies(mode), "delete_repo")) << bodies(mode);

    // The decision lines name the tool, never its arguments.
    ASSERT_TRUE(proxy->wait_for_log([](const std::string& log) {
      return log_lines_with(log, {R"("call":"tool delete_repo")"}).size() == 2;
    })) << proxy->log_text();
    const std::string log = proxy->log_text();
    EXPECT_FALSE(contains(log, "secret-argument")) << log;
    const auto denied = log_lines_with(log, {R"("verdict":"deny")", R"("reason":"request-denied")",
                                             R"("call":"tool delete_repo")"});
    ASSERT_EQ(denied.size(), 2u) << log;
    EXPECT_TRUE(contains(denied[0], "mcp-tool delete_*")) << denied[0];
    EXPECT_EQ(log_lines_with(log, {R"("verdict":"allow")", R"("call":"tool search")"}).size(), 2u)
        << log;
    // /metrics counts the calls.
    const std::string metrics = proxy->gate().render_metrics();
    EXPECT_TRUE(contains(metrics, std::string("sandgate_mcp_calls_total{host=\"") + kHost +
                                      "\",kind=\"tool\",name=\"delete_repo\",verdict=\"deny\"} 2"))
        << metrics;
    EXPECT_TRUE(contains(metrics, std::string("sandgate_mcp_calls_total{host=\"") + kHost +
                                      "\",kind=\"tool\",name=\"search\",verdict=\"allow\"} 2"))
        << metrics;
  }

  std::string folder_;
  std::uint16_t json_port_ = 0;
  std::uint16_t sse_port_ = 0;
  std::uint16_t both_port_ = 0;
  std::unique_ptr<ChildServer> json_origin_;
  std::unique_ptr<ChildServer> sse_origin_;
  std::unique_ptr<ChildServer> both_origin_;
  std::uint16_t plain_port_ = 0;
  std::unique_ptr<ChildServer> plain_origin_;
};

TEST_F(McpGateTest, JsonAnswersAreJudgedFilteredAndSplit) {
  expect_judged_session("json", json_port_);
}

TEST_F(McpGateTest, EventStreamAnswersAreJudgedFilteredAndSplit) {
  expect_judged_session("sse", sse_port_);
}

TEST_F(McpGateTest, ReportOnlyLogsWouldDenyAndLetsTheCallThrough) {
  auto proxy = gate(/*report_only=*/true);
  const auto got = client(*proxy, json_port_, "call", "delete_repo");
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_TRUE(contains(got.output, R"({"isError":false,"text":"delete_repo ran with x"})"))
      << got.output;
  EXPECT_EQ(ran("json"), "delete_repo\n");
  ASSERT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {R"("verdict":"would-deny")", R"("call":"tool delete_repo")"})
                .empty();
  })) << proxy->log_text();
}

TEST_F(McpGateTest, ABodyOverOneMebibyteIsRefused413AndNeverSent) {
  auto proxy = gate();
  const auto got = client(*proxy, json_port_, "large");
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_TRUE(contains(got.output, R"({"status":413,)")) << got.output;
  EXPECT_TRUE(contains(got.output, "-32700")) << got.output;
  EXPECT_EQ(bodies("json"), "");
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {R"("verdict":"deny")", R"("reason":"bad-request")"}).empty();
  })) << proxy->log_text();
}

std::uint16_t admin_port(TestProxy& proxy) {
  const std::string& address = proxy.gate().admin_address();
  return static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
}

std::string admin_decide(TestProxy& proxy, const std::string& body) {
  TestClient admin(admin_port(proxy));
  admin.send(
      "POST /decide HTTP/1.1\r\nHost: admin\r\nContent-Type: "
      "application/x-www-form-urlencoded\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  return admin.read_to_end();
}

TEST_F(McpGateTest, UnderAskACallNoLineDecidesWaitsForAPerson) {
  auto proxy = gate(/*report_only=*/false, /*ask=*/true);
  auto called = std::async(std::launch::async,
                           [&] { return client(*proxy, json_port_, "call", "create_issue"); });
  const std::string where = std::string(kHost) + ":" + std::to_string(json_port_);
  bool asked = false;
  for (int i = 0; i < 1500 && !asked; ++i) {
    asked =
        contains(ask::render_pending_text(proxy->gate().questions()), where + " tool create_issue");
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(asked) << ask::render_pending_text(proxy->gate().questions()) << proxy->log_text();
  EXPECT_EQ(read_file(folder_ + "/json/ran.txt"), "");  // held until answered
  const std::string answer =
      admin_decide(*proxy, "host=" + std::string(kHost) + "&port=" + std::to_string(json_port_) +
                               "&request=tool+create_issue&answer=once&who=tester");
  EXPECT_TRUE(contains(answer, "HTTP/1.1 200")) << answer;
  const auto got = called.get();
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_TRUE(contains(got.output, R"({"isError":false,"text":"create_issue ran with x"})"))
      << got.output;
  EXPECT_EQ(ran("json"), "create_issue\n");
}

// A JSON answer the gate must hold whole to filter (a tools/list) is read to 16 MiB at most:
// one over it is a 502 naming the limit, never passed unfiltered.
TEST_F(McpGateTest, AListAnswerOverSixteenMebibytesIs502) {
  auto proxy = gate();
  const auto got = run_shell(
      "curl -sS --max-time 30 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
      " --cacert " + folder_ + "/gate-ca/ca.pem" +
      " -H 'content-type: application/json' -H 'accept: application/json, text/event-stream'" +
      R"( -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')" + " -w '\n%{http_code}\n' " +
      url(both_port_) + " 2>&1 | tail -c 400");
  EXPECT_TRUE(contains(got.output, "\n502\n")) << got.output;
  EXPECT_TRUE(contains(got.output, "16 MiB")) << got.output;
}

// Plain HTTP through the gate (an http_proxy client): the same judgement, nothing refused sent.
TEST_F(McpGateTest, PlainHttpCallsAreJudgedToo) {
  auto proxy = gate();
  const auto post = [&](const std::string& tool) {
    return run_shell(
        "curl -sS --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
        " -H 'content-type: application/json' -H 'accept: application/json, text/event-stream'" +
        R"( -d '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":")" + tool +
        R"(","arguments":{}}}')" + " -w '\n%{http_code}\n' http://" + kHost + ":" +
        std::to_string(plain_port_) + "/mcp 2>&1");
  };
  const auto refused = post("delete_repo");
  EXPECT_TRUE(contains(refused.output, R"("isError":true)")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "agents never delete")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "\n200\n")) << refused.output;
  EXPECT_FALSE(contains(bodies("plain"), "delete_repo")) << bodies("plain");
  // An allowed call goes on (the server, with no session, answers it with its own error).
  post("search");
  EXPECT_TRUE(contains(bodies("plain"), R"("name":"search")")) << bodies("plain");
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {R"("verdict":"deny")", R"("call":"tool delete_repo")"}).empty() &&
           !log_lines_with(log, {R"("verdict":"allow")", R"("call":"tool search")"}).empty();
  })) << proxy->log_text();
}

// A batch of N calls that go on counts N requests against the host's budget, not one.
TEST_F(McpGateTest, ABatchCountsEachCallAgainstTheRequestBudget) {
  auto proxy = gate(false, false, std::string(kHost) + " requests=3/hour\n");
  const auto post = [&](const std::string& body) {
    return run_shell(
        "curl -sS --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
        " -H 'content-type: application/json' -H 'accept: application/json'" + " -d '" + body +
        "' -o /dev/null -w '%{http_code}\n' http://" + kHost + ":" + std::to_string(plain_port_) +
        "/mcp 2>&1");
  };
  const auto call = [](int id, const std::string& tool) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":{}}})";
  };
  post("[" + call(1, "search") + "," + call(2, "read_file") + "," + call(3, "search") + "]");
  EXPECT_TRUE(contains(bodies("plain"), R"("name":"read_file")")) << bodies("plain");
  // Three calls went on: the budget of three requests is spent.
  const auto after = post(call(4, "search"));
  EXPECT_EQ(after.output, "429\n");
  EXPECT_FALSE(contains(bodies("plain"), R"("id":4)")) << bodies("plain");
}

// A host with MCP lines is offered HTTP/1.1 only: curl --http2, to an origin that speaks h2 as
// well, ends up on HTTP/1.1 and its calls are judged (on h2 they would pass unjudged).
TEST_F(McpGateTest, CurlOverHttp2ToAnMcpHostSpeaksHttp11AndIsJudged) {
  auto proxy = gate();
  const auto post = [&](const std::string& tool) {
    return run_shell(
        "curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
        " --cacert " + folder_ + "/gate-ca/ca.pem" +
        " -H 'content-type: application/json' -H 'accept: application/json, text/event-stream'" +
        R"( -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")" + tool +
        R"(","arguments":{}}}')" + " -w '\\n%{http_version} %{http_code}\\n' " + url(both_port_) +
        " 2>&1");
  };
  const auto refused = post("delete_repo");
  EXPECT_TRUE(contains(refused.output, "\n1.1 200\n")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "agents never delete")) << refused.output;
  EXPECT_TRUE(contains(refused.output, R"("isError":true)")) << refused.output;
  const auto allowed = post("search");
  EXPECT_TRUE(contains(allowed.output, "origin ran it over HTTP/1.1")) << allowed.output;
  EXPECT_TRUE(contains(allowed.output, "\n1.1 200\n")) << allowed.output;
  EXPECT_FALSE(contains(bodies("both"), "delete_repo")) << bodies("both");
}

}  // namespace
}  // namespace sandgate::testing
