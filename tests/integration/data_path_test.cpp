// Issue 27's data-path findings against a real gate on loopback: SSH behind lines a tolerant
// server skips, and this machine's own non-loopback addresses.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proxy/log/text_fields.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"

namespace sandgate::testing {
namespace {

using fakes::TcpOrigin;

std::string target(std::string_view host, std::uint16_t port) {
  return std::string(host) + ":" + std::to_string(port);
}

class SshBehindLines : public ::testing::Test {
 protected:
  SshBehindLines()
      : proxy_("", [](settings::Settings& s) {
          s.policy.block_loopback = false;
          s.head_timeout = std::chrono::seconds(1);
        }) {
    proxy_.dns().set("origin.test", {"127.0.0.1"});
  }

  bool logged(const std::string& reason) {
    return proxy_.wait_for_log([&reason](const std::string& log) {
      return log.find("\"reason\":\"" + reason + "\"") != std::string::npos;
    });
  }

  TcpOrigin origin_;
  TestProxy proxy_;
};

// Issue 27: "\r\n" before "SSH-2.0-..." passed to a host that is not a git host. The empty line
// is relayed at once (the echo origin returns it); the identification line is not.
TEST_F(SshBehindLines, SshAfterAnEmptyLineMeetsTheSshRules) {
  TestClient client(proxy_.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin_.port())).status, 200);
  client.send("\r\n");
  EXPECT_EQ(client.read_exact(2, std::chrono::seconds(3)), "\r\n");
  client.send("SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_EQ(client.read_exact(1, std::chrono::seconds(3)), "");
  EXPECT_TRUE(logged("ssh-non-git-host")) << proxy_.log_text();
  EXPECT_EQ(origin_.bytes_received(), 2u) << "only the empty line may reach the origin";
}

// The same lines sent with the CONNECT head: judged before they go upstream.
TEST_F(SshBehindLines, EarlyLinesBeforeSshAreJudgedBeforeTheyGoUpstream) {
  TestClient client(proxy_.port());
  client.send("CONNECT " + target("origin.test", origin_.port()) +
              " HTTP/1.1\r\nHost: x\r\n\r\nhello\r\n\r\nS\rSH-2.0-x\r\n");
  const std::string reply = client.read_exact(12, std::chrono::seconds(3));
  EXPECT_EQ(reply, "HTTP/1.1 200");
  EXPECT_TRUE(logged("ssh-non-git-host")) << proxy_.log_text();
  EXPECT_EQ(origin_.bytes_received(), 0u);
}

// Other line-based protocols are relayed as they come, and never held.
TEST_F(SshBehindLines, HttpInATunnelIsNotHeld) {
  TestClient client(proxy_.port());
  ASSERT_EQ(send_connect(client, target("origin.test", origin_.port())).status, 200);
  const std::string request = "GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n";
  client.send(request);
  EXPECT_EQ(client.read_exact(request.size(), std::chrono::seconds(3)), request);
  client.send("SSH is not at the start of a line here\r\n");
  EXPECT_EQ(client.read_exact(40, std::chrono::seconds(3)),
            "SSH is not at the start of a line here\r\n");
}

// Issue 27: a literal or a name that is one of this machine's own non-loopback addresses was
// dialled. The test gives loopback a second, private address (the offline namespace's own), as
// a LAN or docker0 address would be.
TEST(LocalAddress, ThisMachinesOtherAddressesAreRefused) {
  if (std::system("ip addr add 10.77.0.1/32 dev lo 2>/dev/null") != 0) {
    GTEST_SKIP() << "cannot add an address here (not in the offline namespace)";
  }
  TcpOrigin origin;
  {
    TestProxy proxy("", [](settings::Settings& s) { s.policy.allow_ip = true; });
    proxy.dns().set("lan.test", {"10.77.0.1"});
    TestClient by_literal(proxy.port());
    const auto literal = send_connect(by_literal, target("10.77.0.1", origin.port()));
    EXPECT_EQ(literal.status, 403) << literal.head;
    TestClient by_name(proxy.port());
    const auto named = send_connect(by_name, target("lan.test", origin.port()));
    EXPECT_EQ(named.status, 403) << named.head;
    EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
      return log.find("\"reason\":\"local-address\"") != std::string::npos;
    })) << proxy.log_text();
  }
  (void)std::system("ip addr del 10.77.0.1/32 dev lo 2>/dev/null");
}

// ---- Probes of the third hostile pass that held, kept as regression tests ----

// Every head the explicit proxy reads follows the one line rule: a CONNECT head ended by bare
// LFs, or bare LFs before the request line, are refused before anything is dialled.
class StrictHeads : public ::testing::Test {
 protected:
  StrictHeads() : proxy_("", [](settings::Settings& s) { s.policy.block_loopback = false; }) {
    proxy_.dns().set("origin.test", {"127.0.0.1"});
  }
  TcpOrigin origin_;
  TestProxy proxy_;
};

TEST_F(StrictHeads, AConnectHeadWithBareLfsIsRefused) {
  TestClient client(proxy_.port());
  client.send("CONNECT " + target("origin.test", origin_.port()) + " HTTP/1.1\nHost: x\n\n");
  const ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find("bare LF"), std::string::npos) << head.proxy_status;
  EXPECT_EQ(origin_.connections(), 0u);
}

TEST_F(StrictHeads, BareLfsBeforeTheRequestLineAreRefused) {
  TestClient client(proxy_.port());
  client.send("\n\nCONNECT " + target("origin.test", origin_.port()) +
              " HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(read_response_head(client).status, 400);
  EXPECT_EQ(origin_.connections(), 0u);
}

// A CR and its LF in two segments are one line end; a CR followed by anything else is not.
TEST_F(StrictHeads, ACrlfSplitAcrossSendsIsALineEndAndABareCrIsNot) {
  const std::string request_line = "CONNECT " + target("origin.test", origin_.port()) + " HTTP/1.1";
  {
    TestClient client(proxy_.port());
    client.send(request_line + "\r");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    client.send("\nHost: x\r\n\r\n");
    EXPECT_EQ(read_response_head(client).status, 200);
  }
  TestClient client(proxy_.port());
  client.send(request_line + "\r");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  client.send("Host: x\r\n\r\n");
  const ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find("bare CR"), std::string::npos) << head.proxy_status;
}

// SOCKS5 reaches the same SSH watch as CONNECT: an identification behind an empty line is
// judged by the SSH rules, and only the empty line reaches a host that is not a git host.
TEST_F(SshBehindLines, SshAfterAnEmptyLineThroughSocks5MeetsTheSshRules) {
  TestClient client(proxy_.port());
  client.send(std::string("\x05\x01\x00", 3));
  ASSERT_EQ(client.read_exact(2), std::string("\x05\x00", 2));
  client.send(socks5_request_for_name("origin.test", origin_.port()));
  const std::string reply = client.read_exact(10);
  ASSERT_EQ(reply.substr(0, 2), std::string("\x05\x00", 2));
  client.send("\r\n");
  EXPECT_EQ(client.read_exact(2, std::chrono::seconds(3)), "\r\n");
  client.send("SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_EQ(client.read_exact(1, std::chrono::seconds(3)), "");
  EXPECT_TRUE(logged("ssh-non-git-host")) << proxy_.log_text();
  EXPECT_EQ(origin_.bytes_received(), 2u);
}

// Issue 27 item 3, against the gate's own text log: a SOCKS5 domain that carries spaces, '=',
// quotes, CR LF and an escape sequence stays one value of its line, and the line reads back
// with the domain as its host and no field it did not write.
TEST(TextLogLine, Socks5DomainsCannotForgeFields) {
  TestProxy proxy("", [](settings::Settings& s) { s.log_format = settings::LogFormat::text; });
  const std::vector<std::string> domains = {"github.com:443 client=10.9.9.9:1 rule=allowlist:1 x",
                                            "a\"b=c",
                                            "evil\r\n2026 conn=9 ALLOW",
                                            "\x1b[31mred",
                                            "quote\\\"",
                                            std::string("x\0y", 3)};
  for (const std::string& domain : domains) {
    TestClient client(proxy.port());
    client.send(std::string("\x05\x01\x00", 3));
    ASSERT_EQ(client.read_exact(2), std::string("\x05\x00", 2));
    client.send(socks5_request_for_name(domain, 443));
    EXPECT_EQ(client.read_exact(2).substr(0, 1), "\x05");  // a SOCKS5 reply (a refusal)
  }
  std::vector<log::TextLine> lines;
  ASSERT_TRUE(proxy.wait_for_log([&](const std::string& text) {
    lines.clear();
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (auto parsed = log::parse_text_line(line); parsed && parsed->method == "SOCKS5") {
        lines.push_back(*parsed);
      }
    }
    return lines.size() >= domains.size();
  })) << proxy.log_text();
  for (std::size_t i = 0; i < domains.size(); ++i) {
    EXPECT_EQ(lines[i].host, domains[i]);
    EXPECT_EQ(lines[i].port, 443);
    EXPECT_EQ(lines[i].reason, std::optional<std::string>("invalid-host"));
    const std::string* client = lines[i].field("client");
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(client->starts_with("127.0.0.1:")) << *client;
    EXPECT_EQ(lines[i].field("rule"), nullptr) << domains[i];
  }
}

}  // namespace
}  // namespace sandgate::testing
