// Egress budgets (rules/budgets.hpp) against a running gate: an upload cut at the exact byte its
// budget ends, a download likewise, connections and requests refused once theirs are spent,
// report-only mode, a reload that keeps what was spent, and /metrics. Real sockets on loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "tests/fakes/http_origin.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"
#include "tests/support/eventually.hpp"

namespace sandgate::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A budgets file in a folder of its own, and a gate that reads it.
class Budgets {
 public:
  // `allow_ip`: the gate takes tunnels to IP addresses too (GOOSE_SANDBOX_ALLOW_IP).
  // `more`: further settings.
  explicit Budgets(const std::string& text, bool enforce = true, bool allow_ip = false,
                   std::function<void(settings::Settings&)> more = {}) {
    char pattern[] = "/tmp/sandgate-budgets-XXXXXX";
    folder_ = ::mkdtemp(pattern);
    path_ = folder_ + "/budgets.txt";
    write(text);
    proxy_ =
        std::make_unique<TestProxy>("", [this, enforce, allow_ip, more](settings::Settings& s) {
          s.policy.block_loopback = false;  // the origins are on loopback
          s.policy.allow_ip = allow_ip;
          s.budgets_path = path_;
          s.enforce = enforce;
          if (more) {
            more(s);
          }
        });
    proxy_->dns().set("origin.test", {"127.0.0.1"});
    proxy_->dns().set("other.test", {"127.0.0.1"});
  }
  ~Budgets() {
    proxy_.reset();
    std::filesystem::remove_all(folder_);
  }
  void write(const std::string& text) {
    const std::string temporary = path_ + ".new";
    std::ofstream(temporary) << text;
    std::filesystem::rename(temporary, path_);
  }
  TestProxy& proxy() { return *proxy_; }
  const std::string& path() const { return path_; }

 private:
  std::string folder_;
  std::string path_;
  std::unique_ptr<TestProxy> proxy_;
};

TEST(BudgetTest, AnUploadIsCutAtTheExactByteItsBudgetEnds) {
  fakes::TcpOrigin origin;  // echoes
  Budgets budgets("origin.test  up=100000B/run  #! uploads are capped\n");
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  const std::string upload(1'000'000, 'u');
  std::thread sender([&] {
    client.send(upload);
    client.shutdown_write();
  });
  bool reset = true;
  const std::string echoed = client.read_to_end(&reset, 10s);
  sender.join();
  // The origin got exactly the budget, echoed it, and the client's connection ended cleanly.
  EXPECT_EQ(origin.bytes_received(), 100000u);
  EXPECT_EQ(echoed.size(), 100000u);
  EXPECT_FALSE(reset);
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"outcome\":\"budget-exhausted\"") != std::string::npos;
  })) << proxy.log_text();
  const auto ends = log_lines_with(proxy.log_text(), {"\"event\":\"end\""});
  ASSERT_EQ(ends.size(), 1u) << proxy.log_text();
  EXPECT_THAT(ends[0], HasSubstr("\"verdict\":\"deny\""));
  EXPECT_THAT(ends[0], HasSubstr("\"reason\":\"budget-exhausted\""));
  EXPECT_THAT(ends[0], HasSubstr("\"bytes_up\":100000"));
  EXPECT_THAT(ends[0], HasSubstr("budgets.txt:1 origin.test"));
  EXPECT_THAT(ends[0], HasSubstr("uploads are capped"));

  // Spent for the run: the next tunnel is refused, nothing dialled.
  TestClient again(proxy.port());
  const ResponseHead refused = send_connect(again, "origin.test:" + std::to_string(origin.port()));
  EXPECT_EQ(refused.status, 429);
  EXPECT_THAT(refused.head + again.read_to_end(), HasSubstr("uploads are capped"));
  EXPECT_EQ(origin.bytes_received(), 100000u);
  EXPECT_EQ(origin.connections(), 1u);

  // /metrics: the limit, what was spent, what is left, the stops.
  const std::string metrics = proxy.gate().render_metrics();
  const std::string labels =
      "{rule=\"" + budgets.path() + ":1 origin.test\",kind=\"up\",window=\"run\"} ";
  EXPECT_THAT(metrics, HasSubstr("sandgate_budget_amount" + labels + "100000\n"));
  EXPECT_THAT(metrics, HasSubstr("sandgate_budget_spent" + labels + "100000\n"));
  EXPECT_THAT(metrics, HasSubstr("sandgate_budget_left" + labels + "0\n"));
  EXPECT_THAT(metrics, HasSubstr("sandgate_budget_stops_total" + labels + "2\n"));
}

TEST(BudgetTest, AnUploadThatEndsExactlyAtItsBudgetEndsNormally) {
  fakes::TcpOrigin origin;
  Budgets budgets("origin.test  up=5000B\n");
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  client.send(std::string(5000, 'x'));
  client.shutdown_write();
  bool reset = true;
  EXPECT_EQ(client.read_to_end(&reset).size(), 5000u);
  EXPECT_FALSE(reset);
  ASSERT_TRUE(proxy.wait_for_log(
      [](const std::string& log) { return log.find("\"event\":\"end\"") != std::string::npos; }));
  EXPECT_THAT(proxy.log_text(), HasSubstr("\"outcome\":\"closed\""));
}

TEST(BudgetTest, ADownloadIsCutAtItsBudgetAndTheClientGetsEveryByteOfIt) {
  fakes::TcpOrigin origin(fakes::TcpOrigin::Mode::flood);
  origin.set_flood_bytes(800'000);
  Budgets budgets("*  down=300kB/hour\n");
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  bool reset = true;
  const std::string got = client.read_to_end(&reset, 10s);
  EXPECT_EQ(got.size(), 300000u);
  EXPECT_FALSE(reset);
  client.close();
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"outcome\":\"budget-exhausted\"") != std::string::npos;
  })) << proxy.log_text();
  const auto ends = log_lines_with(proxy.log_text(), {"\"event\":\"end\""});
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_THAT(ends[0], HasSubstr("\"bytes_down\":300000"));
  EXPECT_THAT(ends[0], HasSubstr("the gate's budget of 300 kB received per hour"));
}

TEST(BudgetTest, ConnectionsBeyondTheirBudgetAreRefusedWith429) {
  fakes::TcpOrigin origin;
  Budgets budgets("origin.test connections=3/minute\n");
  TestProxy& proxy = budgets.proxy();
  const std::string target = "origin.test:" + std::to_string(origin.port());
  for (int i = 0; i < 3; ++i) {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, target).status, 200);
  }
  TestClient refused(proxy.port());
  const ResponseHead head = send_connect(refused, target);
  EXPECT_EQ(head.status, 429);
  EXPECT_THAT(head.proxy_status, HasSubstr("budget-exhausted"));
  EXPECT_THAT(head.head, HasSubstr("3 connections per minute"));
  EXPECT_TRUE(eventually([&] { return origin.connections() == 3; })) << origin.connections();
  // Another destination is not counted against it.
  TestClient other(proxy.port());
  EXPECT_EQ(send_connect(other, "other.test:" + std::to_string(origin.port())).status, 200);
}

TEST(BudgetTest, PlainHttpRequestsAndConnectionsAreCounted) {
  fakes::HttpOrigin origin(
      [](const fakes::HttpOrigin::Request&) { return fakes::HttpOrigin::Reply::fixed(200, "ok"); });
  Budgets budgets("origin.test:" + std::to_string(origin.port()) + " requests=2/run\n");
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  const std::string request = "GET http://origin.test:" + std::to_string(origin.port()) +
                              "/x HTTP/1.1\r\nHost: origin.test\r\n\r\n";
  for (int i = 0; i < 2; ++i) {
    client.send(request);
    const ResponseHead head = read_response_head(client);
    EXPECT_EQ(head.status, 200);
    client.read_exact(2 - head.body_after.size());
  }
  client.send(request);
  const ResponseHead refused = read_response_head(client);
  EXPECT_EQ(refused.status, 429);
  EXPECT_THAT(refused.proxy_status, HasSubstr("budget-exhausted"));
  EXPECT_EQ(origin.requests().size(), 2u);
}

TEST(BudgetTest, APlainRequestOrResponseThatCannotFitIsAnswered429BeforeAnyOfItMoves) {
  fakes::HttpOrigin origin([](const fakes::HttpOrigin::Request& r) {
    return fakes::HttpOrigin::Reply::fixed(200, std::string(r.target == "/big" ? 500000 : 10, 'b'));
  });
  Budgets budgets("origin.test up=20kB down=100kB\n");
  TestProxy& proxy = budgets.proxy();
  const std::string base = "http://origin.test:" + std::to_string(origin.port());
  // An upload of known length that does not fit: refused, nothing reaches the origin.
  {
    TestClient client(proxy.port());
    client.send("POST " + base +
                "/up HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 50000\r\n\r\n");
    const ResponseHead head = read_response_head(client);
    EXPECT_EQ(head.status, 429);
    EXPECT_THAT(head.proxy_status, HasSubstr("budget-exhausted"));
    EXPECT_THAT(head.head + client.read_to_end(), HasSubstr("do not fit"));
    EXPECT_EQ(origin.requests().size(), 0u);
  }
  // A response of known length that does not fit: answered 429 instead of it.
  {
    TestClient client(proxy.port());
    client.send("GET " + base + "/big HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    const ResponseHead head = read_response_head(client);
    EXPECT_EQ(head.status, 429);
    EXPECT_THAT(head.proxy_status, HasSubstr("budget-exhausted"));
  }
  // What fits goes, and is counted.
  {
    TestClient client(proxy.port());
    client.send("GET " + base + "/small HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    EXPECT_EQ(read_response_head(client).status, 200);
  }
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log_lines_with(log, {"\"event\":\"end\"", "budget-exhausted"}).size() == 2;
  })) << proxy.log_text();
  const std::string metrics = proxy.gate().render_metrics();
  EXPECT_THAT(metrics, HasSubstr("sandgate_budget_stops_total{rule=\"" + budgets.path() +
                                 ":1 origin.test\",kind=\"down\",window=\"run\"} 1\n"));
}

TEST(BudgetTest, AStreamedResponseIsCutWhereItsBudgetEnds) {
  fakes::HttpOrigin origin([](const fakes::HttpOrigin::Request&) {
    fakes::HttpOrigin::Reply reply;
    reply.head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    reply.stream_bytes = 1'000'000;
    reply.stream_chunked = true;
    return reply;
  });
  Budgets budgets("* down=300kB\n");
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  client.send("GET http://origin.test:" + std::to_string(origin.port()) +
              "/stream HTTP/1.1\r\nHost: origin.test\r\n\r\n");
  bool reset = false;
  const std::string got = client.read_to_end(&reset, 10s);
  // The head and what the reset let the client read first (a reset may discard the tail the
  // client had not read yet): never more than the budget and the chunks' framing.
  EXPECT_THAT(got, HasSubstr("200 OK"));
  EXPECT_LT(got.size(), 310000u);
  EXPECT_TRUE(reset);  // a response cut short is never made to look complete
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"outcome\":\"budget-exhausted\"") != std::string::npos;
  })) << proxy.log_text();
  // The ledger took exactly the budget: the head and the body's bytes up to it.
  EXPECT_THAT(proxy.gate().render_metrics(),
              HasSubstr("sandgate_budget_spent{rule=\"" + budgets.path() +
                        ":1 *\",kind=\"down\",window=\"run\"} 300000\n"));
}

// Review finding: bytes a client sends together with its CONNECT leave before the relay begins;
// they are taken from the budget first, so the origin still gets exactly the budget, and once it
// is spent a new tunnel (CONNECT or SOCKS5) is refused instead of dialled.
TEST(BudgetTest, BytesSentWithTheRequestAreCountedAndASpentUploadRefusesNewTunnels) {
  fakes::TcpOrigin origin;
  Budgets budgets("origin.test up=100B\n");
  TestProxy& proxy = budgets.proxy();
  const std::string target = "origin.test:" + std::to_string(origin.port());
  {
    TestClient client(proxy.port());
    client.send("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n" +
                std::string(4000, 'e'));
    EXPECT_EQ(read_response_head(client).status, 200);
    bool reset = true;
    client.read_to_end(&reset);
  }
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"outcome\":\"budget-exhausted\"") != std::string::npos;
  })) << proxy.log_text();
  EXPECT_TRUE(eventually([&] { return origin.bytes_received() == 100; }))
      << origin.bytes_received();
  EXPECT_EQ(log_lines_with(proxy.log_text(), {"\"event\":\"end\""}).size(), 1u) << proxy.log_text();
  for (int i = 0; i < 3; ++i) {
    TestClient again(proxy.port());
    const ResponseHead head = send_connect(again, target);
    EXPECT_EQ(head.status, 429);
    EXPECT_THAT(head.proxy_status, HasSubstr("budget-exhausted"));
  }
  TestClient socks(proxy.port());
  socks.send(std::string("\x05\x01\x00", 3));
  EXPECT_EQ(socks.read_exact(2), std::string("\x05\x00", 2));
  socks.send(socks5_request_for_name("origin.test", origin.port()));
  const std::string reply = socks.read_exact(2);
  ASSERT_EQ(reply.size(), 2u);
  EXPECT_EQ(reply[1], '\x02');  // not allowed by ruleset
  EXPECT_EQ(origin.connections(), 1u);
  EXPECT_EQ(origin.bytes_received(), 100u);
}

// Review finding: interim (1xx) heads are bytes towards the client like any other.
TEST(BudgetTest, InterimResponsesCountAgainstTheDownloadBudget) {
  fakes::HttpOrigin origin([](const fakes::HttpOrigin::Request&) {
    fakes::HttpOrigin::Reply reply = fakes::HttpOrigin::Reply::fixed(200, "ok");
    for (int i = 0; i < 20; ++i) {
      reply.interim +=
          "HTTP/1.1 103 Early Hints\r\nLink: <" + std::string(2000, 'h') + ">; rel=preload\r\n\r\n";
    }
    return reply;
  });
  Budgets budgets("origin.test down=10kB\n");
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  client.send("GET http://origin.test:" + std::to_string(origin.port()) +
              "/ HTTP/1.1\r\nHost: origin.test\r\n\r\n");
  const std::string got = client.read_to_end(nullptr, 10s);
  EXPECT_LT(got.size(), 12000u);
  EXPECT_THAT(got, HasSubstr("budget-exhausted"));
  EXPECT_THAT(got, ::testing::Not(HasSubstr("200 OK")));
}

// A WebSocket's 101 and the bytes behind it move before its relay begins: they are taken from
// the budget whole first (an upgrade they do not fit in goes no further), and the relay counts
// on from there.
TEST(BudgetTest, AWebSocketsFirstBytesAreTakenBeforeTheyMove) {
  fakes::HttpOrigin origin([](const fakes::HttpOrigin::Request&) {
    fakes::HttpOrigin::Reply reply;
    reply.head =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    reply.body = std::string(2000, 'g');  // a greeting behind the head
    reply.echo = true;
    return reply;
  });
  Budgets budgets("origin.test down=1000B\n");
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  client.send("GET http://origin.test:" + std::to_string(origin.port()) +
              "/chat HTTP/1.1\r\nHost: origin.test\r\nUpgrade: websocket\r\n"
              "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              "Sec-WebSocket-Version: 13\r\n\r\n");
  // Whether the greeting came with the head (then the upgrade goes no further) or after it
  // (then the relay cuts it), the client gets no more than the budget, head included.
  const std::string got = client.read_to_end();
  EXPECT_LE(got.size(), 1000u) << got.size();
  client.close();
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"outcome\":\"budget-exhausted\"") != std::string::npos;
  })) << proxy.log_text();
  EXPECT_EQ(log_lines_with(proxy.log_text(), {"\"event\":\"end\""}).size(), 1u) << proxy.log_text();
}

TEST(BudgetTest, ReportOnlyLetsTheBytesThroughAndLogsWouldDenyOnce) {
  fakes::TcpOrigin origin;
  Budgets budgets("origin.test up=1000B\n", /*enforce=*/false);
  TestProxy& proxy = budgets.proxy();
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  const std::string upload(20000, 'r');
  client.send(upload);
  EXPECT_EQ(client.read_exact(upload.size()).size(), upload.size());
  client.close();
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"event\":\"end\"") != std::string::npos;
  })) << proxy.log_text();
  const auto would = log_lines_with(proxy.log_text(), {"\"would-deny\"", "budget-exhausted"});
  EXPECT_EQ(would.size(), 1u) << proxy.log_text();
  EXPECT_EQ(origin.bytes_received(), upload.size());
}

TEST(BudgetTest, AReloadKeepsWhatWasSpentAndARaisedAmountAppliesAtOnce) {
  fakes::TcpOrigin origin;
  Budgets budgets("origin.test up=10000B\n");
  TestProxy& proxy = budgets.proxy();
  const std::string target = "origin.test:" + std::to_string(origin.port());
  auto upload = [&](std::size_t size) {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, target).status, 200);
    client.send(std::string(size, 'k'));
    client.shutdown_write();
    return client.read_to_end().size();
  };
  EXPECT_EQ(upload(6000), 6000u);
  // The same limit under a comment and another line: what was spent stays spent.
  const auto generation = proxy.gate().reloader().generation();
  budgets.write("# reloaded\nother.test up=1B\norigin.test   up=10000B\n");
  for (int i = 0; i < 100 && proxy.gate().reloader().generation() == generation; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_GT(proxy.gate().reloader().generation(), generation);
  EXPECT_EQ(upload(6000), 4000u);
  // Raised: 5000 more.
  const auto second = proxy.gate().reloader().generation();
  budgets.write("origin.test up=15000B\n");
  for (int i = 0; i < 100 && proxy.gate().reloader().generation() == second; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(upload(6000), 5000u);
  EXPECT_EQ(origin.bytes_received(), 15000u);
}

// Review finding (issue 39, 4): an address's entry counted bytes to names that lead there, but
// not connections or requests made by name. One destination identity for every kind: the
// connection or request counts against the entry of the address it was dialled at, on every
// front (CONNECT, SOCKS5, plain HTTP), refused 429 before any of its bytes move.
TEST(BudgetTest, AnAddressEntryCountsConnectionsAndRequestsMadeByName) {
  fakes::HttpOrigin origin(
      [](const fakes::HttpOrigin::Request&) { return fakes::HttpOrigin::Reply::fixed(200, "ok"); });
  Budgets budgets("127.0.0.1 connections=3 requests=2\n", true, /*allow_ip=*/true);
  TestProxy& proxy = budgets.proxy();
  const std::string port = std::to_string(origin.port());
  TestClient tunnel(proxy.port());
  EXPECT_EQ(send_connect(tunnel, "origin.test:" + port).status, 200);  // 1 connection
  TestClient socks(proxy.port());
  socks.send(std::string("\x05\x01\x00", 3));
  EXPECT_EQ(socks.read_exact(2), std::string("\x05\x00", 2));
  socks.send(socks5_request_for_name("origin.test", origin.port()));
  EXPECT_EQ(socks.read_exact(2), std::string("\x05\x00", 2));  // 2 connections
  // Plain HTTP: one connection (3), two requests, and the third request refused.
  TestClient plain(proxy.port());
  const std::string request =
      "GET http://origin.test:" + port + "/x HTTP/1.1\r\nHost: origin.test\r\n\r\n";
  for (int i = 0; i < 2; ++i) {
    plain.send(request);
    const ResponseHead head = read_response_head(plain);
    EXPECT_EQ(head.status, 200);
    plain.read_exact(2 - head.body_after.size());
  }
  plain.send(request);
  const ResponseHead third = read_response_head(plain);
  EXPECT_EQ(third.status, 429);
  EXPECT_THAT(third.head, HasSubstr("2 requests while the gate runs"));
  EXPECT_EQ(origin.requests().size(), 2u);
  // The connections are spent, by name and by address alike.
  for (const std::string& target : {"origin.test:" + port, "127.0.0.1:" + port}) {
    TestClient refused(proxy.port());
    const ResponseHead head = send_connect(refused, target);
    EXPECT_EQ(head.status, 429) << target;
    EXPECT_THAT(head.proxy_status, HasSubstr("budget-exhausted")) << target;
    EXPECT_THAT(head.head, HasSubstr("3 connections while the gate runs")) << target;
  }
  TestClient late_socks(proxy.port());
  late_socks.send(std::string("\x05\x01\x00", 3));
  EXPECT_EQ(late_socks.read_exact(2), std::string("\x05\x00", 2));
  late_socks.send(socks5_request_for_name("origin.test", origin.port()));
  const std::string reply = late_socks.read_exact(2);
  ASSERT_EQ(reply.size(), 2u);
  EXPECT_EQ(reply[1], '\x02');  // not allowed by ruleset
  EXPECT_THAT(proxy.gate().render_metrics(),
              HasSubstr("sandgate_budget_spent{rule=\"" + budgets.path() +
                        ":1 127.0.0.1\",kind=\"connections\",window=\"run\"} 3\n"));
}

// Held attack (issue 39): budget races under parallel load and reload. Clients open tunnels at
// once, half by name and half by the address its entry names, while the budgets file is
// rewritten (the same limit, so what was spent is kept): exactly the budget's connections are
// let through, whichever worker and whichever rules each was counted under.
TEST(BudgetTest, ParallelTunnelsByNameAndAddressAcrossReloadsTakeExactlyTheBudget) {
  fakes::TcpOrigin origin;
  Budgets budgets("127.0.0.1 connections=10\n", true, /*allow_ip=*/true);
  TestProxy& proxy = budgets.proxy();
  const std::string port = std::to_string(origin.port());
  constexpr int kClients = 24;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<TestClient>(proxy.port()));
  }
  std::vector<int> statuses(kClients, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      const std::string target = (i % 2 == 0 ? "origin.test:" : "127.0.0.1:") + port;
      statuses[static_cast<std::size_t>(i)] = send_connect(*clients[i], target).status;
    });
  }
  for (int i = 0; i < 3; ++i) {
    budgets.write("# reload " + std::to_string(i) + "\n127.0.0.1   connections=10\n");
    std::this_thread::sleep_for(20ms);
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 200), 10);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 429), kClients - 10);
}

// Review finding (facts F1): a tunnel to a name's address that names it in its ClientHello is
// the name's connection too. Its budgets count it once the name is known: the name's spent
// connections refuse it, and an upload through it is cut where the name's budget ends, as one
// made by name is.
TEST(BudgetTest, ATunnelToAnAddressThatNamesAHostInItsClientHelloMeetsTheHostsBudgets) {
  fakes::TcpOrigin origin;  // echoes
  Budgets budgets("origin.test connections=1 up=10kB\n", true, true,
                  [&origin](settings::Settings& s) { s.tls_ports = {origin.port()}; });
  TestProxy& proxy = budgets.proxy();
  const std::string port = std::to_string(origin.port());
  const std::string hello = client_hello_records("origin.test");

  // By address, naming origin.test: the upload stops where origin.test's budget ends.
  TestClient first(proxy.port());
  ASSERT_EQ(send_connect(first, "127.0.0.1:" + port).status, 200);
  const std::string upload(50'000, 'u');
  std::thread sender([&] {
    first.send(hello + upload);
    first.shutdown_write();
  });
  first.read_to_end(nullptr, 10s);
  sender.join();
  EXPECT_TRUE(eventually([&] { return origin.bytes_received() > 0; }));
  EXPECT_EQ(origin.bytes_received(), 10'000u);

  // Its one connection is spent: the next by-address tunnel naming it is closed before a byte
  // of it moves.
  const std::uint64_t before = origin.bytes_received();
  TestClient second(proxy.port());
  ASSERT_EQ(send_connect(second, "127.0.0.1:" + port).status, 200);
  second.send(hello);
  EXPECT_EQ(second.read_to_end(nullptr, 3s), "");
  EXPECT_EQ(origin.bytes_received(), before);
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log_lines_with(log, {"\"reason\":\"budget-exhausted\""}).size() >= 2;
  })) << proxy.log_text();
}

}  // namespace
}  // namespace sandgate::testing
