// A third hostile review of HTTP/2 on inspected hosts, against the gate itself: what a broken or
// malicious origin can do on a shared HTTP/2 origin connection (session/h2_origin.hpp), with
// tests/support/h2_review3_origin.py as that origin and curl as the clients. Every stream must
// end, with the origin's answer, an answer sent again on another connection, or the gate's 502;
// never wait for the client's own timeout; never carry another stream's answer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

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

constexpr const char* kOrigin =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_review3_origin.py ";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What curl got: its exit code (28: its own timeout), the status, the body.
struct Got {
  int exit_code = -1;
  std::string status;
  std::string body;
  std::string all;
};

class Http2Review3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-review3-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test", "DNS:plain.test"}, "http2-review3-ca");
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, std::string(kOrigin) + "serve " + std::to_string(port_) + " " + folder_ +
                   "/server.pem " + folder_ + "/server.key " + folder_ + "/origin.log");
    ASSERT_TRUE(port_accepts(port_)) << "the origin did not start";
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test", "plain.test"};
      s.idle_timeout = std::chrono::seconds(60);  // far beyond what any test here waits
    });
    proxy_->dns().set("h2.test", {"127.0.0.1"});
    proxy_->dns().set("plain.test", {"127.0.0.1"});  // the origin allows it no WebSocket
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  std::string curl(const std::string& options) const {
    return "curl -sS --http2 --max-time 30 --proxy http://127.0.0.1:" +
           std::to_string(proxy_->port()) + " --cacert " + folder_ + "/gate-ca/ca.pem " + options;
  }
  std::string url(const std::string& path) const {
    return "https://h2.test:" + std::to_string(port_) + path;
  }
  // GET `path` with curl --http2 through the gate.
  Got get(const std::string& path) const {
    const auto result = run_shell(curl("-w '\\nstatus=%{http_code}' " + url(path) + " 2>&1"));
    Got got{result.exit_code, "", "", result.output};
    const auto at = result.output.rfind("\nstatus=");
    if (at != std::string::npos) {
      got.body = result.output.substr(0, at);
      got.status = result.output.substr(at + 8);
    }
    return got;
  }
  std::string origin_log() const {
    std::ifstream in(folder_ + "/origin.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

// The origin's GOAWAY leaves the stream out (its last stream id is below it): the request was
// never processed, so the gate sends it again, once, on a new connection.
TEST_F(Http2Review3Test, AStreamAGoawayLeavesOutIsSentAgainOnANewConnection) {
  const Got got = get("/goaway-once");
  EXPECT_EQ(got.status, "200") << got.all << proxy_->log_text();
  EXPECT_EQ(got.body, "sent again") << got.all;
  EXPECT_TRUE(contains(origin_log(), "connection 2")) << origin_log();
}

// An origin that leaves every stream out and keeps its connection open: sent again once, then
// the gate's 502, never the client's own timeout.
TEST_F(Http2Review3Test, AStreamEveryGoawayLeavesOutEndsWithA502) {
  const Got got = get("/goaway-always");
  EXPECT_NE(got.exit_code, 28 << 8) << got.all;
  EXPECT_EQ(got.status, "502") << got.all << proxy_->log_text();
  // A request whose body went cannot be sent again: the 502 all the same.
  const Got posted = get("/goaway-always -d some-body");
  EXPECT_NE(posted.exit_code, 28 << 8) << posted.all;
  EXPECT_EQ(posted.status, "502") << posted.all;
}

// Two GOAWAYs, the second lowering the last stream id to 0: the stream is left out by the second.
TEST_F(Http2Review3Test, ASecondGoawayThatLowersTheLastIdEndsTheStreamsItLeavesOut) {
  const Got got = get("/goaway-twice");
  EXPECT_NE(got.exit_code, 28 << 8) << got.all;
  EXPECT_TRUE(got.status == "502" || got.status == "200") << got.all << proxy_->log_text();
}

// SETTINGS_MAX_CONCURRENT_STREAMS 0 mid-flight: the connection takes no new stream, and the
// next request goes on another connection (or is answered 502), never waits for ever.
TEST_F(Http2Review3Test, AnOriginThatAllowsNoStreamsDoesNotHoldTheNextRequests) {
  const Got first = get("/no-streams");
  EXPECT_EQ(first.body, "ok") << first.all;
  const Got next = get("/echo/next");
  EXPECT_NE(next.exit_code, 28 << 8) << next.all;
  EXPECT_EQ(next.body, "next") << next.all << proxy_->log_text();
}

// A PING flood from the origin: the gate answers a bounded number, then ends the connection
// with ENHANCE_YOUR_CALM.
TEST_F(Http2Review3Test, APingFloodFromTheOriginIsAnsweredABoundedNumberOfTimes) {
  const Got got = get("/ping-flood");
  std::this_thread::sleep_for(500ms);
  const std::string log = origin_log();
  EXPECT_FALSE(contains(log, "ping-acks 500")) << log;
  EXPECT_TRUE(contains(log, "goaway-from-gate 11")) << log << got.all << proxy_->log_text();
}

// WINDOW_UPDATE and PRIORITY frames by the hundred thousand cost the gate no reply: the
// connection goes on, and the answer behind them comes.
TEST_F(Http2Review3Test, WindowUpdateAndPriorityFloodsFromTheOriginCostNoReply) {
  const Got got = get("/control-flood");
  EXPECT_EQ(got.body, "ok") << got.all;
  const Got next = get("/echo/next");
  EXPECT_EQ(next.body, "next") << next.all;
}

// The origin shrinks its streams' window to 0 mid-upload, then opens it again: the body waits,
// then goes whole.
TEST_F(Http2Review3Test, ARequestBodyWaitsOutAWindowShrunkToZero) {
  run_shell("head -c 300000 /dev/zero | tr '\\0' 'b' > " + folder_ + "/upload");
  const auto result =
      run_shell(curl("--data-binary @" + folder_ + "/upload " + url("/shrink") + " 2>&1"));
  EXPECT_TRUE(contains(result.output, "body: " + std::string(300000, 'b') + "\n"))
      << result.output.substr(0, 300) << proxy_->log_text();
}

// PUSH_PROMISE after the gate's ENABLE_PUSH 0: a protocol error; nothing pushed reaches the
// client, and the stream ends.
TEST_F(Http2Review3Test, APushPromiseIsRefused) {
  const Got got = get("/push");
  EXPECT_NE(got.exit_code, 28 << 8) << got.all;
  EXPECT_NE(got.body, "pushed") << got.all;
  EXPECT_TRUE(contains(origin_log(), "goaway-from-gate 1"))
      << origin_log() << got.all << proxy_->log_text();
}

// HEADERS on streams the gate never opened: a protocol error, the stream ends.
TEST_F(Http2Review3Test, HeadersOnAStreamTheGateNeverOpenedEndTheConnection) {
  const Got got = get("/stray");
  EXPECT_NE(got.exit_code, 28 << 8) << got.all;
  EXPECT_NE(got.body, "stray") << got.all;
}

// A response after the origin's own RST_STREAM: the stream is over, the client hears so.
TEST_F(Http2Review3Test, AResponseAfterTheOriginResetItsStreamIsNotForwarded) {
  const Got got = get("/after-reset");
  EXPECT_NE(got.exit_code, 28 << 8) << got.all;
  EXPECT_NE(got.status, "200") << got.all;
}

// Two clients, each with many streams on the one shared origin connection, answered out of
// order: each answer reaches the stream that asked for it.
TEST_F(Http2Review3Test, TwoClientsOfOneOriginConnectionEachGetTheirOwnAnswers) {
  auto client = [&](const std::string& who) {
    std::string command = curl("--parallel --parallel-max 20");
    for (int i = 0; i < 20; ++i) {
      const std::string name = who + std::to_string(i);
      command += " -o " + folder_ + "/" + name + " " + url("/echo/" + name);
    }
    return std::async(std::launch::async, [command] { return run_shell(command + " 2>&1"); });
  };
  auto a = client("a");
  auto b = client("b");
  const std::string errors = a.get().output + b.get().output;
  for (const std::string who : {"a", "b"}) {
    for (int i = 0; i < 20; ++i) {
      const std::string name = who + std::to_string(i);
      std::ifstream in(folder_ + "/" + name);
      std::stringstream body;
      body << in.rdbuf();
      EXPECT_EQ(body.str(), name) << errors;
    }
  }
}

// A WebSocket over HTTP/2 whose client reads nothing: the gate's write of the origin's message
// to it waits for room. The origin resets its stream in the middle of that message: the client's
// stream is reset too, at once, not when the idle limit (60 s here) ends the wait, and the log
// says the origin did it.
TEST_F(Http2Review3Test, AnOriginResetEndsAWebSocketWhoseClientDoesNotRead) {
  const auto got =
      run_shell(std::string(kOrigin) + "ws-stall " + std::to_string(proxy_->port()) + " h2.test " +
                std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem /ws-reset 2>&1");
  EXPECT_TRUE(contains(got.output, "status 200")) << got.output;
  EXPECT_TRUE(contains(got.output, "reset 8")) << got.output << proxy_->log_text();
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return contains(log, "the origin reset its stream mid-message.");
  })) << proxy_->log_text();
}

// A POST to /anything from a client that checks nothing of what it sends
// (h2_review3_origin.py smuggle CASE): what it got, and what the origin saw.
std::pair<std::string, std::string> smuggle(const TestProxy& proxy, const std::string& folder,
                                            std::uint16_t port, const std::string& which) {
  const auto got =
      run_shell(std::string(kOrigin) + "smuggle " + std::to_string(proxy.port()) + " h2.test " +
                std::to_string(port) + " " + folder + "/gate-ca/ca.pem " + which + " 2>&1");
  std::ifstream in(folder + "/origin.log");
  std::stringstream seen;
  seen << in.rdbuf();
  return {got.output, seen.str()};
}

// Cookie fields split as RFC 9113 section 8.2.3 allows reach the origin, all of them.
TEST_F(Http2Review3Test, CookieFieldsReachTheOriginAllOfThem) {
  const auto [out, seen] = smuggle(*proxy_, folder_, port_, "cookies");
  EXPECT_TRUE(contains(out, "status 200")) << out << proxy_->log_text();
  EXPECT_TRUE(contains(seen, "a=1") && contains(seen, "b=2") && contains(seen, "c=3")) << seen;
}

// Fields no HTTP/2 request may carry (connection-specific ones, te other than trailers, CR, LF
// or NUL in a value, an uppercase name) are refused: the origin never sees them.
TEST_F(Http2Review3Test, FieldsNoHttp2RequestMayCarryNeverReachTheOrigin) {
  for (const std::string which : {"te-gzip", "crlf-value", "nul-value", "upper-name", "connection",
                                  "keep-alive", "upgrade", "transfer-encoding"}) {
    const auto [out, seen] = smuggle(*proxy_, folder_, port_, which);
    EXPECT_FALSE(contains(out, "status 200")) << which << ": " << out;
    EXPECT_TRUE(contains(out, "reset ") || contains(out, "goaway ") || contains(out, "status 4"))
        << which << ": " << out;
    EXPECT_FALSE(contains(seen, "request")) << which << ": " << seen;
  }
}

// A body that disagrees with its content-length: the stream is reset, the origin never gets it
// whole, and the next request goes.
TEST_F(Http2Review3Test, ABodyThatDisagreesWithItsLengthIsRefused) {
  for (const std::string which : {"length-short", "length-long"}) {
    const auto [out, seen] = smuggle(*proxy_, folder_, port_, which);
    EXPECT_FALSE(contains(out, "status 200")) << which << ": " << out;
    EXPECT_TRUE(contains(out, "reset ") || contains(out, "goaway ") || contains(out, "status 4"))
        << which << ": " << out;
    EXPECT_FALSE(contains(seen, "request")) << which << ": " << seen;
  }
  const auto [next, seen] = smuggle(*proxy_, folder_, port_, "cookies");
  EXPECT_TRUE(contains(next, "status 200")) << next;
}

// A WebSocket over HTTP/2 from a client that checks nothing (h2_review3_origin.py ws-probe
// CASE): what it got.
std::string ws_probe(const TestProxy& proxy, const std::string& folder, std::uint16_t port,
                     const std::string& which, const std::string& host = "h2.test") {
  return run_shell(std::string(kOrigin) + "ws-probe " + std::to_string(proxy.port()) + " " + host +
                   " " + std::to_string(port) + " " + folder + "/gate-ca/ca.pem " + which + " 2>&1")
      .output;
}

// Extended CONNECT the gate never allowed (its origin, plain.test, takes no WebSocket, so the
// gate sends no SETTINGS_ENABLE_CONNECT_PROTOCOL), or that breaks RFC 8441 (:protocol on a GET,
// no :path or :scheme): refused on its stream, and the origin is never asked for a WebSocket.
TEST_F(Http2Review3Test, ExtendedConnectTheGateDidNotAllowOrThatIsMalformedIsRefused) {
  for (const std::string which : {"early", "get-protocol", "no-path", "no-scheme"}) {
    const std::string out =
        ws_probe(*proxy_, folder_, port_, which, which == "early" ? "plain.test" : "h2.test");
    EXPECT_FALSE(contains(out, "status 200")) << which << ": " << out;
    EXPECT_TRUE(contains(out, "reset ") || contains(out, "goaway ") || contains(out, "status 4"))
        << which << ": " << out;
  }
  EXPECT_FALSE(contains(origin_log(), "websocket")) << origin_log();
}

// The origin's DATA before its head: the WebSocket is not opened, the client gets the gate's
// 502 and nothing of the origin's.
TEST_F(Http2Review3Test, AnOriginsDataBeforeItsHeadOpensNoWebSocket) {
  const std::string out = ws_probe(*proxy_, folder_, port_, "/ws-data-first");
  EXPECT_TRUE(contains(out, "status 502")) << out;  // its body the gate's reason, no frame
  EXPECT_TRUE(contains(origin_log(), "websocket /ws-data-first")) << origin_log();
}

// A frame over the gate's limit (16 MiB): the client gets a close 1009, not the frame.
TEST_F(Http2Review3Test, AnOriginsFrameOverTheLimitEndsTheWebSocketWith1009) {
  const std::string out = ws_probe(*proxy_, folder_, port_, "/ws-huge");
  EXPECT_TRUE(contains(out, "status 200")) << out;
  EXPECT_TRUE(contains(out, "close 1009")) << out << proxy_->log_text();
}

}  // namespace
}  // namespace sandgate::testing
