// Issue 27's data-path findings against a real gate on loopback: SSH behind lines a tolerant
// server skips, and this machine's own non-loopback addresses.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

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

}  // namespace
}  // namespace sandgate::testing
