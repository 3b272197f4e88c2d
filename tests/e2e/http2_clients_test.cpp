// HTTP/2 through inspection with more clients no one here wrote (http2_e2e_test.cpp has curl,
// nghttpd and gRPC): Node's own http2 module, as the agents' SDKs on Node speak it, and git,
// whose libcurl asks for HTTP/2, cloning from an HTTP/2-only origin (Debian's nghttpd serving a
// repository to git's "dumb" HTTP protocol: plain GETs of its files).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

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

class Http2ClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-clients-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test"}, "http2-clients-ca");
    run_shell("mkdir -p " + folder_ + "/htdocs");
    std::ofstream(folder_ + "/htdocs/ok.txt") << "allowed\n";
    std::ofstream(folder_ + "/htdocs/no.txt") << "must not be seen\n";
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, "nghttpd --echo-upload --htdocs=" + folder_ + "/htdocs " + std::to_string(port_) +
                   " " + folder_ + "/server.key " + folder_ + "/server.pem");
    ASSERT_TRUE(port_accepts(port_)) << "nghttpd did not start";
  }
  void TearDown() override {
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  std::unique_ptr<TestProxy> gate(const std::string& request_rules) {
    std::ofstream(folder_ + "/requests.txt") << request_rules;
    auto proxy = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the test origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test"};
      s.request_rules_path = folder_ + "/requests.txt";
    });
    proxy->dns().set("h2.test", {"127.0.0.1"});
    return proxy;
  }
  std::string origin() const { return "h2.test:" + std::to_string(port_); }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
};

// Node's http2 module, three streams of one session at once: the one no rule allows gets the
// gate's 403 on its own stream, the others their answers (an upload echoed back included).
TEST_F(Http2ClientsTest, NodesHttp2ClientGetsEachStreamJudgedOnOneSession) {
  auto proxy = gate("allow h2.test GET /ok.txt\nallow h2.test POST /echo\n");
  const auto got = run_shell(
      "node " SANDGATE_SOURCE_DIR "/tests/support/node_h2_client.mjs " +
      std::to_string(proxy->port()) + " h2.test " + std::to_string(port_) + " " + folder_ +
      "/gate-ca/ca.pem GET:/ok.txt GET:/no.txt POST:/echo:uploaded-by-node 2>&1");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("alpn h2\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("/ok.txt 200 allowed\\n\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("/no.txt 403 "), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("request-not-allowed"), std::string::npos) << got.output;
  EXPECT_EQ(got.output.find("must not be seen"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("/echo 200 uploaded-by-node"), std::string::npos) << got.output;
}

// git clone over HTTP/2: libcurl in git negotiates h2 through the gate, every GET of the
// repository is a stream judged by the request rules (git's first request, for
// `info/refs?service=git-upload-pack`, as a `git-fetch`; the dumb protocol's file GETs as GETs),
// and the clone is whole. A rule that
// leaves out the repository's objects makes the clone fail: the streams are judged one by one.
TEST_F(Http2ClientsTest, GitClonesOverHttp2AndEachOfItsRequestsIsJudged) {
  const std::string repository = folder_ + "/htdocs/repo.git";
  const auto made =
      run_shell("set -e; git init -q -b main " + folder_ + "/work && cd " + folder_ +
                "/work && echo 'over h2' > file.txt && git add file.txt && git -c user.name=t "
                "-c user.email=t@t commit -q -m one && git clone -q --bare . " +
                repository + " && git -C " + repository + " update-server-info 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const auto clone = [&](const TestProxy& proxy, const std::string& into) {
    // GIT_SSL_CAINFO, not http.sslCAInfo: a GIT_SSL_CAINFO in the environment wins over it.
    return run_shell("cd " + folder_ + " && GIT_SSL_CAINFO=" + folder_ +
                     "/gate-ca/ca.pem GIT_CURL_VERBOSE=1 git -c http.version=HTTP/2 " +
                     "-c http.proxy=http://127.0.0.1:" + std::to_string(proxy.port()) +
                     " clone -q https://" + origin() + "/repo.git " + into + " 2>&1");
  };
  {
    auto proxy = gate("allow h2.test git-fetch /repo\nallow h2.test GET /repo.git/**\n");
    const auto cloned = clone(*proxy, "whole");
    ASSERT_EQ(cloned.exit_code, 0) << cloned.output;
    EXPECT_NE(cloned.output.find("ALPN: server accepted h2"), std::string::npos) << cloned.output;
    std::ifstream file(folder_ + "/whole/file.txt");
    std::string text;
    std::getline(file, text);
    EXPECT_EQ(text, "over h2");
    EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
      return log.find("/repo.git/info/refs") != std::string::npos &&
             log.find("/repo.git/objects/") != std::string::npos;
    })) << proxy->log_text();
  }
  {
    auto proxy = gate(
        "allow h2.test git-fetch /repo\nallow h2.test GET /repo.git/info/**\n"
        "allow h2.test GET /repo.git/HEAD\n");
    const auto refused = clone(*proxy, "partial");
    EXPECT_NE(refused.exit_code, 0) << refused.output;
    EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
      return log.find("request-not-allowed") != std::string::npos &&
             log.find("/repo.git/objects/") != std::string::npos;
    })) << proxy->log_text();
  }
}

}  // namespace
}  // namespace sandgate::testing
