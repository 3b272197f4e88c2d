// --unknown=ask against a running gate and its admin endpoint, over real sockets: concurrent
// clients held on one question and released by one POST /decide; each answer (once, session,
// always, deny, never) with what it leaves behind (the list files appended atomically, then
// applied by the live reload); the ask timeout and default; the token on /pending and /decide;
// a client that leaves; the drain with questions pending; plain HTTP and SOCKS5 held the same
// way; no admin endpoint: the ask default at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "connect-proxy/connect_request.hpp"
#include "proxy/ask/admin_routes.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "rules/domain_set.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kToken = "an-admin-token-of-enough-length";
// The person's own, which the agent (holding kToken in its proxy variables) does not hold.
constexpr std::string_view kAdminToken = "the-person-s-own-admin-token";

std::function<void(settings::Settings&)> asking(
    std::function<void(settings::Settings&)> more = {}) {
  return [more](settings::Settings& s) {
    s.policy.block_loopback = false;  // the fake origins are on loopback
    s.policy.unknown = rules::UnknownMode::ask;
    s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
    s.ask_timeout = std::chrono::seconds(20);
    if (more) {
      more(s);
    }
  };
}

std::uint16_t admin_port(TestProxy& proxy) {
  const std::string& address = proxy.gate().admin_address();
  return static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
}

// One request to the admin endpoint; the whole response.
std::string admin(TestProxy& proxy, const std::string& method, const std::string& path,
                  const std::string& body = {}, std::string_view token = {}) {
  TestClient client(admin_port(proxy));
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: admin\r\n";
  if (!token.empty()) {
    request += "Authorization: Bearer " + std::string(token) + "\r\n";
  }
  if (method == "POST") {
    request += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n";
  }
  client.send(request + "\r\n" + body);
  return client.read_to_end();
}

// Waits until the gate has a question for `host_port` with `waiting` requests on it.
bool wait_for_question(TestProxy& proxy, const std::string& host_port, std::size_t waiting) {
  const std::string wanted = host_port + "  " + std::to_string(waiting) + " waiting";
  for (int i = 0; i < 500; ++i) {
    if (ask::render_pending_text(proxy.gate().questions()).find(wanted) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A CONNECT sent now whose status is read on another thread.
struct Held {
  std::unique_ptr<TestClient> client;
  std::future<int> status;
};
// `fields`: more header lines, each ending in CRLF.
Held connect_later(TestProxy& proxy, const std::string& target, const std::string& fields = {}) {
  Held held{std::make_unique<TestClient>(proxy.port()), {}};
  held.client->send("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + fields +
                    "\r\n");
  TestClient* client = held.client.get();
  held.status =
      std::async(std::launch::async, [client] { return read_response_head(*client).status; });
  return held;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Ask, ConcurrentClientsWaitOnOneQuestionAndOneAnswerReleasesThem) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());
  std::vector<Held> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(connect_later(proxy, target));
  }
  ASSERT_TRUE(wait_for_question(proxy, target, 3))
      << ask::render_pending_text(proxy.gate().questions());
  const std::string pending = admin(proxy, "GET", "/pending");
  EXPECT_NE(pending.find("\"host\":\"origin.test\",\"port\":" + std::to_string(origin.port()) +
                         ",\"waiting\":3"),
            std::string::npos)
      << pending;
  for (auto& h : held) {
    EXPECT_EQ(h.status.wait_for(200ms), std::future_status::timeout);  // still held
  }
  const std::string answer =
      admin(proxy, "POST", "/decide",
            "host=origin.test&port=" + std::to_string(origin.port()) + "&answer=once&who=tester");
  EXPECT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;
  EXPECT_NE(answer.find("3 waiting request(s) decided"), std::string::npos) << answer;
  for (auto& h : held) {
    EXPECT_EQ(h.status.get(), 200);
    h.client->send("ping");
    EXPECT_EQ(h.client->read_exact(4), "ping");
  }
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("answered once by tester via sandgate decide") != std::string::npos;
  })) << proxy.log_text();
  // `once`: the next request asks again.
  auto next = connect_later(proxy, target);
  EXPECT_TRUE(wait_for_question(proxy, target, 1));
  EXPECT_NE(admin(proxy, "POST", "/decide",
                  "host=origin.test&port=" + std::to_string(origin.port()) + "&answer=deny")
                .find("HTTP/1.1 200"),
            std::string::npos);
  EXPECT_EQ(next.status.get(), 403);
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"ask-denied\"") != std::string::npos;
  }));
  const std::string metrics = proxy.gate().render_metrics();
  EXPECT_NE(metrics.find("sandgate_ask_questions_total 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("sandgate_ask_answers_total{answer=\"once\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("sandgate_ask_answers_total{answer=\"deny\"} 1\n"), std::string::npos);
}

TEST(Ask, ASessionAnswerIsRememberedForTheGatesLife) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());
  auto first = connect_later(proxy, target);
  ASSERT_TRUE(wait_for_question(proxy, target, 1));
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + std::to_string(origin.port()) + "&answer=session");
  EXPECT_EQ(first.status.get(), 200);
  TestClient again(proxy.port());
  EXPECT_EQ(send_connect(again, target).status, 200);  // no question this time
  EXPECT_NE(
      proxy.gate().render_metrics().find("sandgate_ask_answers_total{answer=\"remembered\"} 1\n"),
      std::string::npos);
}

TEST(Ask, AlwaysAppendsToTheAllowlistAndTheReloadAppliesIt) {
  fakes::TcpOrigin origin;
  std::string allowlist;
  TestProxy proxy("", asking([&allowlist](settings::Settings& s) {
                    allowlist =
                        s.blocklist_path.substr(0, s.blocklist_path.rfind('/')) + "/allowed.txt";
                    std::ofstream(allowlist) << "# the team's list\nexample.org\n";
                    s.allowlist_path = allowlist;
                  }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());
  auto held = connect_later(proxy, target);
  ASSERT_TRUE(wait_for_question(proxy, target, 1));
  const std::string answer =
      admin(proxy, "POST", "/decide",
            "host=origin.test&port=" + std::to_string(origin.port()) + "&answer=always&who=alice");
  EXPECT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;
  EXPECT_EQ(held.status.get(), 200);
  const std::string text = read_text(allowlist);
  EXPECT_TRUE(text.starts_with("# the team's list\nexample.org\n# added ")) << text;
  EXPECT_NE(text.find("by alice via sandgate decide"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\n" + target + "\n")) << text;
  // The reload makes it a rule: the policy in force allows it by the entry.
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("reloaded") != std::string::npos &&
           log.find("allowed.txt") != std::string::npos;
  })) << proxy.log_text();
  // (The reload logs before every worker has taken the new policy: wait for this one's.)
  auto host = rules::parse_host("origin.test");
  auto decision = proxy.server().current_policy()->decide(*host, origin.port());
  for (int i = 0; i < 100 && !decision.allowed(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    decision = proxy.server().current_policy()->decide(*host, origin.port());
  }
  EXPECT_TRUE(decision.allowed());
  EXPECT_FALSE(decision.unknown);
}

TEST(Ask, NeverAppendsToTheBlocklistAndDenies) {
  fakes::TcpOrigin origin;
  TestProxy proxy("# mine\n", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());
  auto held = connect_later(proxy, target);
  ASSERT_TRUE(wait_for_question(proxy, target, 1));
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + std::to_string(origin.port()) + "&answer=never");
  EXPECT_EQ(held.status.get(), 403);
  const std::string text = read_text(proxy.folder() + "/blocked.txt");
  EXPECT_TRUE(text.starts_with("# mine\n# added ")) << text;
  ASSERT_TRUE(proxy.wait_for_log(
      [](const std::string& log) { return log.find("reloaded") != std::string::npos; }));
  TestClient later(proxy.port());
  EXPECT_EQ(send_connect(later, target).status, 403);
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"blocklist\"") != std::string::npos;
  })) << proxy.log_text();
}

TEST(Ask, AlwaysWithoutAnAllowlistIsRefusedAndTheQuestionStays) {
  TestProxy proxy("", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  auto held = connect_later(proxy, "origin.test:443");
  ASSERT_TRUE(wait_for_question(proxy, "origin.test:443", 1));
  const std::string answer =
      admin(proxy, "POST", "/decide", "host=origin.test&port=443&answer=always");
  EXPECT_NE(answer.find("HTTP/1.1 409"), std::string::npos) << answer;
  EXPECT_NE(answer.find("answer `session`"), std::string::npos) << answer;
  EXPECT_TRUE(wait_for_question(proxy, "origin.test:443", 1));
  admin(proxy, "POST", "/decide", "host=origin.test&port=443&answer=deny");
  EXPECT_EQ(held.status.get(), 403);
}

TEST(Ask, NoAnswerInTimeIsTheAskDefault) {
  TestProxy proxy("",
                  asking([](settings::Settings& s) { s.ask_timeout = std::chrono::seconds(1); }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  const auto started = std::chrono::steady_clock::now();
  const ResponseHead head = send_connect(client, "origin.test:443");
  EXPECT_EQ(head.status, 403);
  EXPECT_NE(head.proxy_status.find("ask-timeout"), std::string::npos) << head.head;
  EXPECT_GE(std::chrono::steady_clock::now() - started, 900ms);
  EXPECT_TRUE(ask::render_pending_text(proxy.gate().questions()) == "no questions pending\n");
}

TEST(Ask, TheAskDefaultAllowAllowsAfterTheTimeout) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", asking([](settings::Settings& s) {
                    s.ask_timeout = std::chrono::seconds(1);
                    s.ask_default_allow = true;
                  }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  EXPECT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
}

TEST(Ask, WithoutAnAdminEndpointNobodyCanAnswer) {
  TestProxy proxy("", asking([](settings::Settings& s) { s.admin.reset(); }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  const ResponseHead head = send_connect(client, "origin.test:443");
  EXPECT_EQ(head.status, 403);
  EXPECT_NE(head.proxy_status.find("ask-unavailable"), std::string::npos) << head.head;
  EXPECT_NE(proxy.log_text().find("nobody can answer"), std::string::npos);
}

TEST(Ask, PendingAndDecideNeedTheTokenWhenOneIsSet) {
  TestProxy proxy("", asking([](settings::Settings& s) { s.token = std::string(kToken); }));
  EXPECT_NE(admin(proxy, "GET", "/pending").find("HTTP/1.1 401"), std::string::npos);
  EXPECT_NE(admin(proxy, "GET", "/pending", {}, "wrong-token-wrong-token").find("HTTP/1.1 401"),
            std::string::npos);
  EXPECT_NE(admin(proxy, "POST", "/decide", "host=a.test&answer=session").find("HTTP/1.1 401"),
            std::string::npos);
  EXPECT_NE(admin(proxy, "GET", "/pending", {}, kToken).find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(
      admin(proxy, "POST", "/decide", "host=a.test&answer=session", kToken).find("HTTP/1.1 200"),
      std::string::npos);
  // The other routes are as before.
  EXPECT_NE(admin(proxy, "GET", "/healthz").find("HTTP/1.1 200"), std::string::npos);
}

// The agent asked holds the proxy token (its proxy variables carry it): with an admin token set,
// only the admin token answers, and the proxy token is refused with a sentence naming the setting.
TEST(Ask, WithAnAdminTokenOnlyItAnswersAndTheProxyTokenIsRefused) {
  TestProxy proxy("", asking([](settings::Settings& s) {
                    s.token = std::string(kToken);
                    s.admin_token = std::string(kAdminToken);
                  }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  // The agent's CONNECT, with the proxy token it holds.
  Held held =
      connect_later(proxy, "origin.test:443",
                    "Proxy-Authorization: Basic " +
                        connect_proxy::encode_base64("agent:" + std::string(kToken)) + "\r\n");
  ASSERT_TRUE(wait_for_question(proxy, "origin.test:443", 1));

  for (std::string_view token : {std::string_view(), kToken}) {
    SCOPED_TRACE(token.empty() ? "no token" : "the proxy token");
    const std::string pending = admin(proxy, "GET", "/pending", {}, token);
    EXPECT_NE(pending.find("HTTP/1.1 401"), std::string::npos) << pending;
    EXPECT_NE(pending.find("needs the admin token (the admin_token setting"), std::string::npos)
        << pending;
    EXPECT_EQ(pending.find("origin.test"), std::string::npos) << pending;
    const std::string decided =
        admin(proxy, "POST", "/decide", "host=origin.test&port=443&answer=once", token);
    EXPECT_NE(decided.find("HTTP/1.1 401"), std::string::npos) << decided;
    EXPECT_NE(decided.find("admin_token"), std::string::npos) << decided;
  }
  EXPECT_EQ(held.status.wait_for(100ms), std::future_status::timeout) << "answered anyway";
  EXPECT_NE(ask::render_pending_text(proxy.gate().questions()).find("origin.test:443"),
            std::string::npos);

  const std::string pending = admin(proxy, "GET", "/pending", {}, kAdminToken);
  EXPECT_NE(pending.find("HTTP/1.1 200"), std::string::npos) << pending;
  EXPECT_NE(pending.find("\"host\":\"origin.test\""), std::string::npos) << pending;
  const std::string decided =
      admin(proxy, "POST", "/decide", "host=origin.test&port=443&answer=deny", kAdminToken);
  EXPECT_NE(decided.find("HTTP/1.1 200"), std::string::npos) << decided;
  EXPECT_EQ(held.status.get(), 403);
}

// An admin token alone (no proxy token) is required just the same.
TEST(Ask, AnAdminTokenWithoutAProxyTokenIsRequired) {
  TestProxy proxy("", asking([](settings::Settings& s) { s.admin_token = std::string(kToken); }));
  EXPECT_NE(admin(proxy, "GET", "/pending").find("HTTP/1.1 401"), std::string::npos);
  EXPECT_NE(admin(proxy, "GET", "/pending", {}, "not-the-admin-token-at-all").find("HTTP/1.1 401"),
            std::string::npos);
  EXPECT_NE(admin(proxy, "GET", "/pending", {}, kToken).find("HTTP/1.1 200"), std::string::npos);
  // The other routes need nothing, as before.
  EXPECT_NE(admin(proxy, "GET", "/healthz").find("HTTP/1.1 200"), std::string::npos);
}

// A reload may set, change or drop the admin token; the next request uses what is in force.
TEST(Ask, AReloadedAdminTokenAppliesToTheNextRequest) {
  TestProxy proxy("", asking([](settings::Settings& s) { s.token = std::string(kToken); }));
  EXPECT_NE(admin(proxy, "GET", "/pending", {}, kToken).find("HTTP/1.1 200"), std::string::npos);
  auto settings = std::make_shared<settings::Settings>(proxy.gate().settings());
  settings->admin_token = "an-admin-token-set-by-a-reload";
  proxy.gate().apply(proxy.gate().loaded().policy, settings);
  EXPECT_NE(admin(proxy, "GET", "/pending", {}, kToken).find("HTTP/1.1 401"), std::string::npos);
  EXPECT_NE(admin(proxy, "GET", "/pending", {}, settings->admin_token).find("HTTP/1.1 200"),
            std::string::npos);
}

// Ask mode with an admin endpoint and no admin token: one warning at start-up naming the
// settings; none once an admin token is set.
TEST(Ask, NoAdminTokenIsWarnedAboutOnce) {
  {
    TestProxy proxy("", asking([](settings::Settings& s) { s.token = std::string(kToken); }));
    const std::string log = proxy.log_text();
    const std::string_view warning = "no admin token (--admin-token, --admin-token-file";
    const auto at = log.find(warning);
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_EQ(log.find(warning, at + 1), std::string::npos) << log;
    EXPECT_NE(log.find("including an agent"), std::string::npos) << log;
    EXPECT_EQ(log.find(std::string(kToken)), std::string::npos) << "a token was logged";
  }
  {
    TestProxy proxy(
        "", asking([](settings::Settings& s) { s.admin_token = std::string(kAdminToken); }));
    EXPECT_EQ(proxy.log_text().find("no admin token"), std::string::npos) << proxy.log_text();
  }
  {
    // Not asking: nothing to answer, nothing to warn about.
    TestProxy proxy("", [](settings::Settings& s) {
      s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
    });
    EXPECT_EQ(proxy.log_text().find("no admin token"), std::string::npos) << proxy.log_text();
  }
}

TEST(Ask, AClientThatLeavesStopsWaiting) {
  TestProxy proxy("", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  {
    TestClient client(proxy.port());
    client.send("CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n");
    ASSERT_TRUE(wait_for_question(proxy, "origin.test:443", 1));
  }
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"client-closed\"") != std::string::npos &&
           log.find("waited for an answer") != std::string::npos;
  })) << proxy.log_text();
  EXPECT_EQ(ask::render_pending_text(proxy.gate().questions()), "no questions pending\n");
}

TEST(Ask, TheDrainEndsEveryWaitAndLogsIt) {
  TestProxy proxy("", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  std::vector<Held> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(connect_later(proxy, "origin.test:" + std::to_string(443 + i % 2)));
  }
  ASSERT_TRUE(wait_for_question(proxy, "origin.test:443", 2));
  ASSERT_TRUE(wait_for_question(proxy, "origin.test:444", 1));
  proxy.stop();
  for (auto& h : held) {
    EXPECT_EQ(h.status.get(), 0);  // closed without a reply
  }
  const std::string log = proxy.log_text();
  std::size_t lines = 0;
  for (auto at = log.find("\"reason\":\"shutting-down\""); at != std::string::npos;
       at = log.find("\"reason\":\"shutting-down\"", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 3u) << log;
}

TEST(Ask, PlainHttpAndSocksAreHeldTheSameWay) {
  fakes::HttpOrigin http_origin;
  fakes::TcpOrigin tcp_origin;
  TestProxy proxy("", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string http_target = "origin.test:" + std::to_string(http_origin.port());
  TestClient http(proxy.port());
  http.send("GET http://" + http_target +
            "/ HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(wait_for_question(proxy, http_target, 1));
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + std::to_string(http_origin.port()) + "&answer=once");
  EXPECT_EQ(read_response_head(http).status, 200);

  TestClient socks(proxy.port());
  socks.send(std::string("\x05\x01\x00", 3));
  ASSERT_EQ(socks.read_exact(2), std::string("\x05\x00", 2));
  socks.send(socks5_request_for_name("origin.test", tcp_origin.port()));
  const std::string socks_target = "origin.test:" + std::to_string(tcp_origin.port());
  ASSERT_TRUE(wait_for_question(proxy, socks_target, 1));
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + std::to_string(tcp_origin.port()) + "&answer=deny");
  const std::string reply = socks.read_exact(10);
  ASSERT_EQ(reply.size(), 10u);
  EXPECT_EQ(reply[1], 0x02);  // not allowed by ruleset
}

// A request no line of its host's request rules decides is asked about as a destination is
// ("allow POST origin.test:PORT/items?"): its answers stand for that method and path only,
// `always` appends the line to the request-rules file, in the host's group, and the reload makes
// it a rule; a request a line denies is not asked about.
TEST(Ask, ARequestNoRequestRuleDecidesIsAskedAboutAndAlwaysWritesItsLine) {
  fakes::HttpOrigin origin;
  std::string folder = std::string(::testing::TempDir()) + "/ask-requests-XXXXXX";
  ASSERT_NE(::mkdtemp(folder.data()), nullptr);
  const std::string rules = folder + "/requests.txt";
  std::ofstream(rules) << "allow origin.test GET\ndeny origin.test DELETE\n";
  TestProxy proxy("", asking([&rules](settings::Settings& s) { s.request_rules_path = rules; }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string port = std::to_string(origin.port());
  const std::string where = "origin.test:" + port;
  const auto send = [&](TestClient& client, const std::string& method, const std::string& path) {
    client.send(method + " http://" + where + path + " HTTP/1.1\r\nHost: " + where +
                "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  };
  // The destination first (no rule decides it either): allowed for the session.
  TestClient first(proxy.port());
  send(first, "GET", "/");
  ASSERT_TRUE(wait_for_question(proxy, where, 1));
  admin(proxy, "POST", "/decide", "host=origin.test&port=" + port + "&answer=session");
  EXPECT_EQ(read_response_head(first).status, 200);

  // POST /items: no line decides it; the question names the request.
  TestClient post(proxy.port());
  send(post, "POST", "/items");
  ASSERT_TRUE(wait_for_question(proxy, where + " POST /items", 1))
      << ask::render_pending_text(proxy.gate().questions());
  EXPECT_NE(admin(proxy, "GET", "/pending").find("\"request\":\"POST /items\""), std::string::npos);
  EXPECT_TRUE(proxy.wait_for_log([&where](const std::string& log) {
    return log.find("question #2: allow POST " + where + "/items?") != std::string::npos;
  })) << proxy.log_text();
  const std::string answered =
      admin(proxy, "POST", "/decide",
            "host=origin.test&port=" + port + "&answer=always&request=POST+%2Fitems&who=alice");
  EXPECT_NE(answered.find("HTTP/1.1 200"), std::string::npos) << answered;
  EXPECT_EQ(read_response_head(post).status, 200);
  const std::string text = read_text(rules);
  EXPECT_TRUE(text.starts_with("allow origin.test GET\ndeny origin.test DELETE\n# added ")) << text;
  EXPECT_TRUE(text.ends_with("\nallow origin.test POST /items\n")) << text;
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("reloaded") != std::string::npos &&
           log.find("requests.txt") != std::string::npos;
  })) << proxy.log_text();
  TestClient again(proxy.port());
  send(again, "POST", "/items");
  EXPECT_EQ(read_response_head(again).status, 200);  // the rule now, no question

  // Another path is asked about again; deny refuses it with its reason.
  TestClient other(proxy.port());
  send(other, "POST", "/other");
  ASSERT_TRUE(wait_for_question(proxy, where + " POST /other", 1));
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + port + "&answer=deny&request=POST+%2Fother");
  const auto refused = read_response_head(other);
  EXPECT_EQ(refused.status, 403);
  // A line that denies decides: no question.
  TestClient removal(proxy.port());
  send(removal, "DELETE", "/items");
  EXPECT_EQ(read_response_head(removal).status, 403);
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"ask-denied\"") != std::string::npos &&
           log.find("\"path\":\"/other\"") != std::string::npos &&
           log.find("\"reason\":\"request-denied\"") != std::string::npos;
  })) << proxy.log_text();
  std::filesystem::remove_all(folder);
}

// A gate asking about origin.test's requests, whose rules decide DELETE (denied) and nothing a
// GET may do, with the destination itself already allowed for the session; `send` sends one
// plain request (`fields`: more header lines, each ending in CRLF) and reads its status.
class RequestQuestions {
 public:
  explicit RequestQuestions(std::chrono::seconds ask_timeout = std::chrono::seconds(20)) {
    std::string pattern = std::string(::testing::TempDir()) + "/ask-methods-XXXXXX";
    folder_ = ::mkdtemp(pattern.data());
    rules_ = folder_ + "/requests.txt";
    std::ofstream(rules_) << "deny origin.test DELETE  #! nothing is deleted here\n"
                             "allow origin.test POST /upload\n";
    proxy_ = std::make_unique<TestProxy>("", asking([this, ask_timeout](settings::Settings& s) {
                                           s.request_rules_path = rules_;
                                           s.ask_timeout = ask_timeout;
                                         }));
    proxy_->dns().set("origin.test", {"127.0.0.1"});
    where_ = "origin.test:" + std::to_string(origin_.port());
    TestClient first(proxy_->port());
    send_to(first, "POST", "/upload");
    EXPECT_TRUE(wait_for_question(*proxy_, where_, 1));
    admin(*proxy_, "POST", "/decide",
          "host=origin.test&port=" + std::to_string(origin_.port()) + "&answer=session");
    EXPECT_EQ(read_response_head(first).status, 200);
  }
  ~RequestQuestions() {
    proxy_.reset();
    std::filesystem::remove_all(folder_);
  }

  void send_to(TestClient& client, const std::string& method, const std::string& target,
               const std::string& fields = {}) {
    client.send(method + " http://" + where_ + target + " HTTP/1.1\r\nHost: " + where_ + "\r\n" +
                fields + "Content-Length: 0\r\nConnection: close\r\n\r\n");
  }
  // A request whose status is read on another thread (it may wait on a question).
  Held send_later(const std::string& method, const std::string& target,
                  const std::string& fields = {}) {
    Held held{std::make_unique<TestClient>(proxy_->port()), {}};
    send_to(*held.client, method, target, fields);
    TestClient* client = held.client.get();
    held.status =
        std::async(std::launch::async, [client] { return read_response_head(*client).status; });
    return held;
  }
  // POST /decide for the request question `request` ("GET as PUT /items").
  std::string decide(const std::string& request, const std::string& answer) {
    std::string form;
    for (const char c : request) {
      form += c == ' ' ? std::string("+") : c == '/' ? std::string("%2F") : std::string(1, c);
    }
    return admin(*proxy_, "POST", "/decide",
                 "host=origin.test&port=" + std::to_string(origin_.port()) + "&answer=" + answer +
                     "&request=" + form);
  }

  TestProxy& proxy() { return *proxy_; }
  const std::string& where() const { return where_; }
  const std::string& rules_path() const { return rules_; }
  fakes::HttpOrigin& origin() { return origin_; }

 private:
  fakes::HttpOrigin origin_;
  std::string folder_;
  std::string rules_;
  std::string where_;
  std::unique_ptr<TestProxy> proxy_;
};

// Review finding (issue 39, 3): a request no line decides was asked about by its own method
// alone, so a method override it carried went unjudged: `once` let a DELETE through a `deny
// ... DELETE` line. A DELETE hidden behind a GET no line decides, in every shape an origin
// reads as an override, is refused by the deny line (or as a bad request) without a question.
TEST(Ask, AHiddenDeleteMeetsTheDenyLineWithoutAQuestionInEveryShape) {
  RequestQuestions gate(std::chrono::seconds(3));
  struct Shape {
    std::string fields;
    std::string query;
    int status;
  };
  const std::vector<Shape> shapes = {
      {"X-HTTP-Method-Override: DELETE\r\n", "", 403},
      {"X-HTTP-Method: DELETE\r\n", "", 403},
      {"X-Method-Override: DELETE\r\n", "", 403},
      {"X_HTTP_Method_Override: DELETE\r\n", "", 403},  // CGI and WSGI fold `_` into `-`
      {"x-http-method-override: delete\r\n", "", 403},  // any case, name and value
      {"X-HTTP-Method-Override: DELETE\r\nX-HTTP-Method-Override: DELETE\r\n", "", 403},
      {"X-HTTP-Method-Override: DELETE, GET\r\n", "", 400},  // a list: origins read the first
      {"X-HTTP-Method-Override: GET\r\nX-Method-Override: DELETE\r\n", "", 400},  // disagreeing
      {"", "?_method=DELETE", 403},
      {"", "?a=1&%5Bmethod=DEL%45TE", 403},  // PHP reads `[method` as `_method`; escapes decoded
  };
  for (const Shape& shape : shapes) {
    TestClient client(gate.proxy().port());
    gate.send_to(client, "GET", "/items" + shape.query, shape.fields);
    const ResponseHead head = read_response_head(client);
    EXPECT_EQ(head.status, shape.status) << shape.fields << shape.query;
    EXPECT_THAT(head.proxy_status,
                ::testing::HasSubstr(shape.status == 403 ? "request-denied" : "bad-request"))
        << shape.fields << shape.query;
    EXPECT_EQ(ask::render_pending_text(gate.proxy().gate().questions()), "no questions pending\n")
        << shape.fields << shape.query;
  }
  EXPECT_EQ(gate.origin().requests().size(), 1u);  // the first POST alone
}

// Review finding (facts F3): a request waiting on its question was let through by `once`
// after a reload had added a line denying it. A decision made before a wait is not read back
// after it: the request is judged again by the rules in force when the answer came.
TEST(Ask, ARequestWaitingOnAQuestionMeetsTheRulesAReloadBroughtMeanwhile) {
  RequestQuestions gate;
  TestProxy& proxy = gate.proxy();
  auto other = gate.send_later("GET", "/other");
  ASSERT_TRUE(wait_for_question(proxy, gate.where() + " GET /other", 1))
      << ask::render_pending_text(proxy.gate().questions());
  std::ofstream(gate.rules_path(), std::ios::app) << "deny origin.test GET /other\n";
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("reloaded") != std::string::npos &&
           log.find("requests.txt") != std::string::npos;
  })) << proxy.log_text();
  // A request a line denies is never asked about: the question is withdrawn, the rules decide.
  ASSERT_EQ(other.status.wait_for(5s), std::future_status::ready)
      << ask::render_pending_text(proxy.gate().questions());
  EXPECT_EQ(other.status.get(), 403);
  EXPECT_EQ(ask::render_pending_text(proxy.gate().questions()), "no questions pending\n");
  EXPECT_EQ(gate.origin().requests().size(), 1u);  // the first POST alone

  // A reload that leaves a waiting request to a person keeps its question, and the answer
  // stands for it; the new rules still judge it (here its destination stays allowed).
  auto more = gate.send_later("GET", "/more");
  ASSERT_TRUE(wait_for_question(proxy, gate.where() + " GET /more", 1));
  std::ofstream(gate.rules_path(), std::ios::app) << "deny origin.test PUT /elsewhere\n";
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log_lines_with(log, {"reloaded", "requests.txt"}).size() >= 2;
  })) << proxy.log_text();
  std::this_thread::sleep_for(200ms);  // every worker has taken the new rules
  EXPECT_EQ(more.status.wait_for(100ms), std::future_status::timeout);
  ASSERT_TRUE(wait_for_question(proxy, gate.where() + " GET /more", 1));
  EXPECT_NE(gate.decide("GET /more", "once").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(more.status.get(), 200);
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log_lines_with(log, {"\"reason\":\"request-denied\"", "\"path\":\"/other\""}).size() ==
           1;
  })) << proxy.log_text();
}

// Review finding (facts F5): a tunnel to an address whose ClientHello names a host no rule
// decides was refused unknown-destination although a person had allowed both: the name's
// decision did not go through the admission's stages. It is asked about (or remembered) as any
// destination is.
TEST(Ask, AClientHellosNameIsAskedAboutAsAnyDestinationIs) {
  fakes::TcpOrigin origin;  // echoes
  TestProxy proxy("", asking([&origin](settings::Settings& s) {
                    s.policy.allow_ip = true;
                    s.tls_ports = {origin.port()};
                  }));
  const std::string port = std::to_string(origin.port());
  const std::string hello = client_hello_records("named.test");
  for (int round = 0; round < 2; ++round) {
    Held held = connect_later(proxy, "127.0.0.1:" + port);
    if (round == 0) {
      ASSERT_TRUE(wait_for_question(proxy, "127.0.0.1:" + port, 1));
      admin(proxy, "POST", "/decide", "host=127.0.0.1&port=" + port + "&answer=session");
    }
    ASSERT_EQ(held.status.get(), 200);
    held.client->send(hello);
    if (round == 0) {
      ASSERT_TRUE(wait_for_question(proxy, "named.test:" + port, 1))
          << ask::render_pending_text(proxy.gate().questions()) << proxy.log_text();
      admin(proxy, "POST", "/decide", "host=named.test&port=" + port + "&answer=session");
    }
    // Allowed by the answer, then by its memory: the hello reaches the origin and comes back.
    EXPECT_EQ(held.client->read_exact(hello.size(), 5s), hello) << round << proxy.log_text();
  }
}

// A question is about the effective request: the methods it may act as are shown ("GET as PUT
// /items"), and an answer stands for exactly that set: a `session` allows that set again, and a
// GET with another or an added override, or none, is asked about afresh. `always` cannot write
// a line for several methods (it would stand for each alone too) and says so.
TEST(Ask, AnAnswerStandsForExactlyTheMethodsTheRequestMayActAs) {
  RequestQuestions gate;
  TestProxy& proxy = gate.proxy();
  const std::string& where = gate.where();

  auto put = gate.send_later("GET", "/items", "X-HTTP-Method-Override: put\r\n");
  ASSERT_TRUE(wait_for_question(proxy, where + " GET as PUT /items", 1))
      << ask::render_pending_text(proxy.gate().questions());
  EXPECT_TRUE(proxy.wait_for_log([&where](const std::string& log) {
    return log.find("allow GET as PUT " + where + "/items?") != std::string::npos;
  })) << proxy.log_text();
  const std::string always = gate.decide("GET as PUT /items", "always");
  EXPECT_EQ(always.find("HTTP/1.1 200"), std::string::npos) << always;
  EXPECT_NE(always.find("several methods"), std::string::npos) << always;
  EXPECT_NE(gate.decide("GET as PUT /items", "session").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(put.status.get(), 200);
  {
    TestClient again(proxy.port());  // the same set: remembered
    gate.send_to(again, "GET", "/items", "X-HTTP-Method-Override: PUT\r\n");
    EXPECT_EQ(read_response_head(again).status, 200);
  }

  // Another override, an added one, or none: another set, asked about again.
  auto patch = gate.send_later("GET", "/items", "X-HTTP-Method-Override: PATCH\r\n");
  ASSERT_TRUE(wait_for_question(proxy, where + " GET as PATCH /items", 1))
      << ask::render_pending_text(proxy.gate().questions());
  gate.decide("GET as PATCH /items", "deny");
  EXPECT_EQ(patch.status.get(), 403);
  auto both = gate.send_later("GET", "/items?_method=PATCH", "X-HTTP-Method-Override: PUT\r\n");
  ASSERT_TRUE(wait_for_question(proxy, where + " GET as PATCH or PUT /items", 1))
      << ask::render_pending_text(proxy.gate().questions());
  gate.decide("GET as PATCH or PUT /items", "deny");
  EXPECT_EQ(both.status.get(), 403);
  auto plain = gate.send_later("GET", "/items");
  ASSERT_TRUE(wait_for_question(proxy, where + " GET /items", 1))
      << ask::render_pending_text(proxy.gate().questions());
  gate.decide("GET /items", "deny");
  EXPECT_EQ(plain.status.get(), 403);

  // The methods the first answer stood for reached the origin; nothing else did.
  const auto requests = gate.origin().requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].field("X-HTTP-Method-Override"), "put");
  EXPECT_EQ(requests[2].field("X-HTTP-Method-Override"), "PUT");
}

// Waits for a spent budget's question and returns it.
std::optional<ask::PendingQuestion> wait_for_budget_question(TestProxy& proxy) {
  for (int i = 0; i < 500; ++i) {
    for (const ask::PendingQuestion& question : proxy.gate().questions().pending()) {
      if (question.budget) {
        return question;
      }
    }
    std::this_thread::sleep_for(10ms);
  }
  return std::nullopt;
}

// Review finding (issue 39, 7): a 20 kB upload against `up=2kB` asked for "2 kB more sent", and
// a yes granted 2 kB and refused the request anyway. The question says what the waiting request
// needs and asks for what it lacks; a yes sends it. A `session` answer stands for the limit,
// whatever a later request lacks.
TEST(Ask, ABudgetQuestionAsksForWhatTheRequestNeedsAndAYesSendsIt) {
  fakes::HttpOrigin origin;
  std::string folder = std::string(::testing::TempDir()) + "/ask-budget-XXXXXX";
  ASSERT_NE(::mkdtemp(folder.data()), nullptr);
  const std::string budgets = folder + "/budgets.txt";
  std::ofstream(budgets) << "origin.test up=2kB\n";
  TestProxy proxy("", asking([&budgets](settings::Settings& s) { s.budgets_path = budgets; }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::uint16_t port = origin.port();
  const std::string where = "origin.test:" + std::to_string(port);
  const auto upload_later = [&](std::size_t size) {
    Held held{std::make_unique<TestClient>(proxy.port()), {}};
    held.client->send("POST http://" + where + "/up HTTP/1.1\r\nHost: " + where +
                      "\r\nContent-Length: " + std::to_string(size) +
                      "\r\nConnection: close\r\n\r\n" + std::string(size, 'u'));
    TestClient* client = held.client.get();
    held.status =
        std::async(std::launch::async, [client] { return read_response_head(*client).status; });
    return held;
  };
  const auto answer = [&](const ask::PendingQuestion& question, ask::Answer given) {
    return proxy.gate().questions().answer("origin.test", port, given, "tester", question.request);
  };

  auto first = upload_later(20000);
  ASSERT_TRUE(wait_for_question(proxy, where, 1));  // the destination's own question first
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + std::to_string(port) + "&answer=session");
  const auto asked = wait_for_budget_question(proxy);
  ASSERT_TRUE(asked) << ask::render_pending_text(proxy.gate().questions());
  EXPECT_THAT(asked->request, ::testing::HasSubstr("more sent (the waiting transfer needs 20."));
  EXPECT_THAT(asked->request, ::testing::HasSubstr("kB, 2 kB left; "));
  EXPECT_THAT(asked->request, ::testing::HasSubstr("budgets.txt:1 origin.test: 2 kB per run)"));
  ASSERT_TRUE(answer(*asked, ask::Answer::once));
  EXPECT_EQ(first.status.get(), 200);
  ASSERT_TRUE(origin.wait_for_requests(1));
  EXPECT_EQ(origin.requests()[0].body.size(), 20000u);

  // `session`: this and every later request the limit cannot hold, whatever each lacks.
  auto second = upload_later(30000);
  const auto again = wait_for_budget_question(proxy);
  ASSERT_TRUE(again) << ask::render_pending_text(proxy.gate().questions());
  ASSERT_TRUE(answer(*again, ask::Answer::session));
  EXPECT_EQ(second.status.get(), 200);
  auto third = upload_later(40000);
  EXPECT_EQ(third.status.get(), 200);
  EXPECT_EQ(ask::render_pending_text(proxy.gate().questions()), "no questions pending\n");
  ASSERT_TRUE(origin.wait_for_requests(3));
  EXPECT_EQ(origin.requests()[2].body.size(), 40000u);
  std::filesystem::remove_all(folder);
}

// Review finding (facts F2): with `requests=1` spent, five requests waiting on the one budget
// question were each granted the amount by a single `once`, and all five went through. The
// answer's grant is applied once for the question; the waiters compete for it, and those it does
// not fit are asked again (here denied).
TEST(Ask, OneOnceToABudgetQuestionGrantsItsAmountOnceHoweverManyWait) {
  fakes::HttpOrigin origin;
  std::string folder = std::string(::testing::TempDir()) + "/ask-budget-once-XXXXXX";
  ASSERT_NE(::mkdtemp(folder.data()), nullptr);
  const std::string budgets = folder + "/budgets.txt";
  std::ofstream(budgets) << "origin.test requests=1\n";
  TestProxy proxy("", asking([&budgets](settings::Settings& s) { s.budgets_path = budgets; }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::uint16_t port = origin.port();
  const std::string where = "origin.test:" + std::to_string(port);
  const auto get_later = [&] {
    Held held{std::make_unique<TestClient>(proxy.port()), {}};
    held.client->send("GET http://" + where + "/x HTTP/1.1\r\nHost: " + where +
                      "\r\nConnection: close\r\n\r\n");
    TestClient* client = held.client.get();
    held.status =
        std::async(std::launch::async, [client] { return read_response_head(*client).status; });
    return held;
  };
  auto first = get_later();  // the destination's question, then the one request the limit holds
  ASSERT_TRUE(wait_for_question(proxy, where, 1));
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + std::to_string(port) + "&answer=session");
  ASSERT_EQ(first.status.get(), 200);

  std::vector<Held> held;
  for (int i = 0; i < 5; ++i) {
    held.push_back(get_later());
  }
  std::optional<ask::PendingQuestion> asked;
  for (int i = 0; i < 500 && !(asked && asked->waiting == 5); ++i) {
    std::this_thread::sleep_for(10ms);
    asked = wait_for_budget_question(proxy);
  }
  ASSERT_TRUE(asked && asked->waiting == 5) << ask::render_pending_text(proxy.gate().questions());
  ASSERT_TRUE(proxy.gate().questions().answer("origin.test", port, ask::Answer::once, "tester",
                                              asked->request));
  // Those the one grant does not fit are asked again: deny every later question.
  int allowed = 0;
  for (auto& h : held) {
    while (h.status.wait_for(50ms) != std::future_status::ready) {
      for (const ask::PendingQuestion& again : proxy.gate().questions().pending()) {
        (void)proxy.gate().questions().answer("origin.test", port, ask::Answer::deny, "tester",
                                              again.request);
      }
    }
    const int status = h.status.get();
    EXPECT_TRUE(status == 200 || status == 429) << status;
    allowed += status == 200 ? 1 : 0;
  }
  EXPECT_EQ(allowed, 1);
  EXPECT_EQ(origin.requests().size(), 2u);
  std::filesystem::remove_all(folder);
}

// Review finding (facts F3): a reload that denies a destination decides the requests waiting on
// its spent budget's question: the question is withdrawn and the new rules refuse them, rather
// than a later `once` letting them through.
TEST(Ask, AReloadThatDeniesADestinationWithdrawsItsBudgetQuestion) {
  fakes::HttpOrigin origin;
  std::string folder = std::string(::testing::TempDir()) + "/ask-budget-reload-XXXXXX";
  ASSERT_NE(::mkdtemp(folder.data()), nullptr);
  const std::string budgets = folder + "/budgets.txt";
  std::ofstream(budgets) << "origin.test requests=1\n";
  TestProxy proxy("", asking([&budgets](settings::Settings& s) { s.budgets_path = budgets; }));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::uint16_t port = origin.port();
  const std::string where = "origin.test:" + std::to_string(port);
  const auto get_later = [&] {
    Held held{std::make_unique<TestClient>(proxy.port()), {}};
    held.client->send("GET http://" + where + "/x HTTP/1.1\r\nHost: " + where +
                      "\r\nConnection: close\r\n\r\n");
    TestClient* client = held.client.get();
    held.status =
        std::async(std::launch::async, [client] { return read_response_head(*client).status; });
    return held;
  };
  auto first = get_later();
  ASSERT_TRUE(wait_for_question(proxy, where, 1));
  admin(proxy, "POST", "/decide",
        "host=origin.test&port=" + std::to_string(port) + "&answer=session");
  ASSERT_EQ(first.status.get(), 200);
  auto second = get_later();
  ASSERT_TRUE(wait_for_budget_question(proxy))
      << ask::render_pending_text(proxy.gate().questions());

  std::vector<rules::LoadIssue> issues;
  auto blocked = rules::DomainSet::parse("origin.test\n", "/reloaded/blocked.txt", issues);
  proxy.server().publish(std::make_shared<const rules::Policy>(proxy.settings().policy,
                                                               std::move(blocked), std::nullopt));
  ASSERT_EQ(second.status.wait_for(5s), std::future_status::ready)
      << ask::render_pending_text(proxy.gate().questions());
  EXPECT_EQ(second.status.get(), 403);
  EXPECT_EQ(ask::render_pending_text(proxy.gate().questions()), "no questions pending\n");
  EXPECT_EQ(origin.requests().size(), 1u);
  std::filesystem::remove_all(folder);
}

TEST(Ask, RulesStillDecideWhatTheyDecide) {
  fakes::TcpOrigin origin;
  TestProxy proxy("blocked.test\n",
                  asking([](settings::Settings& s) { s.policy.block_loopback = true; }));
  proxy.dns().set("blocked.test", {"127.0.0.1"});
  for (const std::string target : {"blocked.test:443", "localhost:80", "169.254.169.254:80"}) {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, target).status, 403) << target;
  }
  EXPECT_EQ(ask::render_pending_text(proxy.gate().questions()), "no questions pending\n");
}

// Holding kMaxQuestions questions open must not turn an `allow` ask default into an allow at
// once for the next destination: past the bound a request is denied, unasked.
TEST(Ask, PastTheQuestionBoundIsDeniedEvenWithAnAllowDefault) {
  TestProxy proxy("", asking([](settings::Settings& s) { s.ask_default_allow = true; }));
  std::vector<Held> held;
  for (std::size_t i = 0; i < ask::QuestionBoard::kMaxQuestions; ++i) {
    held.push_back(connect_later(proxy, "h" + std::to_string(i) + ".test:443"));
  }
  for (std::size_t i = 0; i < ask::QuestionBoard::kMaxQuestions; ++i) {
    ASSERT_TRUE(wait_for_question(proxy, "h" + std::to_string(i) + ".test:443", 1)) << i;
  }
  TestClient client(proxy.port());
  const ResponseHead head = send_connect(client, "one-more.test:443");
  EXPECT_EQ(head.status, 403) << head.head;
  EXPECT_NE(head.proxy_status.find("ask-unavailable"), std::string::npos) << head.head;
  EXPECT_NE(proxy.log_text().find("questions are pending; it is denied"), std::string::npos);
  proxy.gate().questions().close();  // release the held clients
  for (auto& h : held) {
    h.status.wait();
  }
}

// One admin request with the given extra header lines; the whole response.
std::string admin_with(TestProxy& proxy, const std::string& host, const std::string& headers,
                       const std::string& body) {
  TestClient client(admin_port(proxy));
  client.send("POST /decide HTTP/1.1\r\nHost: " + host + "\r\n" + headers +
              "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n" + body);
  return client.read_to_end();
}

// Without a token, a web page must not answer for the person: a cross-site form POST (Origin),
// a fetch from a secure context (Sec-Fetch-Site), a name rebound to 127.0.0.1 (a domain in Host).
TEST(Ask, AWebPageCannotAnswerThroughTheBrowser) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", asking());
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());
  auto held = connect_later(proxy, target);
  ASSERT_TRUE(wait_for_question(proxy, target, 1));
  const std::string body =
      "host=origin.test&port=" + std::to_string(origin.port()) + "&answer=session";
  const std::string local = "127.0.0.1:" + std::to_string(admin_port(proxy));
  for (const auto& [host, headers] : std::vector<std::pair<std::string, std::string>>{
           {local, "Origin: http://evil.example\r\n"},
           {local, "Origin: null\r\n"},
           {local, "Sec-Fetch-Site: cross-site\r\n"},
           {"rebound.evil.example:" + std::to_string(admin_port(proxy)), ""},
       }) {
    const std::string reply = admin_with(proxy, host, headers, body);
    EXPECT_NE(reply.find("HTTP/1.1 403"), std::string::npos) << host << " " << headers << reply;
  }
  EXPECT_EQ(held.status.wait_for(200ms), std::future_status::timeout);  // still asked
  // The gate's own CLI: an address, or localhost, in Host; no browser headers.
  EXPECT_NE(
      admin_with(proxy, "localhost:1", "", "host=other.test&answer=session").find("HTTP/1.1 200"),
      std::string::npos);
  EXPECT_NE(admin_with(proxy, local, "", body).find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(held.status.get(), 200);
}

}  // namespace
}  // namespace sandgate::testing
