// MCP lines end to end: the official MCP TypeScript SDK's real Client (tests/e2e/mcp/
// gate_client.mjs) through a real sandgate gate that inspects the MCP host, to the SDK's real
// McpServer serving TLS on loopback (tests/e2e/mcp/tls_origin.mjs), answering in JSON and in
// server-sent events. An allowed tool runs; a refused one comes back as the isError result
// naming the rule and its `#!` message and never reaches the server; tools/list is filtered, and
// so is the list fetched again after notifications/tools/list_changed; a mixed batch is split; a
// 202 stays empty or carries the gate's answers; the decision lines name the tool, never its
// arguments; /metrics counts; report-only logs would-deny and passes; a body over 1 MiB is 413
// and a list answer over 16 MiB a 502; under --unknown=ask a question is asked and answered on
// the admin endpoint (once, session, always writing an mcp-tool line, never); a masked secret
// the server echoes is cleaned from filtered answers; plain HTTP (curl through http_proxy) is
// judged the same; a batch's calls each count against the request budget; over HTTP/2 (curl
// --http2, to an origin that speaks h2 too and to one that speaks only h2,
// tests/support/mcp_h2_origin.mjs) calls are judged and answers filtered, in JSON and in events,
// as on HTTP/1.1, and an h2 connection a reload gave MCP lines has its calls judged. The same
// client confined by `sandgate run` (its own fetch, captured). And an attacker's view: a hostile
// client (tests/support/mcp_hostile_origin.py records what reached the server) and a hostile server
// (the same script answering what a server would send to get past the filter).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "proxy/ask/admin_routes.hpp"
#include "proxy/secrets/secret_spec.hpp"
#include "tests/fakes/fake_dns_server.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/child_server.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/scratch_folder.hpp"
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
constexpr const char* kHostile = SANDGATE_SOURCE_DIR "/tests/support/mcp_hostile_origin.py";
constexpr const char* kH2Origin = SANDGATE_SOURCE_DIR "/tests/support/mcp_h2_origin.mjs";
constexpr const char* kNodeH2Client = SANDGATE_SOURCE_DIR "/tests/support/node_h2_client.mjs";
constexpr const char* kSandgate = SANDGATE_BINARY_DIR "/bin/sandgate";
constexpr const char* kHost = "mcp.origin.test";
// The masked secret's real value (the server sees it; the client never does).
constexpr const char* kRealToken = "mcp-real-token-0123456789abcdef";

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
    for (const char* mode : {"json", "sse", "both", "plain", "hostile", "hostile-plain"}) {
      run_shell("mkdir -p " + folder_ + "/" + mode);
    }
    // The six origins start at once, each on the port free_port() just gave (started one after
    // the other, waiting for each, they were most of the suite's time; started on a test's
    // first use, a port reserved at set-up could be taken by another test's server meanwhile).
    for (const char* mode : {"json", "sse", "both", "plain"}) {
      origins_[mode] = {free_port(),
                        std::string(SANDGATE_NODE " ") + kMcpDir + "/tls_origin.mjs " + "{port} " +
                            folder_ + "/server.pem " + folder_ + "/server.key " + mode + " " +
                            folder_ + "/" + mode,
                        nullptr};
    }
    origins_["hostile"] = {free_port(),
                           std::string("/usr/bin/python3 ") + kHostile + " {port} " + folder_ +
                               "/hostile " + folder_ + "/server.pem " + folder_ + "/server.key",
                           nullptr};
    origins_["hostile-plain"] = {
        free_port(),
        std::string("/usr/bin/python3 ") + kHostile + " {port} " + folder_ + "/hostile-plain",
        nullptr};
    h2_port_ = free_port();  // its origin is started by the tests that use it
    for (auto& [mode, origin] : origins_) {
      std::string command = origin.command;
      command.replace(command.find("{port}"), 6, std::to_string(origin.port));
      origin.server = std::make_unique<ChildServer>(origin.port, command, /*wait=*/false);
    }
    for (const auto& [mode, origin] : origins_) {
      EXPECT_TRUE(origin.server->wait_until_accepting())
          << "the " << mode << " origin did not start";
    }
    write_rules();
    std::ofstream(folder_ + "/allow.txt") << kHost << "\n";
    std::ofstream(folder_ + "/token") << kRealToken << "\n";
  }
  void TearDown() override {
    origins_.clear();
    run_shell("rm -rf " + folder_);
  }

  // The request rules: the MCP lines (and `extra` lines after them).
  void write_rules(const std::string& extra = "") {
    std::ofstream(folder_ + "/requests.txt")
        << "allow " << kHost << " mcp-tool search\n"
        << "allow " << kHost << " mcp-tool read_file\n"
        << "allow " << kHost << " mcp-tool read_notes\n"
        << "deny  " << kHost << " mcp-tool delete_*   #! agents never delete\n"
        << extra;
  }

  // The port of the origin `mode` (json, sse, both, plain, hostile, hostile-plain).
  std::uint16_t port_of(const std::string& mode) const { return origins_.at(mode).port; }
  std::uint16_t json_port() const { return port_of("json"); }
  std::uint16_t sse_port() const { return port_of("sse"); }
  std::uint16_t both_port() const { return port_of("both"); }
  std::uint16_t plain_port() const { return port_of("plain"); }
  std::uint16_t hostile_port() const { return port_of("hostile"); }
  std::uint16_t hostile_plain_port() const { return port_of("hostile-plain"); }

  // A gate with the MCP lines, inspecting their host with the test CA trusted.
  // `secret`: a --secret entry (MCP_TOKEN bound to the MCP host, from the file `token`).
  std::unique_ptr<TestProxy> gate(bool report_only = false, bool ask = false,
                                  const std::string& budgets = "", bool secret = false) {
    if (!budgets.empty()) {
      std::ofstream(folder_ + "/budgets.txt") << budgets;
    }
    auto proxy = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the test origins are on loopback
      s.tls_ports = {origins_.at("json").port, origins_.at("sse").port, origins_.at("both").port,
                     origins_.at("hostile").port, h2_port_};
      if (secret) {
        s.secrets.push_back(*secrets::parse_secret_spec(std::string("MCP_TOKEN=") + kHost + "=@" +
                                                        folder_ + "/token"));
      }
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.request_rules_path = folder_ + "/requests.txt";
      s.enforce = !report_only;
      s.log_mcp_arguments = log_arguments_;
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
  // `token`: the MCP_TOKEN the client sends as its bearer token ("": none).
  CommandResult client(const TestProxy& proxy, std::uint16_t port, const std::string& mode,
                       const std::string& tool = "", const std::string& token = "") const {
    return run_shell((token.empty() ? std::string() : "MCP_TOKEN='" + token + "' ") +
                     SANDGATE_NODE " " + kMcpDir + "/gate_client.mjs " +
                     std::to_string(proxy.port()) + " " + url(port) + " " + folder_ +
                     "/gate-ca/ca.pem " + mode + " " + tool + " 2>&1");
  }
  // curl through `proxy` to `path` on the MCP host at `port`: https (inspected) or plain http;
  // its body, then its status on a line of its own.
  CommandResult curl(const TestProxy& proxy, std::uint16_t port, const std::string& path,
                     const std::string& options, bool tls = true) const {
    return run_shell(
        "curl -sS --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy.port()) +
        " --cacert " + folder_ + "/gate-ca/ca.pem " + options + " -w '\\n%{http_code}\\n' " +
        (tls ? "https://" : "http://") + kHost + ":" + std::to_string(port) + path + " 2>&1");
  }
  // The origin that speaks only h2 (tests/support/mcp_h2_origin.mjs), recording into h2/.
  std::unique_ptr<ChildServer> start_h2_origin() {
    run_shell("mkdir -p " + folder_ + "/h2");
    auto origin = std::make_unique<ChildServer>(
        h2_port_, std::string(SANDGATE_NODE " ") + kH2Origin + " " + std::to_string(h2_port_) +
                      " " + folder_ + "/server.pem " + folder_ + "/server.key " + folder_ + "/h2");
    EXPECT_TRUE(port_accepts(h2_port_)) << "the h2 origin did not start";
    return origin;
  }
  // curl --http2 through `proxy` POSTing `data` (curl's --data-binary argument) to `path` on the
  // h2 origin, with `options`; its body, then its HTTP version and status on a line of its own.
  CommandResult curl_h2(const TestProxy& proxy, const std::string& path, const std::string& data,
                        const std::string& options = "") const {
    return run_shell(
        "curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy.port()) +
        " --cacert " + folder_ + "/gate-ca/ca.pem" +
        " -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' " +
        options + " --data-binary " + data + " -w '\\n%{http_version} %{http_code}\\n' https://" +
        kHost + ":" + std::to_string(h2_port_) + path + " 2>&1");
  }
  // What the hostile origin received (every request as it came, `----` after each).
  std::string hostile_received(bool tls = true) const {
    return read_file(folder_ + (tls ? "/hostile" : "/hostile-plain") + "/requests.txt");
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
  // An origin of the test's: its port (reserved at set-up), its command ({port} stands for the
  // port), and the server once started.
  struct Origin {
    std::uint16_t port = 0;
    std::string command;
    std::unique_ptr<ChildServer> server;
  };
  std::map<std::string, Origin> origins_;
  bool log_arguments_ = false;  // the next gate()'s log_mcp_arguments
  std::uint16_t h2_port_ = 0;   // tests/support/mcp_h2_origin.mjs, an origin that speaks only h2
};

// A JSON-RPC call of `tool` with id `id`, for curl's -d.
std::string call_body(int id, const std::string& tool) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":{}}})";
}

TEST_F(McpGateTest, JsonAnswersAreJudgedFilteredAndSplit) {
  expect_judged_session("json", json_port());
}

TEST_F(McpGateTest, EventStreamAnswersAreJudgedFilteredAndSplit) {
  expect_judged_session("sse", sse_port());
}

TEST_F(McpGateTest, ReportOnlyLogsWouldDenyAndLetsTheCallThrough) {
  auto proxy = gate(/*report_only=*/true);
  const auto got = client(*proxy, json_port(), "call", "delete_repo");
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_TRUE(contains(got.output, R"({"isError":false,"text":"delete_repo ran with x"})"))
      << got.output;
  EXPECT_EQ(ran("json"), "delete_repo\n");
  ASSERT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {R"("verdict":"would-deny")", R"("call":"tool delete_repo")"})
                .empty();
  })) << proxy->log_text();
}

// The decision line names the tool only (expect_judged_session shows no argument is logged),
// unless log_mcp_arguments asks: then it carries the arguments as sent, refused calls' too.
TEST_F(McpGateTest, ArgumentsAreLoggedOnlyWhenAsked) {
  log_arguments_ = true;
  auto proxy = gate();
  client(*proxy, json_port(), "call", "search");
  client(*proxy, json_port(), "call", "delete_repo");
  ASSERT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log_lines_with(log, {R"("call":"tool search")", R"("arguments":"{\"q\":\"x\"}")"})
                   .size() == 1 &&
           log_lines_with(log, {R"("call":"tool delete_repo")", R"("verdict":"deny")",
                                R"("arguments":"{\"q\":\"x\"}")"})
                   .size() == 1;
  })) << proxy->log_text();
}

TEST_F(McpGateTest, ABodyOverOneMebibyteIsRefused413AndNeverSent) {
  auto proxy = gate();
  const auto got = client(*proxy, json_port(), "large");
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
                           [&] { return client(*proxy, json_port(), "call", "create_issue"); });
  const std::string where = std::string(kHost) + ":" + std::to_string(json_port());
  bool asked = false;
  for (int i = 0; i < 1500 && !asked; ++i) {
    asked =
        contains(ask::render_pending_text(proxy->gate().questions()), where + " tool create_issue");
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(asked) << ask::render_pending_text(proxy->gate().questions()) << proxy->log_text();
  EXPECT_EQ(read_file(folder_ + "/json/ran.txt"), "");  // held until answered
  const std::string answer =
      admin_decide(*proxy, "host=" + std::string(kHost) + "&port=" + std::to_string(json_port()) +
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
      url(both_port()) + " 2>&1 | tail -c 400");
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
        std::to_string(plain_port()) + "/mcp 2>&1");
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
        "' -o /dev/null -w '%{http_code}\n' http://" + kHost + ":" + std::to_string(plain_port()) +
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

// A host with MCP lines is offered h2 like any other: curl --http2, to an origin that speaks h2
// as well, speaks h2 end to end, and its calls are judged there as on HTTP/1.1.
TEST_F(McpGateTest, CurlOverHttp2ToAnMcpHostSpeaksHttp2AndIsJudged) {
  auto proxy = gate();
  const auto post = [&](const std::string& tool) {
    return run_shell(
        "curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
        " --cacert " + folder_ + "/gate-ca/ca.pem" +
        " -H 'content-type: application/json' -H 'accept: application/json, text/event-stream'" +
        R"( -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")" + tool +
        R"(","arguments":{}}}')" + " -w '\\n%{http_version} %{http_code}\\n' " + url(both_port()) +
        " 2>&1");
  };
  const auto refused = post("delete_repo");
  EXPECT_TRUE(contains(refused.output, "\n2 200\n")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "agents never delete")) << refused.output;
  EXPECT_TRUE(contains(refused.output, R"("isError":true)")) << refused.output;
  const auto allowed = post("search");
  EXPECT_TRUE(contains(allowed.output, "origin ran it over HTTP/2.0")) << allowed.output;
  EXPECT_TRUE(contains(allowed.output, "\n2 200\n")) << allowed.output;
  EXPECT_FALSE(contains(bodies("both"), "delete_repo")) << bodies("both");
}

// MCP over HTTP/2 end to end: curl --http2 through the gate to an origin that speaks only h2
// (tests/support/mcp_h2_origin.mjs, on Node's http2), answering in JSON (/mcp) and in events
// (/sse). Every stream runs the same MCP stage as an HTTP/1.1 request: an allowed call reaches
// the server and its answer comes back; a refused one is answered by the gate with the rule's
// message and never reaches it; tools/list is filtered, in both transports; a batch is split; a
// body over 1 MiB (sent by Node's http2) is refused 413 and never sent; the decision lines name
// the calls.
TEST_F(McpGateTest, OverHttp2CallsAreJudgedAndAnswersFilteredInJsonAndEvents) {
  const auto origin = start_h2_origin();
  auto proxy = gate();
  const auto post = [&](const std::string& path, const std::string& data) {
    return curl_h2(*proxy, path, data);
  };
  const std::string list = R"('{"jsonrpc":"2.0","id":7,"method":"tools/list"}')";
  for (const std::string path : {"/mcp", "/sse"}) {
    const auto allowed = post(path, "'" + call_body(1, "search") + "'");
    EXPECT_TRUE(contains(allowed.output, "search ran over HTTP/2.0")) << path << allowed.output;
    EXPECT_TRUE(contains(allowed.output, "\n2 200\n")) << path << allowed.output;
    const auto refused = post(path, "'" + call_body(2, "delete_repo") + "'");
    EXPECT_TRUE(contains(refused.output, "\n2 200\n")) << path << refused.output;
    EXPECT_TRUE(contains(refused.output, R"("isError":true)")) << path << refused.output;
    EXPECT_TRUE(contains(refused.output, "agents never delete")) << path << refused.output;
    EXPECT_TRUE(contains(refused.output, "requests.txt")) << path << refused.output;
    const auto listed = post(path, list);
    EXPECT_TRUE(contains(listed.output, R"("name":"search")")) << path << listed.output;
    EXPECT_TRUE(contains(listed.output, R"("name":"read_file")")) << path << listed.output;
    EXPECT_FALSE(contains(listed.output, "delete_repo")) << path << listed.output;
    EXPECT_TRUE(contains(listed.output, "\n2 200\n")) << path << listed.output;
  }
  // A mixed batch: the refused call answered by the gate, the rest sent on without it.
  const auto batch =
      post("/mcp", "'[" + call_body(11, "search") + "," + call_body(12, "delete_repo") + "]'");
  EXPECT_TRUE(contains(batch.output, "search ran over HTTP/2.0")) << batch.output;
  EXPECT_TRUE(contains(batch.output, "agents never delete")) << batch.output;
  // Over the 1 MiB the gate reads to judge a body: 413, and nothing of it sent.
  std::ofstream(folder_ + "/large.json")
      << R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search",)"
      << R"("arguments":{"q":")" << std::string(1100 * 1024, 'x') << R"("}}})";
  // (Node's http2 as the client: the gate ends the stream with RST_STREAM NO_ERROR once it has
  // answered, RFC 9113 section 8.1, which curl 7.88 takes for an error when it still uploads.)
  const auto large =
      run_shell(std::string(SANDGATE_NODE " ") + kNodeH2Client + " " +
                std::to_string(proxy->port()) + " " + kHost + " " + std::to_string(h2_port_) + " " +
                folder_ + "/gate-ca/ca.pem POST:/mcp:@" + folder_ + "/large.json 2>&1");
  EXPECT_TRUE(contains(large.output, "alpn h2\n/mcp 413 ")) << large.output.substr(0, 2000);

  const std::string received = read_file(folder_ + "/h2/bodies.txt");
  EXPECT_FALSE(contains(received, "delete_repo")) << received;
  EXPECT_FALSE(contains(received, "xxxxxxxx")) << received.substr(0, 2000);
  EXPECT_TRUE(contains(received, R"("id":11)")) << received;
  ASSERT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log_lines_with(log, {R"("verdict":"deny")", R"("call":"tool delete_repo")"}).size() == 3;
  })) << proxy->log_text();
}

// Over HTTP/2 too, a masked secret the server echoes is cleaned from the answers the MCP filter
// reads, held whole (JSON) or event by event: the server gets the real value, the client only
// ever sees the sentinel it sent.
TEST_F(McpGateTest, OverHttp2AMaskedSecretEchoedInAFilteredAnswerIsCleaned) {
  const auto origin = start_h2_origin();
  auto proxy = gate(false, false, "", /*secret=*/true);
  const std::string sentinel = proxy->gate().secrets().all().at(0).sentinel;
  const std::string bearer = "-H 'Authorization: Bearer " + sentinel + "'";
  for (const std::string path : {"/mcp", "/sse"}) {
    const auto listed =
        curl_h2(*proxy, path, R"('{"jsonrpc":"2.0","id":7,"method":"tools/list"}')", bearer);
    EXPECT_TRUE(contains(listed.output, "the search tool for Bearer " + sentinel))
        << path << listed.output;
    EXPECT_FALSE(contains(listed.output, "delete_repo")) << path << listed.output;
    const auto called = curl_h2(*proxy, path, "'" + call_body(3, "search") + "'", bearer);
    EXPECT_TRUE(contains(called.output, "search ran over HTTP/2.0 for Bearer " + sentinel))
        << path << called.output;
    for (const auto* got : {&listed, &called}) {
      EXPECT_FALSE(contains(got->output, kRealToken)) << path << got->output;
      EXPECT_TRUE(contains(got->output, "\n2 200\n")) << path << got->output;
    }
  }
  EXPECT_TRUE(
      contains(read_file(folder_ + "/h2/authorizations.txt"), std::string("Bearer ") + kRealToken));
}

// The gate's answer to a refused call comes with the request's id, in the transport the client
// asked for: events when its Accept takes only those, or when the server answered this connection
// in events last and Accept takes them; JSON otherwise.
TEST_F(McpGateTest, ARefusalComesInTheTransportAskedWithTheRequestsId) {
  auto proxy = gate();
  const std::string refused =
      R"(-d '{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"delete_repo"}}')";
  const std::string as =
      " -H 'content-type: application/json' -w '\n%{content_type} %{http_code}\n' ";
  const std::string asked = "-i -H 'content-type: application/json' ";
  const auto events_only = curl(*proxy, hostile_plain_port(), "/mcp",
                                "-H 'accept: text/event-stream' " + asked + refused, false);
  EXPECT_TRUE(contains(events_only.output,
                       "event: message\ndata: "
                       R"({"jsonrpc":"2.0","id":"call-7","result":{"content":[{"type":"text",)"
                       R"("text":"sandgate refused this call: tool delete_repo)"))
      << events_only.output;
  EXPECT_TRUE(contains(events_only.output, "agents never delete")) << events_only.output;
  EXPECT_TRUE(contains(events_only.output, "Content-Type: text/event-stream\r\n"))
      << events_only.output;
  const auto json_only = curl(*proxy, hostile_plain_port(), "/mcp",
                              "-H 'accept: application/json' " + asked + refused, false);
  EXPECT_TRUE(contains(json_only.output, R"({"jsonrpc":"2.0","id":"call-7","result":)"))
      << json_only.output;
  EXPECT_TRUE(contains(json_only.output, "Content-Type: application/json\r\n")) << json_only.output;
  // One connection: the server answers in events, then the gate does too.
  const std::string both = "-H 'accept: application/json, text/event-stream'" + as;
  const std::string base =
      "http://" + std::string(kHost) + ":" + std::to_string(hostile_plain_port());
  const auto usual =
      run_shell("curl -sS --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
                " " + both + "-d '" + call_body(1, "search") + "' " + base +
                "/events --next --proxy http://127.0.0.1:" + std::to_string(proxy->port()) + " " +
                both + refused + " " + base + "/mcp 2>&1");
  EXPECT_TRUE(contains(usual.output, "ran /events")) << usual.output;
  EXPECT_TRUE(contains(usual.output, R"(data: {"jsonrpc":"2.0","id":"call-7","result")"))
      << usual.output;
  EXPECT_TRUE(usual.output.ends_with("\ntext/event-stream 200\n")) << usual.output;
  EXPECT_FALSE(contains(hostile_received(false), "delete_repo")) << hostile_received(false);
}

// After notifications/tools/list_changed (on the server's own GET stream, which the gate filters
// too) the SDK client fetches the list again: it holds the new tool a line allows and not the one
// a line denies, with JSON and with event-stream answers.
TEST_F(McpGateTest, TheListFetchedAgainAfterListChangedIsFiltered) {
  for (const std::uint16_t port : {json_port(), sse_port()}) {
    auto proxy = gate();
    const auto got = client(*proxy, port, "changed");
    ASSERT_EQ(got.exit_code, 0) << got.output;
    EXPECT_TRUE(contains(got.output, R"("before":["search","read_file"])")) << got.output;
    EXPECT_TRUE(contains(got.output, R"("error":null,"after":["search","read_file","read_notes"])"))
        << got.output;
  }
}

// A 202 (the server's answer to a POST of notifications only) carries nothing: when the gate
// refused a request of the same batch, its answer comes instead, with the request's id; a
// notification alone gets the 202 as it is; a hostile server's 202 body never reaches the client.
TEST_F(McpGateTest, A202IsEmptyOrCarriesTheGatesAnswers) {
  auto proxy = gate();
  const auto got = client(*proxy, json_port(), "accepted");
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_TRUE(contains(got.output, R"("mixed":{"status":200,"type":"application/json",)"
                                   R"("messages":[{"id":21,"isError":true,)"))
      << got.output;
  EXPECT_TRUE(contains(got.output, "agents never delete")) << got.output;
  EXPECT_TRUE(contains(got.output, R"("alone":{"status":202,"body":""})")) << got.output;
  EXPECT_FALSE(contains(bodies("json"), "delete_repo")) << bodies("json");
  EXPECT_TRUE(contains(bodies("json"), "notifications/roots/list_changed")) << bodies("json");

  const auto hostile = curl(*proxy, hostile_port(), "/accepted",
                            "-H 'content-type: application/json' -d "
                            R"('{"jsonrpc":"2.0","method":"notifications/initialized"}')");
  EXPECT_TRUE(hostile.output.ends_with("\n202\n")) << hostile.output;
  EXPECT_FALSE(contains(hostile.output, "delete_repo")) << hostile.output;
}

// A compressed answer to a judged request (the gate asked for none) is a 502 naming the coding,
// never passed unread.
TEST_F(McpGateTest, ACompressedAnswerToAJudgedRequestIs502) {
  auto proxy = gate();
  const auto got = curl(*proxy, hostile_port(), "/gzip",
                        "-H 'content-type: application/json' -d "
                        R"('{"jsonrpc":"2.0","id":4,"method":"tools/list"}')");
  EXPECT_TRUE(got.output.ends_with("\n502\n")) << got.output;
  EXPECT_TRUE(contains(got.output, "sent a compressed answer (gzip), though asked for none"))
      << got.output;
  EXPECT_TRUE(contains(hostile_received(), "Accept-Encoding: identity")) << hostile_received();
}

// A masked secret bound to the MCP host: the server gets the real value, and where it echoes it
// (in a tool's description in tools/list, which the gate filters, and in a tool's result) the
// client gets its sentinel, in JSON answers and in event streams; a trailer echoing it is dropped.
TEST_F(McpGateTest, AMaskedSecretEchoedInAFilteredAnswerIsCleaned) {
  for (const auto& [mode, port] : std::vector<std::pair<std::string, std::uint16_t>>{
           {"json", json_port()}, {"sse", sse_port()}}) {
    auto proxy = gate(false, false, "", /*secret=*/true);
    const std::string sentinel = proxy->gate().secrets().all().at(0).sentinel;
    ASSERT_EQ(sentinel.size(), std::string(kRealToken).size());
    const auto got = client(*proxy, port, "session", "", sentinel);
    ASSERT_EQ(got.exit_code, 0) << got.output;
    EXPECT_TRUE(contains(read_file(folder_ + "/" + mode + "/authorizations.txt"),
                         std::string("Bearer ") + kRealToken))
        << mode;
    EXPECT_FALSE(contains(got.output, kRealToken)) << mode << ": " << got.output;
    EXPECT_TRUE(contains(got.output, R"("tools":["search","read_file"])")) << got.output;
    EXPECT_TRUE(contains(got.output, "the search tool for Bearer " + sentinel)) << got.output;
    EXPECT_TRUE(contains(got.output, "search ran with secret-argument for Bearer " + sentinel))
        << got.output;
  }
  auto proxy = gate(false, false, "", /*secret=*/true);
  const std::string sentinel = proxy->gate().secrets().all().at(0).sentinel;
  const auto trailer = curl(*proxy, hostile_port(), "/trailer",
                            "-i -H 'Authorization: Bearer " + sentinel +
                                "' -H 'content-type: application/json' -d "
                                R"('{"jsonrpc":"2.0","id":4,"method":"tools/list"}')");
  EXPECT_TRUE(trailer.output.ends_with("\n200\n")) << trailer.output;
  EXPECT_TRUE(contains(hostile_received(), std::string("Bearer ") + kRealToken));
  EXPECT_FALSE(contains(trailer.output, kRealToken)) << trailer.output;
  EXPECT_FALSE(contains(trailer.output, "delete_repo")) << trailer.output;
}

std::string pending(TestProxy& proxy) { return ask::render_pending_text(proxy.gate().questions()); }

// Waits until a question about `tool` is pending; false after 15 s.
bool asked_about(TestProxy& proxy, const std::string& where, const std::string& tool) {
  for (int i = 0; i < 1500; ++i) {
    if (contains(pending(proxy), where + " tool " + tool)) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// The answers to a question about a tool, as for a request's: `session` is remembered while the
// gate runs, `always` writes an `mcp-tool` allow line that decides the next call, `never` a deny
// line; the list shows a tool a person may still allow, and hides one a person refused for good.
TEST_F(McpGateTest, QuestionsAnsweredSessionAlwaysAndNever) {
  auto proxy = gate(false, /*ask=*/true);
  const std::string where = std::string(kHost) + ":" + std::to_string(json_port());
  const auto answer = [&](const std::string& tool, const std::string& how) {
    const std::string decided =
        admin_decide(*proxy, "host=" + std::string(kHost) + "&port=" + std::to_string(json_port()) +
                                 "&request=tool+" + tool + "&answer=" + how + "&who=tester");
    EXPECT_TRUE(contains(decided, "HTTP/1.1 200")) << decided;
  };
  const auto asked_call = [&](const std::string& tool, const std::string& how) {
    auto called =
        std::async(std::launch::async, [&] { return client(*proxy, json_port(), "call", tool); });
    EXPECT_TRUE(asked_about(*proxy, where, tool)) << pending(*proxy) << proxy->log_text();
    answer(tool, how);
    return called.get();
  };

  // session: asked once, then remembered.
  const auto first = asked_call("create_issue", "session");
  EXPECT_TRUE(contains(first.output, R"({"isError":false,"text":"create_issue ran with x"})"))
      << first.output;
  const auto again = client(*proxy, json_port(), "call", "create_issue");
  EXPECT_TRUE(contains(again.output, R"({"isError":false,"text":"create_issue ran with x"})"))
      << again.output;
  EXPECT_EQ(ran("json"), "create_issue\ncreate_issue\n");

  // always: the line is written, and after the reload it decides.
  const auto always = asked_call("push_files", "always");
  EXPECT_TRUE(contains(always.output, R"("isError":false)")) << always.output;
  const std::string rules = read_file(folder_ + "/requests.txt");
  EXPECT_TRUE(contains(rules, std::string("allow ") + kHost + " mcp-tool push_files")) << rules;
  proxy->gate().reload();
  const auto by_line = client(*proxy, json_port(), "call", "push_files");
  EXPECT_TRUE(contains(by_line.output, R"("isError":false)")) << by_line.output;
  ASSERT_TRUE(proxy->wait_for_log([](const std::string& log) {
    for (const std::string& line :
         log_lines_with(log, {R"("verdict":"allow")", R"("call":"tool push_files")"})) {
      if (contains(line, "mcp-tool push_files") && !contains(line, "answered")) {
        return true;
      }
    }
    return false;
  })) << proxy->log_text();

  // never: refused with the person's answer, a deny line written, which then hides the tool.
  const auto never = asked_call("list_issues", "never");
  EXPECT_TRUE(contains(never.output, R"("isError":true)")) << never.output;
  EXPECT_TRUE(contains(never.output, "list_issues")) << never.output;
  EXPECT_TRUE(contains(read_file(folder_ + "/requests.txt"),
                       std::string("deny ") + kHost + " mcp-tool list_issues"));
  proxy->gate().reload();
  const auto listed = client(*proxy, json_port(), "session");
  EXPECT_TRUE(
      contains(listed.output, R"("tools":["search","read_file","push_files","create_issue"])"))
      << listed.output;
  EXPECT_FALSE(contains(ran("json"), "list_issues")) << ran("json");
}

// A hostile client: every way it might get a tools/call to the server past the judge is refused,
// and nothing of it reaches the server. Through plain HTTP (http_proxy) and, for the trailer, a
// raw request the client writes itself.
TEST_F(McpGateTest, AHostileClientCannotSmuggleACallPastTheJudge) {
  auto proxy = gate();
  const auto post = [&](const std::string& options) {
    return curl(*proxy, hostile_plain_port(), "/mcp", options, /*tls=*/false);
  };
  const std::string refused_call = "'" + call_body(1, "delete_repo") + "'";
  // A body on another method than POST: a lax server reads JSON-RPC from any.
  for (const std::string method : {"GET", "PUT", "DELETE", "PATCH"}) {
    const auto got =
        post("-X " + method + " -H 'content-type: application/json' -d " + refused_call);
    EXPECT_TRUE(got.output.ends_with("\n400\n")) << method << ": " << got.output;
    EXPECT_TRUE(contains(got.output, "the gate judges MCP calls in POST bodies only"))
        << got.output;
  }
  // A body in a content coding the server may decode into another body.
  const auto coded = run_shell("printf '%s' " + refused_call + " | gzip | curl -sS --max-time 20 " +
                               "--proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
                               " -H 'content-type: application/json' -H 'content-encoding: gzip'" +
                               " --data-binary @- -w '\\n%{http_code}\\n' http://" + kHost + ":" +
                               std::to_string(hostile_plain_port()) + "/mcp 2>&1");
  EXPECT_TRUE(coded.output.ends_with("\n400\n")) << coded.output;
  EXPECT_TRUE(contains(coded.output, "content coding (gzip)")) << coded.output;
  // An upgrade to WebSocket frames, which the stage never reads.
  const auto upgraded = post(
      "-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' "
      "-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='");
  EXPECT_TRUE(upgraded.output.ends_with("\n400\n")) << upgraded.output;
  EXPECT_TRUE(contains(upgraded.output, "upgrade the connection (websocket)")) << upgraded.output;
  // JSON read as the server would: a key twice (in any case: Go's encoding/json runs the last),
  // a member spelled in another case, a name with \u escapes (judged decoded), a batch over 100.
  for (const std::string& body :
       {std::string(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                    R"("params":{"name":"search","name":"delete_repo"}})"),
        std::string(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                    R"("params":{"name":"search","NAME":"delete_repo"}})"),
        std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{},)"
                    R"("param\u017f":{"name":"delete_repo"}})")}) {
    const auto got = post("-H 'content-type: application/json' -d '" + body + "'");
    EXPECT_TRUE(got.output.ends_with("\n400\n")) << body << ": " << got.output;
    EXPECT_TRUE(contains(got.output, "a key twice in one object")) << got.output;
  }
  const auto misspelled =
      post(R"(-H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,)"
           R"("Method":"tools/call","result":{},"params":{"name":"delete_repo"}}')");
  EXPECT_TRUE(misspelled.output.ends_with("\n400\n")) << misspelled.output;
  EXPECT_TRUE(contains(misspelled.output, "take for method")) << misspelled.output;
  // A chunked body is read whole and judged as any.
  const auto chunked = post("-H 'Transfer-Encoding: chunked' -d " + refused_call);
  EXPECT_TRUE(chunked.output.ends_with("\n200\n")) << chunked.output;
  EXPECT_TRUE(contains(chunked.output, "agents never delete")) << chunked.output;
  const auto escaped = post(R"(-H 'content-type: text/plain' -d '{"jsonrpc":"2.0","id":3,)"
                            R"("method":"tools/call","params":{"name":"\u0064elete_repo"}}')");
  EXPECT_TRUE(escaped.output.ends_with("\n200\n")) << escaped.output;
  EXPECT_TRUE(contains(escaped.output, R"("id":3)")) << escaped.output;
  EXPECT_TRUE(contains(escaped.output, R"("isError":true)")) << escaped.output;
  EXPECT_TRUE(contains(escaped.output, "agents never delete")) << escaped.output;
  std::string batch = "[";
  for (int i = 0; i < 101; ++i) {
    batch += (i == 0 ? "" : ",") + call_body(i, "search");
  }
  const auto big = post("-H 'content-type: application/json' -d '" + batch + "]'");
  EXPECT_TRUE(big.output.ends_with("\n400\n")) << big.output.substr(0, 400);

  // A chunked body's trailer is dropped: the head the server gets is the one the gate judged,
  // not one with a second Host (another virtual server on the same address).
  const std::string allowed = call_body(5, "search");
  char size[16];
  std::snprintf(size, sizeof size, "%zx", allowed.size());
  TestClient raw(proxy->port());
  raw.send("POST http://" + std::string(kHost) + ":" + std::to_string(hostile_plain_port()) +
           "/mcp HTTP/1.1\r\nHost: " + kHost + ":" + std::to_string(hostile_plain_port()) +
           "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + size +
           "\r\n" + allowed + "\r\n0\r\nHost: other.origin.test\r\nX-Smuggled: yes\r\n\r\n");
  const std::string answered = raw.read_until("ran /mcp");
  EXPECT_TRUE(contains(answered, "HTTP/1.1 200")) << answered;
  const std::string received = hostile_received(false);
  EXPECT_TRUE(contains(received, R"("name":"search")")) << received;
  EXPECT_FALSE(contains(received, "other.origin.test")) << received;
  EXPECT_FALSE(contains(received, "X-Smuggled")) << received;
  EXPECT_FALSE(contains(received, "delete_repo")) << received;
}

// A hostile server: an answer a client would read a list from, in any shape or type, is read and
// filtered, or refused 502 naming why; never passed unread.
TEST_F(McpGateTest, AHostileServerCannotShowAnUnfilteredListOrPassAnUnreadAnswer) {
  auto proxy = gate();
  const std::string json = "-H 'content-type: application/json' ";
  const std::string call = "-d '" + call_body(7, "search") + "'";
  const std::string list = R"(-d '{"jsonrpc":"2.0","id":8,"method":"tools/list"}')";
  // Events labelled text/plain (a lax client reads them anyway).
  const auto plain = curl(*proxy, hostile_port(), "/plain-events", json + call);
  EXPECT_TRUE(plain.output.ends_with("\n502\n")) << plain.output;
  EXPECT_TRUE(contains(plain.output, "application/json or text/event-stream only")) << plain.output;
  // A list sent as the answer to another request (a client waiting for id 99 takes it).
  const auto smuggled = curl(*proxy, hostile_port(), "/smuggled", json + call);
  EXPECT_TRUE(smuggled.output.ends_with("\n200\n")) << smuggled.output;
  EXPECT_TRUE(contains(smuggled.output, "search ran")) << smuggled.output;
  EXPECT_TRUE(contains(smuggled.output, R"("tools":[{"name":"search")")) << smuggled.output;
  // Two Content-Type fields, which a client may join and read as events.
  const auto two = curl(*proxy, hostile_port(), "/two-types", json + call);
  EXPECT_TRUE(two.output.ends_with("\n502\n")) << two.output;
  EXPECT_TRUE(contains(two.output, "two Content-Type fields")) << two.output;
  // A result spelled "Result" (read as result by clients that match names in any case).
  const auto misspelled = curl(*proxy, hostile_port(), "/misspelled", json + list);
  EXPECT_TRUE(misspelled.output.ends_with("\n502\n")) << misspelled.output;
  EXPECT_TRUE(contains(misspelled.output, "take for result")) << misspelled.output;
  // The server's GET stream in another type (the SDK's client reads any answer there as events).
  const auto stream = curl(*proxy, hostile_port(), "/stream", "-H 'accept: text/event-stream'");
  EXPECT_TRUE(stream.output.ends_with("\n502\n")) << stream.output;
  EXPECT_TRUE(contains(stream.output, "reads only an event stream")) << stream.output;
  for (const auto* got : {&plain, &smuggled, &two, &misspelled, &stream}) {
    EXPECT_FALSE(contains(got->output, "delete_repo")) << got->output;
  }
}

// A connection that spoke HTTP/2 before a reload gave its host MCP lines: its next stream's call
// is judged by the lines now in force (HTTP/2 streams run the same MCP stage as HTTP/1.1).
TEST_F(McpGateTest, AnHttp2ConnectionAReloadGaveMcpLinesHasItsCallsJudged) {
  std::ofstream(folder_ + "/requests.txt")
      << "allow " << kHost << " GET\nallow " << kHost << " POST\n";
  auto proxy = gate();
  const std::string base = "https://" + std::string(kHost) + ":" + std::to_string(both_port());
  auto curled = std::async(std::launch::async, [&] {
    return run_shell(
        "curl -sS --http2 --max-time 30 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
        " --cacert " + folder_ + "/gate-ca/ca.pem -w '\\n%{http_version} %{http_code}\\n' " + base +
        "/slow --next --http2 --proxy http://127.0.0.1:" + std::to_string(proxy->port()) +
        " --cacert " + folder_ + "/gate-ca/ca.pem -H 'content-type: application/json' -d '" +
        call_body(1, "delete_repo") + "' -w '\\n%{http_version} %{http_code}\\n' " + base +
        "/mcp 2>&1");
  });
  // The reload once the first request is on its way (it waits on /slow, on h2): an order of
  // events, not a time.
  ASSERT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("/slow") != std::string::npos;
  })) << proxy->log_text();
  write_rules("allow " + std::string(kHost) + " GET\nallow " + std::string(kHost) + " POST\n");
  proxy->gate().reload();
  const auto got = curled.get();
  EXPECT_TRUE(contains(got.output, "origin ran it over HTTP/2.0\"}]}}\n2 200\n")) << got.output;
  EXPECT_TRUE(contains(got.output, "\"isError\":true}}\n2 200\n")) << got.output;
  EXPECT_TRUE(contains(got.output, "agents never delete")) << got.output;
  EXPECT_FALSE(contains(bodies("both"), "delete_repo")) << bodies("both");
}

// The SDK's client confined by `sandgate run`: it has no proxy to go through, only its own fetch,
// whose connections run captures and whose TLS trusts the gate's CA (NODE_EXTRA_CA_CERTS, which
// run sets); the gate run started judges its calls by the same lines. Its folders are where the
// confined command can see them (tests/support/scratch_folder.hpp).
class McpRunTest : public McpGateTest {
 protected:
  void SetUp() override {
    McpGateTest::SetUp();
    visible_ = visible_scratch_base() + "/mcp-run-XXXXXX";
    ASSERT_NE(::mkdtemp(visible_.data()), nullptr);
    run_shell("mkdir -p " + visible_ + "/home " + visible_ + "/work");
    // The client and its MCP SDK, where the command sees them: a checkout under /tmp or /var/tmp
    // is not visible inside (run makes those private).
    ASSERT_EQ(run_shell(std::string("cp -a ") + kMcpDir + " " + visible_ + "/mcp").exit_code, 0);
    std::ofstream(visible_ + "/blocked.txt") << "blocked.test\n";
    dns_.set(kHost, {"127.0.0.1"});
  }
  void TearDown() override {
    run_shell("rm -rf " + visible_);
    McpGateTest::TearDown();
  }

  // `sandgate run -- node gate_client.mjs - URL - MODE [TOOL]` against the origin at `port`;
  // the command's output and run's.
  CommandResult run_client(std::uint16_t port, const std::string& mode,
                           const std::string& tool = "") const {
    return run_shell(
        "cd " + visible_ + "/work && env -i PATH=\"$PATH\" HOME=" + visible_ + "/home " +
        kSandgate + " run --block-loopback=false --dns-server " + dns_.endpoint() +
        " --blocklist " + visible_ + "/blocked.txt --threads 1 --drain-seconds 2" +
        " --request-rules " + folder_ + "/requests.txt --tls-ports " + std::to_string(port) +
        " --inspect-extra-ca " + folder_ + "/ca.pem --ca-dir " + visible_ + "/gate-ca" +
        " --log-format json --log-file " + visible_ + "/gate.log -- " SANDGATE_NODE " " + visible_ +
        "/mcp/gate_client.mjs - " + url(port) + " - " + mode + " " + tool + " 2>&1");
  }
  std::string run_log() const { return read_file(visible_ + "/gate.log"); }

  std::string visible_;
  fakes::FakeDnsServer dns_;
};

TEST_F(McpRunTest, InsideRunAllowedCallsWorkRefusedOnesGetTheRulesMessageAndListsAreFiltered) {
  for (const auto& [mode, port] : std::vector<std::pair<std::string, std::uint16_t>>{
           {"json", json_port()}, {"sse", sse_port()}}) {
    const auto got = run_client(port, "session");
    ASSERT_EQ(got.exit_code, 0) << got.output << run_log();
    const std::string& out = got.output;
    EXPECT_TRUE(contains(out, R"("tools":["search","read_file"])")) << out;
    EXPECT_TRUE(contains(out, R"("search":"search ran with secret-argument")")) << out;
    EXPECT_TRUE(contains(out, R"("refused":{"isError":true,"text":"sandgate refused this call: )"))
        << out;
    EXPECT_TRUE(contains(out, "agents never delete")) << out;
    EXPECT_TRUE(contains(out, R"({"id":12,"isError":true,)")) << out;
    EXPECT_TRUE(contains(out, R"({"id":13,"isError":false,"text":"read_file ran with 13"})"))
        << out;
    EXPECT_EQ(ran(mode), "search\nsearch\nread_file\n");
    EXPECT_FALSE(contains(bodies(mode), "delete_repo")) << bodies(mode);
    // The gate run started wrote the decision lines: the tool named, never its arguments.
    const std::string log = run_log();
    EXPECT_EQ(log_lines_with(log, {R"("verdict":"deny")", R"("call":"tool delete_repo")"}).size(),
              2u)
        << log;
    EXPECT_FALSE(contains(log, "secret-argument")) << log;
    run_shell("rm -f " + visible_ + "/gate.log");
  }
  // The list fetched again after notifications/tools/list_changed, inside run too.
  const auto changed = run_client(sse_port(), "changed");
  ASSERT_EQ(changed.exit_code, 0) << changed.output;
  EXPECT_TRUE(
      contains(changed.output, R"("error":null,"after":["search","read_file","read_notes"])"))
      << changed.output;
}

}  // namespace
}  // namespace sandgate::testing
