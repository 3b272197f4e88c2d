// A hostile review of HTTP/2 on inspected hosts, against the gate itself: what a confined
// client's tools (tests/support/h2_review_peer.py, frame by frame on python3-h2; curl --http2)
// can make of concurrent streams, stream state and frame floods, with Node's http2 module as the
// origin (tests/support/node_h2_origin.mjs). Each test failed on the code before its fix.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

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

using namespace std::chrono_literals;

constexpr const char* kPeer =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_review_peer.py ";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// How the gate of a test is set up, beyond inspecting h2.test.
struct GateOptions {
  std::string budgets;  // a budgets file's text, when not empty
  bool ask = false;     // --unknown=ask, h2.test allowed by the allowlist
};

class Http2ReviewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-review-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test"}, "http2-review-ca");
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, "node " SANDGATE_SOURCE_DIR "/tests/support/node_h2_origin.mjs " +
                   std::to_string(port_) + " " + folder_ + "/server.pem " + folder_ +
                   "/server.key unused-key");
    ASSERT_TRUE(port_accepts(port_)) << "the Node origin did not start";
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  TestProxy& gate(const GateOptions& options = {}) {
    if (!options.budgets.empty()) {
      std::ofstream(folder_ + "/budgets.txt") << options.budgets;
    }
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test"};
      if (!options.budgets.empty()) {
        s.budgets_path = folder_ + "/budgets.txt";
      }
      if (options.ask) {
        std::ofstream(folder_ + "/allow.txt") << "h2.test\n";
        s.allowlist_path = folder_ + "/allow.txt";
        s.policy.unknown = rules::UnknownMode::ask;
        s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
        s.ask_timeout = std::chrono::seconds(30);
      }
    });
    proxy_->dns().set("h2.test", {"127.0.0.1"});
    return *proxy_;
  }

  // The review peer's MODE through the gate to h2.test, with its further arguments.
  std::string peer(const std::string& mode, const std::string& args) const {
    return run_shell(std::string(kPeer) + mode + " " + std::to_string(proxy_->port()) +
                     " h2.test " + std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem " +
                     args + " 2>&1")
        .output;
  }
  // curl --http2 through the gate, trusting its CA; `args` end with the URL.
  CommandResult curl(const std::string& args) const {
    return run_shell("curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" +
                     std::to_string(proxy_->port()) + " --cacert " + folder_ + "/gate-ca/ca.pem " +
                     args + " 2>&1");
  }
  std::string url(const std::string& path) const {
    return "'https://h2.test:" + std::to_string(port_) + path + "'";
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

// --- frame floods ---

// Rapid reset without RST_STREAM: each stream's head passes (and costs the gate its admission
// and its lines), then DATA longer than its content-length makes the gate's HTTP/2 library reset
// it. Those resets count like the client's own: the connection ends with ENHANCE_YOUR_CALM.
TEST_F(Http2ReviewTest, StreamsMadeToBeResetByTheirContentLengthAreARapidReset) {
  gate();
  const std::string got = peer("mismatch", "2000");
  EXPECT_TRUE(contains(got, "goaway 11")) << got;  // ENHANCE_YOUR_CALM
  const auto after = curl("-i " + url("/bytes?n=5"));
  EXPECT_TRUE(contains(after.output, "HTTP/2 200")) << after.output;
}

}  // namespace
}  // namespace sandgate::testing
