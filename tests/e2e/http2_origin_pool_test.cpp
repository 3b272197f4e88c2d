// The gate's origin connections kept between client connections, counted by the origin
// (tests/support/h2_pool_origin.py numbers its TLS connections): an idle HTTP/1.1 one is given
// only to a client whose ALPN offer it serves as a fresh one would (origin_pool.hpp), with real
// curl as the clients, offering h2 (--http2) or HTTP/1.1 only (--http1.1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
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

constexpr const char* kOrigin =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_pool_origin.py ";

class Http2OriginPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-origin-pool-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test", "DNS:other.test"}, "http2-origin-pool-ca");
    port_ = free_port();
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  // The origin, letting its clients choose among `alpn` ("h2,http/1.1" or "http/1.1"), and a
  // gate inspecting h2.test and other.test on its port.
  void start(const std::string& alpn) {
    origin_ = std::make_unique<ChildServer>(port_, std::string(kOrigin) + std::to_string(port_) +
                                                       " " + folder_ + "/server.pem " + folder_ +
                                                       "/server.key " + alpn);
    ASSERT_TRUE(port_accepts(port_)) << "the origin did not start";
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test", "other.test"};
    });
    for (const char* name : {"h2.test", "other.test"}) {
      proxy_->dns().set(name, {"127.0.0.1"});
    }
  }
  // One request with curl through the gate (`version`: --http2 or --http1.1): the body, then a
  // line with the HTTP version curl spoke and the status.
  std::string get(const std::string& version, const std::string& path,
                  const std::string& host = "h2.test") const {
    return run_shell("curl -sS " + version + " --max-time 20 --proxy http://127.0.0.1:" +
                     std::to_string(proxy_->port()) + " --cacert " + folder_ +
                     "/gate-ca/ca.pem -w '%{http_version} %{http_code}\\n' https://" + host + ":" +
                     std::to_string(port_) + path + " 2>&1")
        .output;
  }
  // The connections the origin accepted, one "N ALPN" line each.
  std::string connections() const {
    std::ifstream file(folder_ + "/" + std::to_string(port_) + ".connections");
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

// A client that offered HTTP/1.1 only leaves an idle HTTP/1.1 connection behind. A client that
// offers h2 is not given it (it would be answered in HTTP/1.1 by an origin that speaks h2, and a
// gRPC client, which offers only h2, would fail): it gets h2 over a connection of its own. The
// HTTP/1.1 connection stays kept for the next client that offers HTTP/1.1 only.
TEST_F(Http2OriginPoolTest, AClientOfferingH2IsNotGivenAnIdleConnectionOnWhichH2WasNotOffered) {
  start("h2,http/1.1");
  EXPECT_EQ(get("--http1.1", "/"), "http/1.1 connection 1\n1.1 200\n");
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 2\n2 200\n");
  EXPECT_EQ(get("--http1.1", "/"), "http/1.1 connection 1\n1.1 200\n");
  EXPECT_EQ(connections(), "1 http/1.1\n2 h2\n");
}

// An origin that declined h2 when the gate offered it: its idle HTTP/1.1 connection serves the
// next client that offers h2 as a fresh one would (HTTP/1.1 either way), and one that offers
// HTTP/1.1 only.
TEST_F(Http2OriginPoolTest, AConnectionOnWhichTheOriginDeclinedH2ServesEveryClient) {
  start("http/1.1");
  EXPECT_EQ(get("--http2", "/"), "http/1.1 connection 1\n1.1 200\n");
  EXPECT_EQ(get("--http2", "/"), "http/1.1 connection 1\n1.1 200\n");
  EXPECT_EQ(get("--http1.1", "/"), "http/1.1 connection 1\n1.1 200\n");
  EXPECT_EQ(connections(), "1 http/1.1\n");
}

}  // namespace
}  // namespace sandgate::testing
