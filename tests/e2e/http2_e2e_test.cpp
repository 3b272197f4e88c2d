// HTTP/2 on inspected hosts (proxy/session/fronts/inspected_h2.hpp), with clients and origins no
// one here wrote: curl (--http2) and Debian's nghttpd (an HTTP/2-only TLS origin), and a gRPC
// client and server on python3-grpcio. Each stream is judged by the request rules, filled with
// masked secrets and cleaned of their values as an HTTP/1.1 request is; a refused stream gets
// the gate's answer (a gRPC status for gRPC) while the connection's other streams go on, and a
// stream waiting on a person's answer holds none of them.
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

namespace sandgate::testing {
namespace {

constexpr const char* kToken = "ghp_RealTokenRealTokenRealToken0123456789";
constexpr const char* kPython = "/usr/bin/python3 ";

class Http2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test", "DNS:grpc.test"}, "http2-origin-ca");
    std::ofstream(folder_ + "/token") << kToken << "\n";
    run_shell("mkdir -p " + folder_ + "/htdocs");
    std::ofstream(folder_ + "/htdocs/hello.txt") << "hello over h2\n";
    std::ofstream(folder_ + "/htdocs/ok.txt") << "allowed\n";
    std::ofstream(folder_ + "/htdocs/no.txt") << "must not be seen\n";
    std::ofstream(folder_ + "/htdocs/echo.txt") << "the origin says " << kToken << " back\n";
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, "nghttpd --echo-upload --htdocs=" + folder_ + "/htdocs " + std::to_string(port_) +
                   " " + folder_ + "/server.key " + folder_ + "/server.pem");
    ASSERT_TRUE(port_accepts(port_)) << "nghttpd did not start";
    grpc_port_ = free_port();
    grpc_ = std::make_unique<ChildServer>(
        grpc_port_, std::string(kPython) +
                        SANDGATE_SOURCE_DIR "/tests/support/grpc_peer.py serve " +
                        std::to_string(grpc_port_) + " " + folder_ + "/server.pem " + folder_ +
                        "/server.key " + kToken);
    ASSERT_TRUE(port_accepts(grpc_port_)) << "the gRPC server did not start";
  }
  void TearDown() override {
    origin_.reset();
    grpc_.reset();
    run_shell("rm -rf " + folder_);
  }

  // A gate that inspects both hosts, with API_TOKEN bound to h2.test, and `request_rules` (a
  // request-rules file's text) when not empty; when `ask`, under --unknown=ask with the hosts
  // allowed by the allowlist (a request no line decides is asked about).
  std::unique_ptr<TestProxy> gate(const std::string& request_rules = "", bool ask = false) {
    if (!request_rules.empty()) {
      std::ofstream(folder_ + "/requests.txt") << request_rules;
    }
    auto proxy = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the test origins are on loopback
      s.tls_ports = {port_, grpc_port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test", "grpc.test"};
      s.secrets.push_back(
          *secrets::parse_secret_spec("API_TOKEN=h2.test,grpc.test=@" + folder_ + "/token"));
      if (!request_rules.empty()) {
        s.request_rules_path = folder_ + "/requests.txt";
      }
      if (ask) {
        std::ofstream(folder_ + "/allow.txt") << "h2.test\ngrpc.test\n";
        s.allowlist_path = folder_ + "/allow.txt";
        s.policy.unknown = rules::UnknownMode::ask;
        s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
        s.ask_timeout = std::chrono::seconds(30);
      }
    });
    for (const char* name : {"h2.test", "grpc.test"}) {
      proxy->dns().set(name, {"127.0.0.1"});
    }
    return proxy;
  }
  CommandResult curl(const TestProxy& proxy, const std::string& args) const {
    return run_shell(
        "curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" + std::to_string(proxy.port()) +
        " --cacert " + folder_ + "/gate-ca/ca.pem " + args + " 2>&1");
  }
  std::string url(const std::string& path) const {
    return "https://h2.test:" + std::to_string(port_) + path;
  }
  CommandResult grpc_call(const TestProxy& proxy, const std::string& method,
                          const std::string& text, const std::string& bearer = "") const {
    return run_shell(
        std::string(kPython) + SANDGATE_SOURCE_DIR "/tests/support/grpc_peer.py call " +
        std::to_string(proxy.port()) + " grpc.test " + std::to_string(grpc_port_) + " " + folder_ +
        "/gate-ca/ca.pem " + method + " '" + text + "' " + bearer + " 2>&1");
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::uint16_t grpc_port_ = 0;
  std::unique_ptr<ChildServer> grpc_;
};

TEST_F(Http2Test, CurlSpeaksHttp2ThroughInspectionAndEachStreamIsLogged) {
  auto proxy = gate();
  const auto got = curl(*proxy, "-w '\\n%{http_version} %{http_code}\\n' " + url("/hello.txt"));
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("hello over h2\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("\n2 200\n"), std::string::npos) << got.output;
  // The stream's decision line names its path; its end line counts its bytes.
  proxy->wait_for_log([](const std::string& log) {
    return log.find("/hello.txt") != std::string::npos &&
           log.find("\"event\":\"end\"") != std::string::npos;
  });
}

TEST_F(Http2Test, ARefusedStreamIsAnsweredAloneAndTheOthersGoOn) {
  auto proxy = gate("allow h2.test GET /ok.txt\nallow h2.test GET /hello.txt\n");
  // Three requests on one HTTP/2 connection, at once (-Z): the middle one is refused.
  const auto got = curl(*proxy, "-Z -w '%{url} %{http_version} %{http_code}\\n' " + url("/ok.txt") +
                                    " " + url("/no.txt") + " " + url("/hello.txt"));
  EXPECT_NE(got.output.find("/ok.txt 2 200"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("/hello.txt 2 200"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("/no.txt 2 403"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("refused (request-not-allowed)"), std::string::npos) << got.output;
  EXPECT_EQ(got.output.find("must not be seen"), std::string::npos) << got.output;
  // The refusal carries Proxy-Status, as on HTTP/1.1.
  const auto head = curl(*proxy, "-D - -o /dev/null " + url("/no.txt"));
  EXPECT_NE(head.output.find("proxy-status: sandgate; error="), std::string::npos) << head.output;
}

TEST_F(Http2Test, AMaskedSecretIsFilledInAndItsEchoCleaned) {
  auto proxy = gate();
  // The origin echoes the upload: the sentinel the client sent comes back as it was, and the
  // real value the origin holds in a file reaches the client as something else.
  const std::string sentinel = proxy->gate().secrets().all().at(0).sentinel;
  const auto echoed = curl(*proxy, "--data-binary 'token=" + sentinel + "' " + url("/echo-upload"));
  EXPECT_NE(echoed.output.find(sentinel), std::string::npos) << echoed.output;
  EXPECT_EQ(echoed.output.find(kToken), std::string::npos) << echoed.output;
  const auto file = curl(*proxy, url("/echo.txt"));
  EXPECT_EQ(file.output.find(kToken), std::string::npos) << file.output;
  EXPECT_NE(file.output.find("the origin says "), std::string::npos) << file.output;
}

TEST_F(Http2Test, GrpcCallsStreamAndARefusedCallGetsPermissionDenied) {
  auto proxy = gate(
      "allow grpc.test POST /test.Echo/Say\nallow grpc.test POST /test.Echo/Count\n"
      "deny grpc.test POST /test.Echo/Delete  #! agents never delete\n");
  const auto said = grpc_call(*proxy, "Say", "hi");
  EXPECT_NE(said.output.find("ok said: hi"), std::string::npos) << said.output;
  const auto counted = grpc_call(*proxy, "Count", "3");
  EXPECT_NE(counted.output.find("ok part 0|part 1|part 2"), std::string::npos) << counted.output;
  const auto deleted = grpc_call(*proxy, "Delete", "all");
  EXPECT_NE(deleted.output.find("error PERMISSION_DENIED"), std::string::npos) << deleted.output;
  EXPECT_NE(deleted.output.find("request-denied"), std::string::npos) << deleted.output;
  EXPECT_NE(deleted.output.find("agents never delete"), std::string::npos) << deleted.output;
  EXPECT_EQ(deleted.output.find("deleted"), std::string::npos) << deleted.output;
}

TEST_F(Http2Test, AGrpcCallsMaskedKeyReachesTheServerReal) {
  auto proxy = gate();
  const std::string sentinel = proxy->gate().secrets().all().at(0).sentinel;
  const auto masked = grpc_call(*proxy, "Whoami", "", sentinel);
  EXPECT_NE(masked.output.find("ok real token"), std::string::npos) << masked.output;
  // Without the sentinel, nothing is filled in.
  const auto plain = grpc_call(*proxy, "Whoami", "", "not-the-sentinel");
  EXPECT_NE(plain.output.find("ok another token"), std::string::npos) << plain.output;
}

// curl's parallel transfers share one HTTP/2 connection: the stream a person is asked about
// waits, and the other is decided, answered and ended meanwhile.
TEST_F(Http2Test, AStreamWaitingOnAQuestionHoldsNoOtherStreamOfCurls) {
  auto proxy = gate("allow h2.test GET /hello.txt\n", /*ask=*/true);
  auto transfers = std::async(std::launch::async, [&] {
    return curl(*proxy,
                "-Z -w '%{url} %{http_version} %{http_code}\\n' -o /dev/null -o /dev/null " +
                    url("/ok.txt") + " " + url("/hello.txt"));
  });
  const std::string question = "h2.test:" + std::to_string(port_) + " GET /ok.txt  1 waiting";
  bool asked = false;
  for (int i = 0; i < 1000 && !asked; ++i) {
    asked = ask::render_pending_text(proxy->gate().questions()).find(question) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(asked) << ask::render_pending_text(proxy->gate().questions());
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "\"path\":\"/hello.txt\""}).empty();
  })) << proxy->log_text();
  EXPECT_NE(ask::render_pending_text(proxy->gate().questions()).find(question), std::string::npos);
  // One connection carries both.
  EXPECT_EQ(log_lines_with(proxy->log_text(), {"\"method\":\"CONNECT\""}).size(), 1u)
      << proxy->log_text();

  const std::string& address = proxy->gate().admin_address();
  TestClient admin(static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1))));
  const std::string body =
      "host=h2.test&port=" + std::to_string(port_) + "&answer=once&request=GET+%2Fok.txt";
  admin.send(
      "POST /decide HTTP/1.1\r\nHost: admin\r\nContent-Type: "
      "application/x-www-form-urlencoded\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_NE(admin.read_to_end().find("HTTP/1.1 200"), std::string::npos);
  const auto got = transfers.get();
  EXPECT_NE(got.output.find("/ok.txt 2 200"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("/hello.txt 2 200"), std::string::npos) << got.output;
}

}  // namespace
}  // namespace sandgate::testing
