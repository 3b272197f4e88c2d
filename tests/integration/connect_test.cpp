// CONNECT through a real in-process sandgate on loopback: allowed and denied tunnels with the
// right status and Proxy-Status, address checks on what names resolve to, upstream failures,
// half-close both ways, bytes after the head, upstream reset, limits and the drain.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"

namespace sandgate::testing {
namespace {

using fakes::TcpOrigin;

// A proxy whose policy lets the tests reach origins on loopback by name.
void allow_loopback(settings::Settings& s) { s.policy.block_loopback = false; }

std::string target(std::string_view host, std::uint16_t port) {
  return std::string(host) + ":" + std::to_string(port);
}

TEST(ConnectTunnel, AllowedNameTunnelsAndEchoes) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});

  TestClient client(proxy.port());
  auto head = send_connect(client, target("origin.test", origin.port()));
  ASSERT_EQ(head.status, 200) << head.head;
  EXPECT_EQ(head.head, "HTTP/1.1 200 Connection Established\r\n\r\n");
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");

  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"verdict\":\"allow\"") != std::string::npos &&
           log.find("\"host\":\"origin.test\"") != std::string::npos &&
           log.find("\"address\":\"127.0.0.1:") != std::string::npos;
  })) << proxy.log_text();
}

// The decision and end lines name the client by the address and port its connection came from
// (taken from the accept, not asked of the socket later).
TEST(ConnectTunnel, LogNamesTheClientByItsAddressAndPort) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});

  TestClient client(proxy.port());
  auto head = send_connect(client, target("origin.test", origin.port()));
  ASSERT_EQ(head.status, 200) << head.head;
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");
  const std::uint16_t client_port = client.local_port();
  client.close();
  const std::string who = "\"client\":\"127.0.0.1:" + std::to_string(client_port) + "\"";
  EXPECT_TRUE(proxy.wait_for_log([&who](const std::string& log) {
    return log.find("\"event\":\"end\"") != std::string::npos && log.find(who) != std::string::npos;
  })) << who
      << "\n"
      << proxy.log_text();
}

TEST(ConnectTunnel, BlocklistedHostGets403WithProxyStatus) {
  TcpOrigin origin;
  TestProxy proxy("evil.test   # inline comment\n", allow_loopback);
  proxy.dns().set("api.evil.test", {"127.0.0.1"});

  TestClient client(proxy.port());
  auto head = send_connect(client, target("API.Evil.test.", origin.port()));
  EXPECT_EQ(head.status, 403) << head.head;
  EXPECT_NE(head.proxy_status.find("sandgate; error=http_request_denied"), std::string::npos);
  EXPECT_NE(head.proxy_status.find("details=\"blocklist: api.evil.test is blocked"),
            std::string::npos)
      << head.proxy_status;
  const std::string body = client.read_to_end();
  EXPECT_NE(body.find("refused (blocklist)"), std::string::npos) << body;
  EXPECT_EQ(origin.connections(), 0u);
  EXPECT_EQ(proxy.dns().query_count("api.evil.test"), 0u) << "a denied name is never looked up";
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"blocklist\"") != std::string::npos &&
           log.find("blocked.txt:1 evil.test") != std::string::npos;
  })) << proxy.log_text();
}

struct ResolvedCase {
  const char* name;
  std::vector<std::string> answers;
  const char* reason;
};

class ResolvedAddressTest : public ::testing::TestWithParam<ResolvedCase> {};

// Names that resolve inward are refused before any connection is made, whatever else they
// resolve to.
TEST_P(ResolvedAddressTest, DeniedBeforeDialling) {
  const auto& param = GetParam();
  TcpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_private = true; });
  proxy.dns().set("inward.test", param.answers);

  TestClient client(proxy.port());
  auto head = send_connect(client, target("inward.test", origin.port()));
  EXPECT_EQ(head.status, 403) << head.head;
  EXPECT_NE(head.proxy_status.find("error=destination_ip_prohibited"), std::string::npos)
      << head.proxy_status;
  EXPECT_NE(head.proxy_status.find(std::string("details=\"") + param.reason + ":"),
            std::string::npos)
      << head.proxy_status;
  EXPECT_EQ(origin.connections(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Answers, ResolvedAddressTest,
    ::testing::Values(ResolvedCase{"loopback", {"127.0.0.1"}, "loopback"},
                      ResolvedCase{"loopback_v6", {"::1"}, "loopback"},
                      ResolvedCase{"unspecified", {"0.0.0.0"}, "loopback"},
                      ResolvedCase{"mapped_loopback", {"::ffff:127.0.0.1"}, "loopback"},
                      ResolvedCase{"metadata", {"169.254.169.254"}, "metadata-address"},
                      ResolvedCase{"metadata_v6", {"fd00:ec2::254"}, "metadata-address"},
                      ResolvedCase{"link_local", {"169.254.10.1"}, "metadata-address"},
                      ResolvedCase{"private", {"10.1.2.3"}, "private-address"},
                      ResolvedCase{"cgnat", {"100.64.0.1"}, "private-address"},
                      ResolvedCase{"mixed", {"93.184.216.34", "127.0.0.1"}, "loopback"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ConnectTunnel, IpLiteralDeniedUnlessAllowed) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  TestClient client(proxy.port());
  auto head = send_connect(client, target("127.0.0.1", origin.port()));
  EXPECT_EQ(head.status, 403);
  EXPECT_NE(head.proxy_status.find("details=\"ip-address:"), std::string::npos);
}

TEST(ConnectTunnel, AlternateLoopbackSpellingsDenied) {
  TestProxy proxy("", [](settings::Settings& s) { s.policy.allow_ip = true; });
  for (const char* spelling :
       {"127.1:80", "2130706433:80", "0x7f.1:80", "0177.0.0.1:80", "0.0.0.0:80",
        "[::ffff:127.0.0.1]:80", "[::]:80", "localhost:80", "foo.localhost:80"}) {
    TestClient client(proxy.port());
    auto head = send_connect(client, spelling);
    EXPECT_EQ(head.status, 403) << spelling;
    EXPECT_NE(head.proxy_status.find("details=\"loopback:"), std::string::npos) << spelling;
  }
}

TEST(ConnectTunnel, MalformedTargetsGet400) {
  TestProxy proxy("", allow_loopback);
  for (const char* bad :
       {"evil.com@github.com:443", "github.com/.attacker.example:22", "example.com",
        "example.com:0443", "example.com:99999", "example.com:0", "[::1:443", "exa%6dple.com:443",
        "a..b:443", "example.com:443/path", "::1:443"}) {
    TestClient client(proxy.port());
    auto head = send_connect(client, bad);
    EXPECT_EQ(head.status, 400) << bad << "\n" << head.head;
    EXPECT_NE(head.proxy_status.find("details=\"invalid-host:"), std::string::npos) << bad;
  }
}

TEST(ConnectTunnel, SshPortOnlyForGitHosts) {
  TcpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.policy.ssh_ports = {22, 2222, 7999};
  });
  TestClient client(proxy.port());
  auto head = send_connect(client, "example.test:22");
  EXPECT_EQ(head.status, 403);
  EXPECT_NE(head.proxy_status.find("details=\"ssh-non-git-host:"), std::string::npos);
}

TEST(ConnectUpstream, NxdomainIs502DnsError) {
  TestProxy proxy;
  TestClient client(proxy.port());
  auto head = send_connect(client, "missing.test:443");
  EXPECT_EQ(head.status, 502);
  EXPECT_NE(head.proxy_status.find("error=dns_error"), std::string::npos) << head.proxy_status;
}

TEST(ConnectUpstream, DnsTimeoutIs504) {
  TestProxy proxy("", [](settings::Settings& s) { s.dns_timeout = std::chrono::seconds(1); });
  proxy.dns().set("slow.test", {"93.184.216.34"});
  proxy.dns().set_drop("slow.test", true);
  TestClient client(proxy.port());
  auto head = send_connect(client, "slow.test:443");
  EXPECT_EQ(head.status, 504);
  EXPECT_NE(head.proxy_status.find("error=dns_timeout"), std::string::npos) << head.proxy_status;
}

TEST(ConnectUpstream, RefusedIs502) {
  // A port that was just free: nothing listens there.
  std::uint16_t closed_port = 0;
  {
    TcpOrigin origin;
    closed_port = origin.port();
  }
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  auto head = send_connect(client, target("origin.test", closed_port));
  EXPECT_EQ(head.status, 502);
  EXPECT_NE(head.proxy_status.find("error=connection_refused"), std::string::npos);
}

TEST(ConnectUpstream, ConnectTimeoutIs504) {
  // A listener whose accept queue is full drops further SYNs, so connecting to it hangs.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t length = sizeof address;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const std::uint16_t port = ntohs(address.sin_port);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.connect_timeout = std::chrono::seconds(1);
  });
  proxy.dns().set("blackhole.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  auto head = send_connect(client, target("blackhole.test", port));
  EXPECT_EQ(head.status, 504) << head.head;
  EXPECT_NE(head.proxy_status.find("error=connection_timeout"), std::string::npos);
  for (int fd : fillers) {
    ::close(fd);
  }
  ::close(listener);
}

TEST(ConnectRelay, BytesAfterTheHeadAreForwarded) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  const std::string t = target("origin.test", origin.port());
  client.send("CONNECT " + t + " HTTP/1.1\r\nHost: " + t + "\r\n\r\nearly-bytes");
  auto head = read_response_head(client);
  ASSERT_EQ(head.status, 200);
  client.pending = head.body_after;
  EXPECT_EQ(client.read_exact(11), "early-bytes");
}

TEST(ConnectRelay, ClientHalfCloseStillDeliversTheReply) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin.port())).status, 200);
  const std::string payload(300000, 'p');
  client.send(payload);
  client.shutdown_write();
  bool reset = true;
  EXPECT_EQ(client.read_to_end(&reset).size(), payload.size());
  EXPECT_FALSE(reset);
}

TEST(ConnectRelay, OriginHalfCloseStillCarriesClientData) {
  TcpOrigin origin(TcpOrigin::Mode::flood);
  origin.set_flood_bytes(1 << 20);
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin.port())).status, 200);
  // The origin sends its data and half-closes; the client's later bytes must still arrive.
  EXPECT_EQ(client.read_exact(1 << 20, std::chrono::seconds(10)).size(), 1u << 20);
  client.send("after-eof");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (origin.bytes_received() < 9 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(origin.bytes_received(), 9u);
}

TEST(ConnectRelay, UpstreamResetResetsClientWithoutInjectedBytes) {
  TcpOrigin origin(TcpOrigin::Mode::reset);
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin.port())).status, 200);
  client.send("trigger");
  bool reset = false;
  const std::string after = client.read_to_end(&reset);
  EXPECT_EQ(after, "") << "the proxy must never write into an established tunnel";
  EXPECT_TRUE(reset);
}

TEST(ConnectRelay, Ipv6ClientAndOrigin) {
  TcpOrigin origin(TcpOrigin::Mode::echo, TcpOrigin::Family::v6);
  TestProxy proxy("", [](settings::Settings& s) {
    s.listen = settings::ListenAddress{settings::TcpEndpoint{"::1", 0}};
    s.policy.block_loopback = false;
    s.policy.allow_ip = true;
  });
  TestClient client(proxy.port(), /*ipv6=*/true);
  auto head = send_connect(client, target("[::1]", origin.port()));
  ASSERT_EQ(head.status, 200) << head.head;
  client.send("v6");
  EXPECT_EQ(client.read_exact(2), "v6");
}

TEST(ConnectLimits, OversizedHeadGets431) {
  TestProxy proxy;
  TestClient client(proxy.port());
  client.send("CONNECT a.test:443 HTTP/1.1\r\nX-Big: " + std::string(20000, 'x') + "\r\n\r\n");
  EXPECT_EQ(read_response_head(client).status, 431);
}

TEST(ConnectLimits, SlowHeadTimesOutWith408) {
  TestProxy proxy("", [](settings::Settings& s) { s.head_timeout = std::chrono::seconds(1); });
  TestClient client(proxy.port());
  client.send("CONNECT a.test:443 HTTP/1.1\r\n");  // and never the end of the head
  EXPECT_EQ(read_response_head(client).status, 408);
}

TEST(ConnectLimits, ConnectionLimitAnswers503) {
  TestProxy proxy("", [](settings::Settings& s) { s.max_connections = 2; });
  TestClient first(proxy.port());
  TestClient second(proxy.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  TestClient third(proxy.port());
  auto head = read_response_head(third);
  EXPECT_EQ(head.status, 503);
  EXPECT_NE(head.proxy_status.find("error=connection_limit_reached"), std::string::npos);
}

TEST(ConnectLimits, ClientLeavingDuringDnsDoesNotHurtTheProxy) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("slow.test", {"127.0.0.1"});
  proxy.dns().set_delay("slow.test", std::chrono::milliseconds(300));
  for (int i = 0; i < 20; ++i) {
    TestClient client(proxy.port());
    client.send("CONNECT slow.test:" + std::to_string(origin.port()) + " HTTP/1.1\r\n\r\n");
  }  // each client closes at once
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin.port())).status, 200);
  client.send("ok");
  EXPECT_EQ(client.read_exact(2), "ok");
}

TEST(ConnectDrain, OpenTunnelsFinishThenTheDeadlineClosesThem) {
  TcpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.drain = std::chrono::seconds(1);
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin.port())).status, 200);

  std::thread stopper([&proxy] { proxy.stop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Still carrying bytes during the drain...
  client.send("during-drain");
  EXPECT_EQ(client.read_exact(12), "during-drain");
  // ...and closed once the deadline passes.
  const auto started = std::chrono::steady_clock::now();
  client.read_to_end(nullptr, std::chrono::seconds(5));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(4));
  stopper.join();
  // New connections are refused once draining.
  EXPECT_THROW(TestClient late(proxy.port()), std::runtime_error);
}

// SNI check: the origin's port is declared a TLS port, so the proxy reads the ClientHello.
class SniCheckTest : public ::testing::Test {
 protected:
  SniCheckTest()
      : proxy_("blocked.test\n", [this](settings::Settings& s) {
          s.policy.block_loopback = false;
          s.policy.allow_ip = true;
          s.tls_ports = {origin_.port()};
          s.head_timeout = std::chrono::seconds(1);
        }) {
    proxy_.dns().set("origin.test", {"127.0.0.1"});
  }

  // Opens a tunnel to `host`, sends `first_bytes`, and returns what came back before the close.
  std::string exchange(const std::string& host, const std::string& first_bytes) {
    TestClient client(proxy_.port());
    auto head = send_connect(client, target(host, origin_.port()));
    EXPECT_EQ(head.status, 200) << head.head;
    if (!first_bytes.empty()) {
      client.send(first_bytes);
    }
    return client.read_exact(first_bytes.empty() ? 1 : first_bytes.size(), std::chrono::seconds(3));
  }

  bool logged(const std::string& reason) {
    return proxy_.wait_for_log([&reason](const std::string& log) {
      return log.find("\"reason\":\"" + reason + "\"") != std::string::npos;
    });
  }

  TcpOrigin origin_;
  TestProxy proxy_;
};

TEST_F(SniCheckTest, MatchingServerNamePasses) {
  const std::string hello = client_hello_records("Origin.Test.");
  EXPECT_EQ(exchange("origin.test", hello), hello) << "the echo origin returns the ClientHello";
}

TEST_F(SniCheckTest, DifferentServerNameIsCutOff) {
  EXPECT_EQ(exchange("origin.test", client_hello_records("evil.example")), "");
  EXPECT_TRUE(logged("sni-mismatch")) << proxy_.log_text();
  EXPECT_EQ(origin_.bytes_received(), 0u) << "nothing may reach the origin";
}

TEST_F(SniCheckTest, BlockedNameInsideAnIpTunnelIsDenied) {
  EXPECT_EQ(exchange("127.0.0.1", client_hello_records("www.blocked.test")), "");
  EXPECT_TRUE(logged("blocklist")) << proxy_.log_text();
}

TEST_F(SniCheckTest, SshOnATlsPortFollowsTheSshRules) {
  EXPECT_EQ(exchange("origin.test", "SSH-2.0-OpenSSH_9.2\r\n"), "");
  EXPECT_TRUE(logged("ssh-non-git-host")) << proxy_.log_text();
}

TEST_F(SniCheckTest, PlainTextOnATlsPortIsRefused) {
  EXPECT_EQ(exchange("origin.test", "GET / HTTP/1.1\r\n\r\n"), "");
  EXPECT_TRUE(logged("protocol-mismatch")) << proxy_.log_text();
}

TEST_F(SniCheckTest, SilentClientTimesOut) {
  EXPECT_EQ(exchange("origin.test", ""), "");
  EXPECT_TRUE(logged("protocol-mismatch")) << proxy_.log_text();
}

TEST(SniCheckOff, AnythingPassesWhenOff) {
  TcpOrigin origin;
  TestProxy proxy("", [&origin](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.tls_ports = {origin.port()};
    s.sni_check = false;
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin.port())).status, 200);
  const std::string hello = client_hello_records("evil.example");
  client.send(hello);
  EXPECT_EQ(client.read_exact(hello.size()), hello);
}

}  // namespace
}  // namespace sandgate::testing

namespace sandgate::testing {
namespace {

// SANDGATE_LOG_LEVEL=warning keeps denials (and warnings), not allows or tunnel ends; the
// metrics still count everything.
TEST(DecisionLogLevel, WarningKeepsDenialsOnly) {
  TcpOrigin origin;
  TestProxy proxy("evil.test\n", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.log_level = settings::LogLevel::warning;
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  {
    TestClient client(proxy.port());
    ASSERT_EQ(send_connect(client, target("origin.test", origin.port())).status, 200);
    client.send("x");
    EXPECT_EQ(client.read_exact(1), "x");
  }
  {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, target("evil.test", origin.port())).status, 403);
  }
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"blocklist\"") != std::string::npos;
  })) << proxy.log_text();
  proxy.stop();
  const std::string log = proxy.log_text();
  EXPECT_EQ(log.find("\"verdict\":\"allow\""), std::string::npos) << log;
  EXPECT_EQ(log.find("\"event\":\"end\""), std::string::npos) << log;
  EXPECT_EQ(log.find("\"level\":\"info\""), std::string::npos) << log;
}

}  // namespace
}  // namespace sandgate::testing
