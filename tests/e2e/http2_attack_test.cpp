// HTTP/2 on inspected hosts against a hostile peer (tests/support/h2_hostile_peer.py, on
// python3-h2): frames curl, nghttp and grpcio never send. A secret's real value never reaches
// the client, whatever part of a response carries it; a sentinel goes nowhere its head would not.
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

constexpr const char* kToken = "ghp_RealTokenRealTokenRealToken0123456789";
constexpr const char* kPeer =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_hostile_peer.py ";

class Http2AttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-attack-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:bound.test", "DNS:free.test"}, "http2-attack-ca");
    std::ofstream(folder_ + "/token") << kToken << "\n";
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, std::string(kPeer) + "serve " + std::to_string(port_) + " " + folder_ +
                   "/server.pem " + folder_ + "/server.key " + kToken);
    ASSERT_TRUE(port_accepts(port_)) << "the origin did not start";
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"bound.test", "free.test"};
      s.secrets.push_back(
          *secrets::parse_secret_spec("API_TOKEN=bound.test=@" + folder_ + "/token"));
    });
    for (const char* name : {"bound.test", "free.test"}) {
      proxy_->dns().set(name, {"127.0.0.1"});
    }
    sentinel_ = proxy_->gate().secrets().all().at(0).sentinel;
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  // One POST through the gate; `fields` are the peer's NAME=VALUE arguments.
  std::string send(const std::string& host, const std::string& path,
                   const std::string& fields = "") const {
    return run_shell(std::string(kPeer) + "client " + std::to_string(proxy_->port()) + " " + host +
                     " " + std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem " + path + " " +
                     fields + " 2>&1")
        .output;
  }

  // N streams to each of `paths` on one connection, left mid-flight (h2_hostile_peer.py storm).
  std::string storm(const std::string& host, int n, const std::string& paths) const {
    return run_shell(std::string(kPeer) + "storm " + std::to_string(proxy_->port()) + " " + host +
                     " " + std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem " +
                     std::to_string(n) + " " + paths + " 2>&1")
        .output;
  }
  // Whether the log has come to `n` end lines for `path`.
  bool ends_logged(const std::string& path, int n) const {
    return proxy_->wait_for_log([&](const std::string& log) {
      int found = 0;
      std::size_t at = 0;
      while ((at = log.find('\n', at)) != std::string::npos) {
        const std::size_t next = log.find('\n', at + 1);
        const std::string line = log.substr(at, next == std::string::npos ? next : next - at);
        found += line.find("\"event\":\"end\"") != std::string::npos &&
                 line.find("\"path\":\"" + path + "\"") != std::string::npos;
        at = next == std::string::npos ? next : at + 1;
        if (at == std::string::npos) {
          break;
        }
      }
      return found >= n;
    });
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
  std::string sentinel_;
};

TEST_F(Http2AttackTest, TheOriginsInterimHeadsAreCleanedOfTheSecret) {
  const std::string got =
      send("bound.test", "/interim", "authorization='Bearer " + sentinel_ + "'");
  EXPECT_NE(got.find("alpn h2"), std::string::npos) << got;
  EXPECT_NE(got.find("head :status: 103"), std::string::npos) << got;
  EXPECT_NE(got.find("body done"), std::string::npos) << got;
  EXPECT_EQ(got.find(kToken), std::string::npos) << got;
}

TEST_F(Http2AttackTest, ACompressedResponseHiddenBehindAnIdentityFieldIsRefused) {
  // Two content-encoding fields, "identity" first: the body is gzip all the same.
  const std::string got =
      send("bound.test", "/two-codings", "authorization='Bearer " + sentinel_ + "'");
  EXPECT_EQ(got.find(kToken), std::string::npos) << got;
  EXPECT_NE(got.find("head :status: 502"), std::string::npos) << got;
  EXPECT_NE(got.find("compressed response (gzip)"), std::string::npos) << got;
}

TEST_F(Http2AttackTest, ASentinelInTheRequestsTrailersGoesNowhereItsHeadWouldNot) {
  // In a head, the sentinel is refused for a host it is not bound to; in trailers likewise.
  const std::string head = send("free.test", "/record", "x-api-key=" + sentinel_);
  EXPECT_NE(head.find("head :status: 403"), std::string::npos) << head;
  const std::string trailers = send("free.test", "/record", "--trailer x-api-key=" + sentinel_);
  EXPECT_EQ(trailers.find("x-api-key: "), std::string::npos) << trailers;
  // The origin has the head already: the stream is answered by the gate, the origin's reset.
  EXPECT_NE(trailers.find("secret-refused: in the request's trailers"), std::string::npos)
      << trailers;
  EXPECT_EQ(trailers.find(sentinel_), std::string::npos) << trailers;
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return log.find("\"outcome\":\"refused\"") != std::string::npos &&
           log.find("in the request's trailers") != std::string::npos;
  }));
  // For the host it is bound to, the trailers get the real value, as a head would.
  const std::string filled = send("bound.test", "/record", "--trailer x-api-key=" + sentinel_);
  EXPECT_NE(filled.find("the last field holds the real token"), std::string::npos) << filled;
}

TEST_F(Http2AttackTest, StreamsMidFlightWhenTheClientVanishesEachEndWithALine) {
  const std::string got = storm("bound.test", 20, "/slow");
  EXPECT_NE(got.find("heads 20 resets 0"), std::string::npos) << got;
  EXPECT_TRUE(ends_logged("/slow", 20)) << proxy_->log_text();
  // The gate goes on serving.
  EXPECT_NE(send("bound.test", "/record").find("head :status: 200"), std::string::npos);
}

TEST_F(Http2AttackTest, TheOriginVanishingMidStreamsEndsEachStreamWithALine) {
  const std::string got = storm("bound.test", 10, "/slow /die");
  EXPECT_NE(got.find("heads "), std::string::npos) << got;
  EXPECT_TRUE(ends_logged("/slow", 10)) << proxy_->log_text();
  EXPECT_TRUE(ends_logged("/die", 10)) << proxy_->log_text();
  EXPECT_NE(send("bound.test", "/record").find("head :status: 200"), std::string::npos);
}

TEST_F(Http2AttackTest, StreamsResetWithTheOriginsBodyQueuedGiveItsWindowBack) {
  // Eight downloads abandoned, each with what the gate took of the origin's body still queued
  // (the client opened no window for it): the origin connection's window must come back, or the
  // next stream on the connection waits for a body that cannot flow.
  const std::string got =
      run_shell(std::string(kPeer) + "abandon " + std::to_string(proxy_->port()) + " bound.test " +
                std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem 8 2>&1")
          .output;
  EXPECT_NE(got.find("record 200 "), std::string::npos) << got;
}

TEST_F(Http2AttackTest, HttpTwoSpokenWhereAlpnChoseOtherwiseReachesNoOrigin) {
  for (const char* alpn : {"http/1.1", "none"}) {
    const std::string got =
        run_shell(std::string(kPeer) + "preface " + std::to_string(proxy_->port()) +
                  " bound.test " + std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem " +
                  alpn + " 2>&1")
            .output;
    EXPECT_EQ(got.find("alpn h2"), std::string::npos) << got;
    EXPECT_NE(got.find("HTTP/1.1 400"), std::string::npos) << got;
    EXPECT_EQ(got.find(":path: /record"), std::string::npos) << got;
  }
}

TEST_F(Http2AttackTest, RapidResetEndsTheConnectionAndTheGateGoesOn) {
  const std::string got =
      run_shell(std::string(kPeer) + "rapid " + std::to_string(proxy_->port()) + " bound.test " +
                std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem 2000 2>&1")
          .output;
  EXPECT_NE(got.find("goaway 11"), std::string::npos) << got;  // ENHANCE_YOUR_CALM
  EXPECT_NE(send("bound.test", "/record").find("head :status: 200"), std::string::npos);
}

TEST_F(Http2AttackTest, UploadsResetWhileTheOriginReadsNothingGiveTheirOriginStreamsBack) {
  // free.test's origin takes two streams at a time and reads nothing of /sink's body: three
  // uploads the client gave up on must not keep the origin's streams, or the next request on
  // the connection waits for one forever.
  const std::string got =
      run_shell(std::string(kPeer) + "abandon " + std::to_string(proxy_->port()) + " free.test " +
                std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem 3 /sink 2>&1")
          .output;
  EXPECT_NE(got.find("record 200 "), std::string::npos) << got;
}

TEST_F(Http2AttackTest, TheGateStopsWithStreamsMidFlight) {
  // Twenty streams with their responses begun and a client that keeps them open: the gate's
  // drain ends them (under ASan: nothing of a stream is touched once it is gone).
  run_shell(std::string(kPeer) + "hold " + std::to_string(proxy_->port()) + " bound.test " +
            std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem 20 /slow > " + folder_ +
            "/held 2>&1 &");
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    std::size_t decided = 0;
    for (std::size_t at = log.find("\"/slow\""); at != std::string::npos;
         at = log.find("\"/slow\"", at + 1)) {
      ++decided;
    }
    return decided >= 20;
  })) << proxy_->log_text();
  proxy_->stop();
  EXPECT_TRUE(ends_logged("/slow", 20)) << proxy_->log_text();
}

TEST_F(Http2AttackTest, AHeaderListOverTheLimitIsAnsweredAndNeverSent) {
  // 80 KiB of fields, past the 64 KiB the gate reads: 431, and the origin sees nothing of it.
  std::string fields;
  for (int i = 0; i < 10; ++i) {
    fields += "x-big-" + std::to_string(i) + "=" + std::string(8 * 1024, 'b') + " ";
  }
  const std::string got = send("bound.test", "/record", fields);
  EXPECT_NE(got.find("head :status: 431"), std::string::npos) << got.substr(0, 2000);
  EXPECT_EQ(got.find("x-big-0: "), std::string::npos) << got.substr(0, 2000);
  EXPECT_NE(send("bound.test", "/record").find("head :status: 200"), std::string::npos);
}

}  // namespace
}  // namespace sandgate::testing
