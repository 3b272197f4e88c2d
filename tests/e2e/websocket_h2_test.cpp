// WebSockets over HTTP/2 (RFC 8441) through inspection, with Node's http2 module on both ends:
// an origin that allows extended CONNECT (and one that does not) answering :protocol websocket
// streams, and a client that sends extended CONNECT and real masked RFC 6455 frames
// (tests/support/node_ws_h2_origin.mjs, node_ws_h2_client.mjs). The gate allows extended CONNECT
// to the client only when its origin does; each WebSocket is judged as its HTTP/1.1 upgrade (a
// GET of its path), filled, and relayed frame by frame by the same relay as on HTTP/1.1; the
// connection's other streams go on whatever happens to it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/child_server.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/websocket_fixture.hpp"

#ifndef SANDGATE_SOURCE_DIR
#error "SANDGATE_SOURCE_DIR must name the source tree"
#endif

namespace sandgate::testing {
namespace {

class WebSocketH2Test : public WebSocketFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(
        make_folder("websocket-h2", {"DNS:ws.test", "DNS:plain.test"}, "websocket-h2-ca"));
    port_ = free_port();
    origin_ = start_origin(port_, "on");
    ASSERT_TRUE(port_accepts(port_)) << "the WebSocket origin did not start";
    plain_port_ = free_port();
    plain_origin_ = start_origin(plain_port_, "off");
    ASSERT_TRUE(port_accepts(plain_port_)) << "the origin without extended CONNECT did not start";
  }
  void TearDown() override {
    origin_.reset();
    plain_origin_.reset();
    WebSocketFixture::TearDown();
  }

  std::unique_ptr<ChildServer> start_origin(std::uint16_t port, const char* connect_protocol) {
    return std::make_unique<ChildServer>(
        port, "node " SANDGATE_SOURCE_DIR "/tests/support/node_ws_h2_origin.mjs " +
                  std::to_string(port) + " " + folder_ + "/server.pem " + folder_ + "/server.key " +
                  kToken + " " + connect_protocol);
  }

  // A gate inspecting both hosts by request rules, API_TOKEN bound to ws.test; `budgets` (a
  // budgets file's text) when not empty.
  std::unique_ptr<TestProxy> gate(const std::string& budgets = "",
                                  std::chrono::seconds idle_timeout = {}) {
    std::ofstream(folder_ + "/requests.txt")
        << "allow ws.test GET /echo\nallow ws.test GET /flood\nallow ws.test GET /choose-deflate\n"
           "allow ws.test GET /plain\nallow plain.test GET /**\n";
    return inspecting_gate({"ws.test", "plain.test"}, {port_, plain_port_}, "ws.test", budgets,
                           idle_timeout, [this](settings::Settings& s) {
                             s.request_rules_path = folder_ + "/requests.txt";
                             s.log_websocket_messages = log_messages_;
                           });
  }

  CommandResult client(const TestProxy& proxy, const std::string& host, std::uint16_t port,
                       const std::string& mode, const std::string& arg = "") const {
    return run_shell("node " SANDGATE_SOURCE_DIR "/tests/support/node_ws_h2_client.mjs " +
                     std::to_string(proxy.port()) + " " + host + " " + std::to_string(port) + " " +
                     folder_ + "/gate-ca/ca.pem " + mode + " '" + arg + "' 2>&1");
  }
  std::string heads(std::uint16_t port) const {
    return read_file(folder_ + "/" + std::to_string(port) + ".heads");
  }

  bool log_messages_ = false;     // the next gate()'s log_websocket_messages
  std::uint16_t port_ = 0;        // allows extended CONNECT
  std::uint16_t plain_port_ = 0;  // does not
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<ChildServer> plain_origin_;
};

// Messages both ways, fragmented or not, a ping inside a fragmented message, the close; the
// subprotocol chosen passes, the extension offer does not; a GET on the same connection beside.
TEST_F(WebSocketH2Test, MessagesGoBothWaysFrameByFrame) {
  auto proxy = gate();
  const auto got = client(*proxy, "ws.test", port_, "echo");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("alpn h2\nconnect-protocol true\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("status 200 protocol chat extensions none\n"), std::string::npos)
      << got.output;
  EXPECT_NE(got.output.find("message text hello\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("message binary 000102ff\n"), std::string::npos) << got.output;
  // The ping sent between the fragments is answered before the message they make.
  EXPECT_NE(got.output.find("pong p1\nmessage text fragmented\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("message text onetwothree fragments 3\n"), std::string::npos)
      << got.output;
  EXPECT_NE(got.output.find("close 1000 done\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("plain 200 plain ok\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("ended rst 0"), std::string::npos) << got.output;
  // No extension reached the origin: the payloads travel plain, for redaction.
  EXPECT_NE(heads(port_).find("/echo authorization=none extensions=none protocol=chat, superchat"),
            std::string::npos)
      << heads(port_);

  // Judged as its HTTP/1.1 upgrade: a GET of its path. Its end line counts its messages.
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"method\":\"GET\"") != std::string::npos &&
           log.find("\"path\":\"/echo\"") != std::string::npos;
  })) << proxy->log_text();
  const std::string end = end_line(*proxy);
  EXPECT_NE(end.find("WebSocket: 6 messages"), std::string::npos) << end;
  EXPECT_NE(end.find("\"outcome\":\"closed\""), std::string::npos) << end;
  EXPECT_EQ(end.find("hello"), std::string::npos) << end;  // never a message's contents
}

// A message far larger than the streams' windows (1 MiB a stream) goes there and back whole:
// each side's window opens as the other side takes the bytes, through the gate's relay.
TEST_F(WebSocketH2Test, AMessageLargerThanTheWindowsGoesThereAndBack) {
  auto proxy = gate();
  const auto got = client(*proxy, "ws.test", port_, "big", std::to_string(5 * 1024 * 1024));
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("big message 5242880 same\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("close 1000"), std::string::npos) << got.output;
  const std::string end = end_line(*proxy);
  EXPECT_NE(end.find("1 message (5242880 bytes) up, 1 message (5242880 bytes) down"),
            std::string::npos)
      << end;
}

// A masked secret in the extended CONNECT's head reaches the origin as its real value; the
// origin's message carrying the real value reaches the client as the sentinel.
TEST_F(WebSocketH2Test, ASecretIsFilledInTheHeadAndCleanedFromTheOriginsMessages) {
  auto proxy = gate();
  const std::string sentinel = proxy->gate().secrets().all().at(0).sentinel;
  const auto got = client(*proxy, "ws.test", port_, "echo", sentinel);
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(heads(port_).find("authorization=Bearer " + std::string(kToken)), std::string::npos)
      << heads(port_);
  EXPECT_EQ(heads(port_).find(sentinel), std::string::npos) << heads(port_);
  EXPECT_NE(got.output.find("message text token " + sentinel + "\n"), std::string::npos)
      << got.output;
  // The value cut across two fragments and three DATA frames is cleaned all the same.
  EXPECT_NE(got.output.find("message text token " + sentinel + " fragments 2\n"), std::string::npos)
      << got.output;
  EXPECT_EQ(got.output.find(kToken), std::string::npos) << got.output;
  const std::string end = end_line(*proxy);
  EXPECT_NE(end.find("2 real values of masked secrets cleaned"), std::string::npos) << end;
}

// --log-websocket-messages over HTTP/2 as over HTTP/1.1: a line per message either way, the
// origin's real value cleaned from it.
TEST_F(WebSocketH2Test, AskedMessagesAreLoggedCleanedAsOnHttp1) {
  log_messages_ = true;
  auto proxy = gate();
  const std::string sentinel = proxy->gate().secrets().all().at(0).sentinel;
  const auto got = client(*proxy, "ws.test", port_, "echo", sentinel);
  EXPECT_EQ(got.exit_code, 0) << got.output;
  end_line(*proxy);
  const std::string log = proxy->log_text();
  EXPECT_EQ(log.find(kToken), std::string::npos) << log;
  EXPECT_NE(
      log.find(R"("path":"/echo","direction":"down","kind":"text","size":)" +
               std::to_string(6 + sentinel.size()) + R"(,"contents":"token )" + sentinel + "\"}"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find(R"("path":"/echo","direction":"up","kind":")"), std::string::npos) << log;
}

// A WebSocket no request rule allows gets the gate's 403 with Proxy-Status on its stream alone;
// the GET beside it on the same connection completes.
TEST_F(WebSocketH2Test, ARefusedWebSocketIsAnsweredOnItsStreamAlone) {
  auto proxy = gate();
  const auto got = client(*proxy, "ws.test", port_, "refused");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("status 403 proxy-status sandgate; error=http_request_denied"),
            std::string::npos)
      << got.output;
  EXPECT_NE(got.output.find("request-not-allowed"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("plain 200 plain ok\n"), std::string::npos) << got.output;
  EXPECT_EQ(heads(port_).find("/denied"), std::string::npos) << heads(port_);
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"path\":\"/denied\"") != std::string::npos &&
           log.find("request-not-allowed") != std::string::npos;
  })) << proxy->log_text();
}

// The origin does not take extended CONNECT: the gate never allows it to the client, and a
// client that sends one anyway has that stream reset (PROTOCOL_ERROR); its other stream goes on.
TEST_F(WebSocketH2Test, WithoutTheOriginsExtendedConnectTheClientIsNotOfferedIt) {
  auto proxy = gate();
  const auto got = client(*proxy, "plain.test", plain_port_, "forced");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("alpn h2\nconnect-protocol false\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("status 0 "), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("ended rst 1"), std::string::npos) << got.output;  // PROTOCOL_ERROR
  EXPECT_NE(got.output.find("plain 200 plain ok\n"), std::string::npos) << got.output;
  // nghttp2 refuses the :protocol the gate did not allow before the codec sees the field: the
  // line says the request broke HTTP/2, not which field.
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find(
               "\"reason\":\"bad-request\",\"detail\":\"the HTTP/2 request broke the "
               "protocol") != std::string::npos;
  })) << proxy->log_text();
}

// The client resets its WebSocket's stream without a close: the origin still gets the gate's
// close 1001 and an orderly end of its stream (as a TCP close after the close frame on HTTP/1.1),
// and the connection's other stream goes on.
TEST_F(WebSocketH2Test, AClientThatResetsItsStreamLeavesTheOriginACloseAndAnEnd) {
  auto proxy = gate();
  const auto got = client(*proxy, "ws.test", port_, "reset");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("message text hello\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("plain 200 plain ok\n"), std::string::npos) << got.output;
  const std::string end = end_line(*proxy);
  EXPECT_NE(end.find("\"outcome\":\"reset\""), std::string::npos) << end;
  EXPECT_NE(end.find("the client went (its connection or stream ended) without a close frame"),
            std::string::npos)
      << end;
  std::string ends;
  for (int i = 0; i < 50 && ends.find("/echo end") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ends = read_file(folder_ + "/" + std::to_string(port_) + ".ends");
  }
  EXPECT_NE(ends.find("/echo close 1001\n/echo end\n"), std::string::npos) << ends;
}

// A down budget spent mid-WebSocket: the gate closes it 1008 "budget spent" (as on HTTP/1.1),
// the stream ends, and the end line is the budget's.
TEST_F(WebSocketH2Test, ASpentBudgetClosesTheWebSocketWith1008) {
  auto proxy = gate("ws.test down=8000B/run\n");
  const auto got = client(*proxy, "ws.test", port_, "flood");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("status 200\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("close 1008 budget spent\n"), std::string::npos) << got.output;
  // Of 20 messages of 1,004 bytes framed, those that fit in what the 200's head left.
  EXPECT_NE(got.output.find("messages 7\n"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("ended rst 0"), std::string::npos) << got.output;
  const std::string end = end_line(*proxy);
  EXPECT_NE(end.find("\"outcome\":\"budget-exhausted\""), std::string::npos) << end;
  EXPECT_NE(end.find("\"reason\":\"budget-exhausted\""), std::string::npos) << end;
  EXPECT_NE(end.find("budgets.txt:1"), std::string::npos) << end;
}

// A WebSocket on which nothing moves ends at the idle limit with 1001, as on HTTP/1.1.
TEST_F(WebSocketH2Test, AnIdleWebSocketEndsAfterTheIdleTimeout) {
  auto proxy = gate("", std::chrono::seconds(1));
  const auto got = client(*proxy, "ws.test", port_, "idle");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("close 1001 idle\n"), std::string::npos) << got.output;
  const std::string end = end_line(*proxy);
  EXPECT_NE(end.find("\"outcome\":\"idle-timeout\""), std::string::npos) << end;
}

// An origin whose 200 chose an extension the gate never offered: the client gets 502 on that
// stream, and no frame is relayed.
TEST_F(WebSocketH2Test, AnOriginsAnswerChoosingAnExtensionIsRefused) {
  auto proxy = gate();
  const auto got = client(*proxy, "ws.test", port_, "choose");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("status 502 "), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("plain 200 plain ok\n"), std::string::npos) << got.output;
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("chose the extension permessage-deflate") != std::string::npos;
  })) << proxy->log_text();
}

}  // namespace
}  // namespace sandgate::testing
