// The streams of one inspected HTTP/2 connection are decided each on its own and at once
// (proxy/session/decision_state.hpp, proxy/session/fronts/inspected_h2.cpp): a question on one
// stream holds no other, a reload decides a waiting stream with its rules, report-only mode's
// denial stays on its own stream, a reload that denies the host and the drain end every stream
// with its line, and a stream the client resets before it was admitted leaves one too. Driven
// frame by frame by tests/support/h2_hostile_peer.py (`staged`, on python3-h2), against its
// HTTP/2-only origin.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
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

using namespace std::chrono_literals;

constexpr const char* kPeer =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_hostile_peer.py ";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

class Http2StreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-streams-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:bound.test"}, "http2-streams-ca");
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, std::string(kPeer) + "serve " + std::to_string(port_) + " " + folder_ +
                   "/server.pem " + folder_ + "/server.key unused-token");
    ASSERT_TRUE(port_accepts(port_)) << "the origin did not start";
    where_ = "bound.test:" + std::to_string(port_);
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  // A gate inspecting bound.test (allowed by the allowlist) with `request_rules`; under
  // --unknown=ask when `ask` (a request no line decides is asked about on the admin endpoint),
  // in report-only mode when not `enforce`.
  void start_gate(const std::string& request_rules, bool ask, bool enforce = true) {
    std::ofstream(folder_ + "/requests.txt") << request_rules;
    std::ofstream(folder_ + "/allow.txt") << "bound.test\n";
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.request_rules_path = folder_ + "/requests.txt";
      s.allowlist_path = folder_ + "/allow.txt";
      s.enforce = enforce;
      if (ask) {
        s.policy.unknown = rules::UnknownMode::ask;
        s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
        s.ask_timeout = std::chrono::seconds(30);
      }
    });
    proxy_->dns().set("bound.test", {"127.0.0.1"});
  }

  // The peer's `staged` steps on one connection through the gate, run on another thread; its
  // output when it is done.
  std::future<std::string> staged(const std::string& steps) const {
    const std::string command = std::string(kPeer) + "staged " + std::to_string(proxy_->port()) +
                                " bound.test " + std::to_string(port_) + " " + folder_ +
                                "/gate-ca/ca.pem " + steps + " 2>&1";
    return std::async(std::launch::async, [command] { return run_shell(command).output; });
  }

  std::string pending() const { return ask::render_pending_text(proxy_->gate().questions()); }
  // Waits until the gate asks about `request` ("GET /record/asked") with one request waiting.
  bool asked(const std::string& request) const {
    const std::string wanted = where_ + " " + request + "  1 waiting";
    for (int i = 0; i < 1000; ++i) {
      if (contains(pending(), wanted)) {
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  // POST /decide for the question about `request` (its path without a space or slash escaped).
  std::string decide(const std::string& request, const std::string& answer) const {
    std::string form;
    for (const char c : request) {
      form += c == ' ' ? std::string("+") : c == '/' ? std::string("%2F") : std::string(1, c);
    }
    const std::string body =
        "host=bound.test&port=" + std::to_string(port_) + "&answer=" + answer + "&request=" + form;
    const std::string& address = proxy_->gate().admin_address();
    TestClient admin(
        static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1))));
    admin.send(
        "POST /decide HTTP/1.1\r\nHost: admin\r\nContent-Type: "
        "application/x-www-form-urlencoded\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    return admin.read_to_end();
  }
  // The log's lines with every one of `parts`, in order.
  std::vector<std::string> lines(std::initializer_list<std::string_view> parts) const {
    return log_lines_with(proxy_->log_text(), parts);
  }
  bool logged(std::initializer_list<std::string_view> parts) const {
    return proxy_->wait_for_log(
        [&](const std::string& log) { return !log_lines_with(log, parts).empty(); });
  }
  // The connection id a log line names ("conn":N).
  static std::string conn_of(const std::string& line) {
    const std::size_t at = line.find("\"conn\":");
    return at == std::string::npos ? "" : line.substr(at, line.find(',', at) - at);
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::string where_;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

TEST_F(Http2StreamsTest, AStreamWaitingOnAQuestionHoldsNoOtherStream) {
  start_gate("allow bound.test GET /record\n", /*ask=*/true);
  auto peer = staged("get:/record/asked get:/record end");
  ASSERT_TRUE(asked("GET /record/asked")) << pending() << proxy_->log_text();
  // The other stream of the same connection is decided, answered and ended meanwhile.
  EXPECT_TRUE(logged({"\"event\":\"end\"", "\"path\":\"/record\"", "\"outcome\":\"closed\""}))
      << proxy_->log_text();
  EXPECT_TRUE(contains(pending(), where_ + " GET /record/asked  1 waiting")) << pending();
  EXPECT_TRUE(contains(decide("GET /record/asked", "once"), "HTTP/1.1 200"));
  const std::string got = peer.get();
  EXPECT_TRUE(contains(got, "/record 200")) << got;
  EXPECT_TRUE(contains(got, "/record/asked 200")) << got;
  EXPECT_LT(got.find("/record done"), got.find("/record/asked 200")) << got;
}

TEST_F(Http2StreamsTest, TwoStreamsAskAtOnceAndAReloadDecidesOneWithItsRules) {
  start_gate("allow bound.test GET /record\n", /*ask=*/true);
  auto peer = staged("get:/record/asked get:/record/other end");
  ASSERT_TRUE(asked("GET /record/asked")) << pending();
  ASSERT_TRUE(asked("GET /record/other")) << pending();
  // A line that denies one of them: its question is withdrawn and the new rules refuse it,
  // while the other still waits for its person.
  std::ofstream(folder_ + "/requests.txt", std::ios::app) << "deny bound.test GET /record/other\n";
  EXPECT_TRUE(logged(
      {"\"event\":\"decision\"", "\"path\":\"/record/other\"", "\"reason\":\"request-denied\""}))
      << proxy_->log_text();
  EXPECT_TRUE(contains(pending(), where_ + " GET /record/asked  1 waiting")) << pending();
  EXPECT_FALSE(contains(pending(), "GET /record/other")) << pending();
  EXPECT_TRUE(contains(decide("GET /record/asked", "once"), "HTTP/1.1 200"));
  const std::string got = peer.get();
  EXPECT_TRUE(contains(got, "/record/other 403")) << got;
  EXPECT_TRUE(contains(got, "/record/asked 200")) << got;
}

// Report-only mode taken by a reload while the connection is open: the streams that arrive after
// it are decided with the settings in force when each arrives (as a kept-alive HTTP/1.1 request
// is), and a stream's would-deny names its own denial, never another stream's.
TEST_F(Http2StreamsTest, EachStreamIsDecidedWithTheSettingsOfItsArrivalAndKeepsItsOwnReport) {
  start_gate(
      "allow bound.test GET /record\nallow bound.test GET /record/ok\n"
      "deny bound.test GET /record/no  #! not this one\n",
      /*ask=*/false);
  const std::string go = folder_ + "/go";
  auto peer = staged("get:/record done:/record wait:" + go +
                     " get:/record/no get:/record/ok get:/record/maybe end");
  ASSERT_TRUE(logged({"\"event\":\"end\"", "\"path\":\"/record\""})) << proxy_->log_text();
  auto report_only = std::make_shared<settings::Settings>(proxy_->settings());
  report_only->enforce = false;
  proxy_->server().publish(proxy_->server().current_policy(), report_only);
  std::this_thread::sleep_for(200ms);  // the worker has taken them
  std::ofstream(go) << "";
  const std::string got = peer.get();
  EXPECT_TRUE(contains(got, "/record/no 200")) << got;
  EXPECT_TRUE(contains(got, "/record/ok 200")) << got;
  EXPECT_TRUE(contains(got, "/record/maybe 200")) << got;

  const auto no = lines({"\"event\":\"decision\"", "\"path\":\"/record/no\""});
  const auto ok = lines({"\"event\":\"decision\"", "\"path\":\"/record/ok\""});
  const auto maybe = lines({"\"event\":\"decision\"", "\"path\":\"/record/maybe\""});
  ASSERT_EQ(no.size(), 1u) << proxy_->log_text();
  ASSERT_EQ(ok.size(), 1u) << proxy_->log_text();
  ASSERT_EQ(maybe.size(), 1u) << proxy_->log_text();
  EXPECT_TRUE(contains(no[0], "\"verdict\":\"would-deny\",\"reason\":\"request-denied\"")) << no[0];
  EXPECT_TRUE(contains(no[0], "not this one")) << no[0];
  EXPECT_TRUE(contains(ok[0], "\"verdict\":\"allow\",\"reason\":\"allowed\"")) << ok[0];
  EXPECT_FALSE(contains(ok[0], "not this one")) << ok[0];
  EXPECT_TRUE(contains(maybe[0], "\"verdict\":\"would-deny\",\"reason\":\"request-not-allowed\""))
      << maybe[0];
  EXPECT_FALSE(contains(maybe[0], "not this one")) << maybe[0];
  // One connection carried them all.
  EXPECT_EQ(conn_of(no[0]), conn_of(ok[0]));
  EXPECT_EQ(conn_of(no[0]), conn_of(maybe[0]));
}

TEST_F(Http2StreamsTest, AStreamResetWhileItsQuestionWaitsLeavesItAndTheOthersGoOn) {
  start_gate("allow bound.test GET /record\n", /*ask=*/true);
  const std::string go = folder_ + "/go";
  auto peer = staged("get:/record/asked wait:" + go + " reset:/record/asked get:/record end");
  ASSERT_TRUE(asked("GET /record/asked")) << pending();
  std::ofstream(go) << "";
  // The question goes with its only waiter, whose one line says the client reset it.
  EXPECT_TRUE(
      logged({"\"event\":\"end\"", "\"method\":\"GET\"", "\"host\":\"bound.test\"",
              "\"reason\":\"client-closed\"", "reset the stream of its request (GET /record/asked)",
              "\"outcome\":\"reset\""}))
      << proxy_->log_text();
  EXPECT_EQ(pending(), "no questions pending\n");
  const std::string got = peer.get();
  EXPECT_TRUE(contains(got, "/record 200")) << got;
  EXPECT_FALSE(contains(got, "/record/asked 200")) << got;
}

// A hostile client fills the question board (64 questions: ask/question_board.hpp) from one
// connection, is refused the 65th, then resets every waiting stream at once: each leaves the
// board with a line of its own, the board has room again (a new question is asked), and the
// connection goes on (64 resets are within the rapid-reset guard's burst).
TEST_F(Http2StreamsTest, ResettingAFullBoardOfQuestionsEmptiesItAndTheConnectionGoesOn) {
  start_gate("allow bound.test GET /record\n", /*ask=*/true);
  constexpr int kQuestions = 64;
  const std::string go = folder_ + "/go";
  std::string steps;
  for (int i = 0; i < kQuestions; ++i) {
    steps += "get:/record/q" + std::to_string(i) + " ";
  }
  steps += "wait:" + go + " get:/record/over done:/record/over ";
  for (int i = 0; i < kQuestions; ++i) {
    steps += "reset:/record/q" + std::to_string(i) + " ";
  }
  steps += "get:/record/after get:/record end";
  auto peer = staged(steps);
  for (int i = 0; i < 1000 && count_of(pending(), " waiting") < kQuestions; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(count_of(pending(), " waiting"), kQuestions) << pending();
  std::ofstream(go) << "";
  ASSERT_TRUE(asked("GET /record/after")) << pending() << proxy_->log_text();
  EXPECT_EQ(count_of(pending(), " waiting"), 1) << pending();
  EXPECT_TRUE(contains(decide("GET /record/after", "once"), "HTTP/1.1 200"));
  const std::string got = peer.get();
  EXPECT_TRUE(contains(got, "/record/over 403")) << got;
  EXPECT_TRUE(contains(got, "/record/after 200")) << got;
  EXPECT_TRUE(contains(got, "/record 200")) << got;
  EXPECT_FALSE(contains(got, "goaway")) << got;
  EXPECT_EQ(pending(), "no questions pending\n");
  EXPECT_EQ(
      lines({"\"event\":\"end\"", "\"reason\":\"client-closed\"", "\"outcome\":\"reset\""}).size(),
      static_cast<std::size_t>(kQuestions))
      << proxy_->log_text();
  EXPECT_EQ(lines({"\"path\":\"/record/over\"", "\"reason\":\"ask-unavailable\""}).size(), 1U)
      << proxy_->log_text();
}

// A stream reset before its admission finished (here, as it was opened, while another stream
// waits on its question) ends with one line of its own; the waiting stream is not disturbed.
TEST_F(Http2StreamsTest, AStreamResetBeforeItsAdmissionFinishedEndsWithALine) {
  start_gate("allow bound.test GET /record\n", /*ask=*/true);
  auto peer = staged("get:/record/asked early:/record/gone end");
  ASSERT_TRUE(asked("GET /record/asked")) << pending();
  EXPECT_TRUE(
      logged({"\"event\":\"end\"", "\"host\":\"bound.test\"", "\"reason\":\"client-closed\"",
              "(GET /record/gone)", "\"outcome\":\"reset\""}))
      << proxy_->log_text();
  EXPECT_FALSE(contains(pending(), "GET /record/gone")) << pending();
  EXPECT_TRUE(contains(pending(), where_ + " GET /record/asked  1 waiting")) << pending();
  EXPECT_TRUE(contains(decide("GET /record/asked", "once"), "HTTP/1.1 200"));
  const std::string got = peer.get();
  EXPECT_TRUE(contains(got, "/record/asked 200")) << got;
}

TEST_F(Http2StreamsTest, AReloadThatDeniesTheHostEndsEveryStreamWithItsLine) {
  start_gate("allow bound.test GET /record\nallow bound.test GET /slow\n", /*ask=*/true);
  auto peer = staged("get:/record done:/record get:/slow get:/record/asked end");
  ASSERT_TRUE(asked("GET /record/asked")) << pending();
  ASSERT_TRUE(logged({"\"event\":\"decision\"", "\"path\":\"/slow\""})) << proxy_->log_text();
  std::ofstream(proxy_->folder() + "/blocked.txt", std::ios::app) << "bound.test\n";
  const std::string got = peer.get();
  EXPECT_TRUE(contains(got, "closed")) << got;
  // The stream being relayed ends revoked with the new rules' reason; the one waiting on its
  // question too; the question goes.
  EXPECT_TRUE(logged({"\"event\":\"end\"", "\"path\":\"/slow\"", "\"reason\":\"blocklist\"",
                      "\"outcome\":\"revoked\""}))
      << proxy_->log_text();
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return log_lines_with(
               log, {"\"event\":\"end\"", "\"reason\":\"blocklist\"", "\"outcome\":\"revoked\""})
               .size() == 2;
  })) << proxy_->log_text();
  EXPECT_EQ(pending(), "no questions pending\n");
}

TEST_F(Http2StreamsTest, TheDrainEndsEveryStreamWaitingOnAQuestionWithItsLine) {
  start_gate("allow bound.test GET /record\n", /*ask=*/true);
  auto peer = staged("get:/record/one get:/record/two get:/record/three end");
  for (const char* request : {"GET /record/one", "GET /record/two", "GET /record/three"}) {
    ASSERT_TRUE(asked(request)) << pending();
  }
  proxy_->stop();
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return log_lines_with(log, {"\"host\":\"bound.test\"", "\"reason\":\"shutting-down\""})
               .size() == 3;
  })) << proxy_->log_text();
  peer.get();
}

}  // namespace
}  // namespace sandgate::testing
