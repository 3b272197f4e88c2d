// Report-only mode (SANDGATE_ENFORCE=false) against a running gate, at every point the policy
// denies: the name (blocklist, allowlist, ports, SSH ports) for CONNECT, plain HTTP and SOCKS5; a
// resolved address; the TLS check of a tunnel; SSH in a tunnel's first bytes; a reload that
// would revoke an open tunnel. Each proceeds, its line says would-deny with the reason and rule,
// /metrics counts it under enforced="false" and /denials keeps it. Loopback, cloud metadata and
// protocol errors stay denied.
#include <gtest/gtest.h>

#include <fstream>

#include "proxy/metrics/prometheus.hpp"
#include "tests/fakes/fake_launchdarkly.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"

namespace sandgate::testing {
namespace {

void report_only(settings::Settings& s) {
  s.enforce = false;
  s.policy.block_loopback = false;  // the fake origins are on loopback
}

// The first log line holding every part, or "" (waiting up to 5 s for one).
std::string line_with(TestProxy& proxy, std::initializer_list<std::string_view> parts) {
  std::string found;
  proxy.wait_for_log([&](const std::string& log) {
    const std::vector<std::string> lines = log_lines_with(log, parts);
    if (!lines.empty()) {
      found = lines.front();
    }
    return !lines.empty();
  });
  return found;
}

std::uint64_t would_denies(TestProxy& proxy, rules::Reason reason) {
  std::uint64_t total = 0;
  for (const auto* worker : proxy.server().worker_metrics()) {
    total += worker->would_deny[rules::reason_index(reason)].get();
  }
  return total;
}

// A tunnel through the gate to the echo origin that echoes what it is sent.
void expect_echo(TestClient& client, const std::string& bytes) {
  client.send(bytes);
  EXPECT_EQ(client.read_exact(bytes.size()), bytes);
}

TEST(ReportOnly, ABlocklistedConnectProceedsAndIsLoggedAsWouldDeny) {
  fakes::TcpOrigin origin;
  TestProxy proxy("origin.test  #! use the mirror\n", report_only);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  expect_echo(client, "hello");
  const std::string line =
      line_with(proxy, {"\"verdict\":\"would-deny\"", "\"reason\":\"blocklist\"", "CONNECT"});
  ASSERT_FALSE(line.empty()) << proxy.log_text();
  EXPECT_NE(line.find("blocked.txt:1 origin.test"), std::string::npos) << line;
  EXPECT_NE(line.find("\"address\":\"127.0.0.1:"), std::string::npos) << line;
  EXPECT_EQ(would_denies(proxy, rules::Reason::blocklist), 1u);

  const auto workers = proxy.server().worker_metrics();
  const std::string metrics = metrics::render_prometheus(workers, {});
  EXPECT_NE(
      metrics.find(
          "sandgate_decisions_total{verdict=\"deny\",reason=\"blocklist\",enforced=\"false\"} 1\n"),
      std::string::npos);
  EXPECT_NE(
      metrics.find(
          "sandgate_decisions_total{verdict=\"deny\",reason=\"blocklist\",enforced=\"true\"} 0\n"),
      std::string::npos);
  // Not also counted as allowed: one decision, one line.
  EXPECT_NE(
      metrics.find(
          "sandgate_decisions_total{verdict=\"allow\",reason=\"allowed\",enforced=\"true\"} 0\n"),
      std::string::npos);
  const std::string denials = metrics::render_denials_json(workers);
  EXPECT_NE(denials.find("\"verdict\":\"would-deny\",\"reason\":\"blocklist\""), std::string::npos)
      << denials;
}

TEST(ReportOnly, PlainHttpAllowlistAndPortDenialsProceed) {
  fakes::HttpOrigin origin;
  TestProxy proxy("", [&](settings::Settings& s) {
    report_only(s);
    s.policy.allowed_ports = {1};  // the origin's port is not allowed
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send("GET http://origin.test:" + std::to_string(origin.port()) +
              "/x HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(read_response_head(client).status, 200);
  EXPECT_FALSE(
      line_with(proxy, {"\"verdict\":\"would-deny\"", "\"reason\":\"port-not-allowed\"", "GET"})
          .empty())
      << proxy.log_text();
}

TEST(ReportOnly, ASocksRequestForABlockedNameProceeds) {
  fakes::TcpOrigin origin;
  TestProxy proxy("origin.test\n", report_only);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(std::string("\x05\x01\x00", 3));
  ASSERT_EQ(client.read_exact(2), std::string("\x05\x00", 2));
  client.send(socks5_request_for_name("origin.test", origin.port()));
  const std::string reply = client.read_exact(10);
  ASSERT_EQ(reply.size(), 10u);
  EXPECT_EQ(reply[1], 0x00);  // succeeded
  expect_echo(client, "socks");
  EXPECT_FALSE(line_with(proxy, {"\"verdict\":\"would-deny\"", "\"method\":\"SOCKS5\""}).empty())
      << proxy.log_text();
}

TEST(ReportOnly, ABlocklistedResolvedAddressIsDialled) {
  fakes::TcpOrigin origin;
  TestProxy proxy("127.0.0.1\n", report_only);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  expect_echo(client, "x");
  const std::string line =
      line_with(proxy, {"\"verdict\":\"would-deny\"", "resolves to 127.0.0.1"});
  EXPECT_FALSE(line.empty()) << proxy.log_text();
}

// A kept-alive upstream carries each request of the connection: each is judged, so each of two
// requests to a blocklisted address is a would-deny line (the second used to be a plain allow).
TEST(ReportOnly, EachRequestOnAKeptAliveUpstreamIsReported) {
  fakes::HttpOrigin origin;
  TestProxy proxy("127.0.0.1\n", report_only);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  for (const char* path : {"/first", "/second"}) {
    client.pending.clear();
    client.send("GET http://origin.test:" + std::to_string(origin.port()) + path +
                " HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    ASSERT_EQ(read_response_head(client).status, 200) << path;
    client.read_until("\r\n\r\n", std::chrono::milliseconds(300));
  }
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    std::size_t count = 0;
    for (std::size_t at = log.find("resolves to 127.0.0.1"); at != std::string::npos;
         at = log.find("resolves to 127.0.0.1", at + 1)) {
      ++count;
    }
    return count >= 2;
  })) << proxy.log_text();
  EXPECT_EQ(would_denies(proxy, rules::Reason::blocklist), 2u);
}

TEST(ReportOnly, AnSniMismatchGoesThrough) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", [&](settings::Settings& s) {
    report_only(s);
    s.tls_ports = {origin.port()};
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  const std::string hello = client_hello_records("other.test");
  expect_echo(client, hello);
  EXPECT_FALSE(
      line_with(proxy, {"\"verdict\":\"would-deny\"", "\"reason\":\"sni-mismatch\""}).empty())
      << proxy.log_text();
}

TEST(ReportOnly, SshToANonGitHostInATunnelGoesThrough) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", report_only);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  expect_echo(client, "SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_FALSE(
      line_with(proxy, {"\"verdict\":\"would-deny\"", "\"reason\":\"ssh-non-git-host\""}).empty())
      << proxy.log_text();
}

TEST(ReportOnly, AReloadThatWouldRevokeATunnelOnlyReportsIt) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", report_only);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  expect_echo(client, "before");
  {
    std::ofstream out(proxy.folder() + "/blocked.txt.new");
    out << "origin.test\n";
  }
  std::rename((proxy.folder() + "/blocked.txt.new").c_str(),
              (proxy.folder() + "/blocked.txt").c_str());
  const std::string line = line_with(
      proxy, {"\"verdict\":\"would-deny\"", "\"reason\":\"blocklist\"", "since the last reload"});
  ASSERT_FALSE(line.empty()) << proxy.log_text();
  expect_echo(client, "after");  // still open
}

TEST(ReportOnly, ALaunchDarklyDenialProceedsForConnectAndPlainHttp) {
  constexpr const char* kClientId = "0123456789abcdef01234567";
  fakes::FakeLaunchDarkly fake(kClientId);
  fake.set_value("origin.test", "false");
  ::setenv("SSL_CERT_FILE", fake.ca_file().c_str(), 1);
  auto base = settings::parse_service_uri(fake.base_uri());
  ASSERT_TRUE(base.has_value());
  fakes::TcpOrigin tcp_origin;
  fakes::HttpOrigin http_origin;
  TestProxy proxy("", [&](settings::Settings& s) {
    report_only(s);
    s.launchdarkly_client_id = kClientId;
    s.ld_failover = settings::LdFailover::deny;
    s.ld_failover_given = true;
    s.ld_base_uri = *base;
    s.ld_stream_uri = *base;
    s.ld_context_key = "build-bot";
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  {
    TestClient client(proxy.port());
    ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(tcp_origin.port())).status, 200);
    expect_echo(client, "ld");
  }
  {
    TestClient client(proxy.port());
    client.send("GET http://origin.test:" + std::to_string(http_origin.port()) +
                "/ HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(read_response_head(client).status, 200);
  }
  EXPECT_FALSE(
      line_with(proxy, {"\"verdict\":\"would-deny\"", "\"reason\":\"launchdarkly\"", "CONNECT"})
          .empty())
      << proxy.log_text();
  EXPECT_FALSE(
      line_with(proxy, {"\"verdict\":\"would-deny\"", "\"reason\":\"launchdarkly\"", "GET"})
          .empty())
      << proxy.log_text();
  EXPECT_EQ(would_denies(proxy, rules::Reason::launchdarkly), 2u);
}

TEST(ReportOnly, LoopbackMetadataAndProtocolErrorsStayDenied) {
  TestProxy proxy("", [](settings::Settings& s) { s.enforce = false; });
  EXPECT_NE(proxy.log_text().find("report-only mode"), std::string::npos) << proxy.log_text();
  for (const std::string target : {"localhost:80", "127.0.0.1:80", "169.254.169.254:80",
                                   "metadata.google.internal:80", "[::1]:22", "0.0.0.0:80"}) {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, target).status, 403) << target;
  }
  {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, "no port here").status, 400);
  }
  const std::string log = proxy.log_text();
  EXPECT_EQ(log.find("\"verdict\":\"would-deny\""), std::string::npos) << log;
}

TEST(ReportOnly, IsLiveOnReloadOfTheConfigFile) {
  // enforce is a live setting: the reload table says so.
  bool found = false;
  for (const auto& row : reload::compared_settings()) {
    if (row.key == "enforce") {
      found = true;
      EXPECT_TRUE(row.live);
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace sandgate::testing
