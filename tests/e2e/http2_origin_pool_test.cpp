// The gate's origin connections kept between client connections, counted by the origin
// (tests/support/h2_pool_origin.py numbers its TLS connections): an idle HTTP/1.1 one is given
// only to a client whose ALPN offer it serves as a fresh one would (origin_pool.hpp); an HTTP/2
// one is shared by the inspected h2 clients of its host:port (h2_origin_pool.hpp), at once and
// in turn, never across hosts (and by HTTP/1.1 clients, whose requests go as its streams), left
// after the origin's GOAWAY (a stream it left out sent again
// once), retired by a reload, while a reload that revokes a client ends that client's streams
// only. The clients: real curl, offering h2 (--http2) or HTTP/1.1 only (--http1.1), and
// python3-h2 driven step by step (tests/support/h2_hostile_peer.py `staged`).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
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

constexpr const char* kOrigin =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_pool_origin.py ";
constexpr const char* kPeer =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_hostile_peer.py ";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

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
  // `streams`: the origin's SETTINGS_MAX_CONCURRENT_STREAMS (0: python3-h2's own 100).
  void start(const std::string& alpn, int streams = 0) {
    origin_ = std::make_unique<ChildServer>(
        port_, std::string(kOrigin) + std::to_string(port_) + " " + folder_ + "/server.pem " +
                   folder_ + "/server.key " + alpn + " " + std::to_string(streams));
    ASSERT_TRUE(port_accepts(port_)) << "the origin did not start";
    std::ofstream(folder_ + "/requests.txt") << "allow h2.test *\nallow other.test *\n";
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test", "other.test"};
      s.request_rules_path = folder_ + "/requests.txt";
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
  // The peer's `staged` steps on one HTTP/2 connection to `host` through the gate, run on another
  // thread; its output when it is done.
  std::future<std::string> staged(const std::string& host, const std::string& steps) const {
    const std::string command = std::string(kPeer) + "staged " + std::to_string(proxy_->port()) +
                                " " + host + " " + std::to_string(port_) + " " + folder_ +
                                "/gate-ca/ca.pem " + steps + " 2>&1";
    return std::async(std::launch::async, [command] { return run_shell(command).output; });
  }
  // Waits until the log has `lines` decision lines for `path` on `host`.
  bool decided(const std::string& host, const std::string& path, std::size_t lines = 1) const {
    return proxy_->wait_for_log([&](const std::string& log) {
      return log_lines_with(log, {"\"event\":\"decision\"", "\"host\":\"" + host + "\"",
                                  "\"path\":\"" + path + "\""})
                 .size() >= lines;
    });
  }
  // A reload that changes nothing the connections here are judged by (a comment in the request
  // rules), waited for.
  void reload() {
    const auto before = proxy_->log_text().size();
    std::ofstream(folder_ + "/requests.txt", std::ios::app) << "# changed\n";
    proxy_->gate().reload();
    ASSERT_TRUE(proxy_->wait_for_log([&](const std::string& text) {
      return text.size() > before && text.find("requests.txt", before) != std::string::npos;
    })) << proxy_->log_text();
  }
  void touch(const std::string& name) const { std::ofstream(folder_ + "/" + name) << "\n"; }

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

// An origin that speaks both: the gate offers it h2 whatever its client speaks, so an HTTP/1.1
// client's request goes as a stream of an HTTP/2 connection (fronts/http_over_h2.hpp), which the
// next clients share, HTTP/2 and HTTP/1.1 alike: one connection at the origin.
TEST_F(Http2OriginPoolTest, Http1AndH2ClientsShareOneH2ConnectionOfAnOriginThatSpeaksBoth) {
  start("h2,http/1.1");
  EXPECT_EQ(get("--http1.1", "/connection"), "h2 connection 1\n1.1 200\n");
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 1\n2 200\n");
  EXPECT_EQ(get("--http1.1", "/connection"), "h2 connection 1\n1.1 200\n");
  EXPECT_EQ(connections(), "1 h2\n");
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

// An inspected HTTP/1.1 connection whose origin connection closed takes, for its next request,
// an idle one the worker keeps for its origin instead of dialling (the one way to an upstream:
// session/upstream_source.hpp).
TEST_F(Http2OriginPoolTest, AnInspectedRequestAfterItsOriginClosedTakesAnIdleConnection) {
  start("http/1.1");
  const std::string curl = "curl -sS --http1.1 --max-time 20 --proxy http://127.0.0.1:" +
                           std::to_string(proxy_->port()) + " --cacert " + folder_ +
                           "/gate-ca/ca.pem https://h2.test:" + std::to_string(port_);
  // Two client connections at once leave two idle connections.
  const auto both =
      run_shell(curl + "/a -Z --parallel-immediate " + curl.substr(curl.rfind(' ')) + "/b 2>&1");
  ASSERT_EQ(connections(), "1 http/1.1\n2 http/1.1\n") << both.output;
  // One client connection: its first request's origin connection closes after the answer; its
  // second request goes on the other idle one.
  const auto got = run_shell(curl + "/close " + curl.substr(curl.rfind(' ')) + "/next 2>&1");
  EXPECT_TRUE(contains(got.output, "http/1.1 connection 1\n")) << got.output;
  EXPECT_TRUE(contains(got.output, "http/1.1 connection 2\n")) << got.output;
  EXPECT_EQ(connections(), "1 http/1.1\n2 http/1.1\n");
}

// Client connections to the same host:port, one after the other and at once, share one HTTP/2
// connection to the origin; another host gets its own, and both are kept for their next clients.
TEST_F(Http2OriginPoolTest, InspectedH2ClientsShareOneOriginConnectionPerHostAndPort) {
  start("h2,http/1.1");
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 1\n2 200\n");
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 1\n2 200\n");
  // A client holds a stream open on it while another client's stream goes on it too.
  auto holder = staged(
      "h2.test", "get:/slow wait:" + folder_ + "/release get:/connection " + "done:/connection");
  ASSERT_TRUE(decided("h2.test", "/slow")) << proxy_->log_text();
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 1\n2 200\n");
  EXPECT_EQ(get("--http2", "/connection", "other.test"), "h2 connection 2\n2 200\n");
  EXPECT_EQ(get("--http2", "/connection", "other.test"), "h2 connection 2\n2 200\n");
  touch("release");
  const std::string held = holder.get();
  EXPECT_TRUE(contains(held, "/slow 200\n")) << held;
  EXPECT_TRUE(contains(held, "/connection 200\n/connection done 16\n")) << held;
  EXPECT_FALSE(contains(held, "reset")) << held;
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 1\n2 200\n");
  EXPECT_EQ(connections(), "1 h2\n2 h2\n");
}

// An origin that takes one stream per connection: each stream of a client goes on a connection
// of its own, shared while the pool's bounds allow (8 per host:port), and past them on one that is
// the client's alone: the bounds limit what is shared and kept, never how many streams go.
TEST_F(Http2OriginPoolTest, PastThePoolsBoundsStreamsGoOnConnectionsOfTheirClientsOwn) {
  start("h2,http/1.1", 1);
  std::string steps;
  for (int i = 1; i <= 10; ++i) {
    const std::string path = "/slow?" + std::to_string(i);
    steps += "get:" + path + " head:" + path + " ";
  }
  auto holder = staged("h2.test", steps + "wait:" + folder_ + "/release");
  ASSERT_TRUE(decided("h2.test", "/slow", 10)) << proxy_->log_text();
  std::string held;
  for (int i = 0; i < 500 && std::count(held.begin(), held.end(), '\n') < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    held = connections();
  }
  EXPECT_EQ(std::count(held.begin(), held.end(), '\n'), 10) << held;
  touch("release");
  const std::string got = holder.get();
  for (int i = 1; i <= 10; ++i) {
    EXPECT_TRUE(contains(got, "/slow?" + std::to_string(i) + " 200\n")) << got;
  }
  EXPECT_FALSE(contains(got, "reset")) << got;
}

// The origin's GOAWAY: a stream it left out (above its last stream id), with nothing of it sent
// but its head, goes again on a new connection, once; the connection takes no new stream after
// a GOAWAY that let its stream finish.
TEST_F(Http2OriginPoolTest, AStreamTheOriginsGoawayLeftOutIsSentAgainOnANewConnection) {
  start("h2,http/1.1");
  EXPECT_EQ(get("--http2", "/refuse-first"), "h2 connection 2\n2 200\n");
  EXPECT_EQ(get("--http2", "/goaway-after"), "h2 connection 2\n2 200\n");
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 3\n2 200\n");
  EXPECT_EQ(connections(), "1 h2\n2 h2\n3 h2\n");
  // One decision line: the stream sent again is still one request.
  EXPECT_EQ(log_lines_with(proxy_->log_text(), {"\"event\":\"decision\"", "/refuse-first"}).size(),
            1u);
}

// A stream whose body was sent when the origin's GOAWAY left it out is not sent again (its body
// is gone): the client is told, and no second connection is dialled for it.
TEST_F(Http2OriginPoolTest, AStreamWhoseBodyWentIsNotSentAgainAfterAGoaway) {
  start("h2,http/1.1");
  const std::string got = get("--http2 --data-binary the-body", "/refuse-after-body");
  EXPECT_TRUE(contains(got, "2 502\n")) << got;
  EXPECT_TRUE(contains(got, "ended the stream before its response")) << got;
  EXPECT_EQ(connections(), "1 h2\n");
}

// A reload retires the shared connection: the stream held on it goes on to its end, no new stream
// goes there, and the next client's goes on a new connection, which the held stream's client
// then shares.
TEST_F(Http2OriginPoolTest, AReloadRetiresTheSharedConnectionWithoutCuttingItsStreams) {
  start("h2,http/1.1");
  auto holder = staged(
      "h2.test", "get:/slow wait:" + folder_ + "/release get:/connection " + "done:/connection");
  ASSERT_TRUE(decided("h2.test", "/slow")) << proxy_->log_text();
  reload();
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 2\n2 200\n");
  touch("release");
  const std::string held = holder.get();
  EXPECT_TRUE(contains(held, "/connection 200\n")) << held;
  EXPECT_FALSE(contains(held, "reset")) << held;
  EXPECT_FALSE(contains(held, "closed")) << held;
  EXPECT_EQ(get("--http2", "/connection"), "h2 connection 2\n2 200\n");
  EXPECT_EQ(connections(), "1 h2\n2 h2\n");
}

// A reload that denies h2.test ends the streams of the clients it revokes, each with its line,
// on the connection they shared; another host's client, on a connection of its own, goes on (its
// next stream on a new connection: the reload retired the one it had).
TEST_F(Http2OriginPoolTest, ARevocationEndsItsClientsStreamsOnlyAndTheirLinesSaySo) {
  start("h2,http/1.1");
  // (The client that outlives the others first: a client process started later would inherit
  // the gate's sockets of those before it, in this one process, and keep them open.)
  auto other = staged(
      "other.test", "get:/slow wait:" + folder_ + "/release get:/connection " + "done:/connection");
  ASSERT_TRUE(decided("other.test", "/slow")) << proxy_->log_text();
  // (One after the other: two clients that arrive at once each dial, nothing being kept yet.)
  auto first = staged("h2.test", "get:/slow wait:" + folder_ + "/never");
  ASSERT_TRUE(decided("h2.test", "/slow")) << proxy_->log_text();
  auto second = staged("h2.test", "get:/slow wait:" + folder_ + "/never");
  ASSERT_TRUE(decided("h2.test", "/slow", 2)) << proxy_->log_text();
  std::ofstream(proxy_->folder() + "/blocked.txt", std::ios::app) << "h2.test\n";
  for (auto* peer : {&second, &first}) {
    const std::string got = peer->get();
    EXPECT_TRUE(contains(got, "closed")) << got;
  }
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return log_lines_with(log, {"\"event\":\"end\"", "\"host\":\"h2.test\"", "\"path\":\"/slow\"",
                                "\"reason\":\"blocklist\"", "\"outcome\":\"revoked\""})
               .size() == 2;
  })) << proxy_->log_text();
  touch("release");
  const std::string went_on = other.get();
  EXPECT_TRUE(contains(went_on, "/connection 200\n")) << went_on;
  EXPECT_FALSE(contains(went_on, "reset")) << went_on;
  EXPECT_FALSE(contains(went_on, "closed")) << went_on;
  EXPECT_EQ(connections(), "1 h2\n2 h2\n3 h2\n") << proxy_->log_text();
}

}  // namespace
}  // namespace sandgate::testing
