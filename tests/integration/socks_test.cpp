// SOCKS5 through a real in-process sandgate on loopback, spoken byte by byte on raw sockets:
// allowed tunnels by name and by address, the policy's denials as reply code 0x02 with their
// logged reason and rule, the network's failures as their own codes, BIND and UDP ASSOCIATE
// refused, malformed messages, SOCKS4 refused, the token as RFC 1929 credentials, the
// handshake's deadline, a TLS name mismatch after success, and the counters.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <thread>

#include "proxy/metrics/metrics.hpp"
#include "rules/reason.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;
using fakes::TcpOrigin;

constexpr std::string_view kToken = "a-socks-token-of-24-chars";

void allow_loopback(settings::Settings& s) { s.policy.block_loopback = false; }

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int value : values) {
    out += static_cast<char>(value);
  }
  return out;
}

std::string port_bytes(std::uint16_t port) { return bytes({port >> 8, port & 0xff}); }

const std::string kNoAuthGreeting = bytes({0x05, 0x01, 0x00});

std::string request_for_ipv4(std::initializer_list<int> address, std::uint16_t port) {
  return bytes({0x05, 0x01, 0x00, 0x01}) + bytes(address) + port_bytes(port);
}

std::string request_for_ipv6(const std::string& sixteen, std::uint16_t port) {
  return bytes({0x05, 0x01, 0x00, 0x04}) + sixteen + port_bytes(port);
}

// RFC 1929: VER ULEN UNAME PLEN PASSWD
std::string credentials(std::string_view user, std::string_view password) {
  return bytes({0x01, static_cast<int>(user.size())}) + std::string(user) +
         bytes({static_cast<int>(password.size())}) + std::string(password);
}

// The reply's code byte (VER REP RSV ATYP=IPv4 ADDR PORT: 10 bytes); -1 when none came.
int reply_code(TestClient& client) {
  const std::string reply = client.read_exact(10);
  if (reply.size() != 10 || reply[0] != 0x05) {
    return -1;
  }
  return static_cast<unsigned char>(reply[1]);
}

// Greets without authentication and sends `request`; the request reply's code.
int ask(TestClient& client, const std::string& request) {
  client.send(kNoAuthGreeting);
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x00}));
  client.send(request);
  return reply_code(client);
}

std::uint64_t decisions(TestProxy& proxy, rules::Reason reason) {
  std::uint64_t total = 0;
  const auto verdict = static_cast<std::size_t>(rules::reason_info(reason).verdict);
  for (const auto* worker : proxy.server().worker_metrics()) {
    total += worker->decisions[rules::reason_index(reason)][verdict].get();
  }
  return total;
}

bool logged(TestProxy& proxy, std::initializer_list<std::string_view> parts) {
  return proxy.wait_for_log([&](const std::string& log) {
    std::size_t line_start = 0;
    while (line_start < log.size()) {
      const std::size_t end = log.find('\n', line_start);
      const std::string_view line = std::string_view(log).substr(
          line_start, end == std::string::npos ? end : end - line_start);
      bool all = true;
      for (std::string_view part : parts) {
        all = all && line.find(part) != std::string_view::npos;
      }
      if (all) {
        return true;
      }
      if (end == std::string::npos) {
        break;
      }
      line_start = end + 1;
    }
    return false;
  });
}

// A loopback port nothing listens on.
std::uint16_t closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t size = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

TEST(Socks5, AllowedNameTunnelsAndEchoesWithoutTheBoundAddress) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});

  TestClient client(proxy.port());
  client.send(kNoAuthGreeting);
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x00}));
  client.send(socks5_request_for_name("origin.test", origin.port()));
  const std::string reply = client.read_exact(10);
  ASSERT_EQ(reply.size(), 10u);
  EXPECT_EQ(reply.substr(0, 4), bytes({0x05, 0x00, 0x00, 0x01}));
  EXPECT_EQ(reply.substr(4, 6), bytes({0, 0, 0, 0, 0, 0})) << "no host address for the sandbox";
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");

  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"verdict\":\"allow\"",
                             "\"host\":\"origin.test\"", "\"address\":\"127.0.0.1:"}))
      << proxy.log_text();
  EXPECT_EQ(decisions(proxy, rules::Reason::allowed), 1u);
  std::uint64_t opened = 0;
  for (const auto* worker : proxy.server().worker_metrics()) {
    opened += worker->tunnels_open_total.get();
  }
  EXPECT_EQ(opened, 1u);
  client.close();
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"event\":\"end\""})) << proxy.log_text();
}

// Everything at once, before any reply: the bytes after the request are the tunnel's first.
TEST(Socks5, PipelinedHandshakeAndDataArriveUpstream) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});

  TestClient client(proxy.port());
  client.send(kNoAuthGreeting + socks5_request_for_name("origin.test", origin.port()) + "early");
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x00}));
  EXPECT_EQ(reply_code(client), 0x00);
  EXPECT_EQ(client.read_exact(5), "early");
}

TEST(Socks5, BlocklistedNameGetsRulesetReplyAndALoggedReasonAndRule) {
  TcpOrigin origin;
  TestProxy proxy("evil.test\n", allow_loopback);
  proxy.dns().set("api.evil.test", {"127.0.0.1"});

  TestClient client(proxy.port());
  EXPECT_EQ(ask(client, socks5_request_for_name("API.Evil.test.", origin.port())), 0x02);
  EXPECT_EQ(client.read_to_end(), "") << "the connection closes after the reply";
  EXPECT_EQ(origin.connections(), 0u);
  EXPECT_EQ(proxy.dns().query_count("api.evil.test"), 0u) << "a denied name is never looked up";
  EXPECT_TRUE(
      logged(proxy, {"\"method\":\"SOCKS5\"", "\"verdict\":\"deny\"", "\"reason\":\"blocklist\"",
                     "blocked.txt:1 evil.test", "\"host\":\"api.evil.test\""}))
      << proxy.log_text();
  EXPECT_EQ(decisions(proxy, rules::Reason::blocklist), 1u);
}

TEST(Socks5, AddressesAreIpLiteralsToThePolicy) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  {
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, request_for_ipv4({127, 0, 0, 1}, origin.port())), 0x02);
  }
  {
    std::string loopback6(16, '\0');
    loopback6[15] = 1;
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, request_for_ipv6(loopback6, origin.port())), 0x02);
  }
  EXPECT_TRUE(logged(
      proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"ip-address\"", "\"host\":\"127.0.0.1\""}))
      << proxy.log_text();
  EXPECT_TRUE(logged(proxy, {"\"reason\":\"ip-address\"", "\"host\":\"[::1]\""}))
      << proxy.log_text();
  EXPECT_EQ(origin.connections(), 0u);
}

TEST(Socks5, AnAllowedAddressTunnels) {
  TcpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.policy.allow_ip = true;
  });
  TestClient client(proxy.port());
  EXPECT_EQ(ask(client, request_for_ipv4({127, 0, 0, 1}, origin.port())), 0x00);
  client.send("pong");
  EXPECT_EQ(client.read_exact(4), "pong");
}

TEST(Socks5, TheNetworksFailuresHaveTheirOwnCodes) {
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("closed.test", {"127.0.0.1"});
  {
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, socks5_request_for_name("nowhere.test", 80)), 0x04);
  }
  {
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, socks5_request_for_name("closed.test", closed_port())), 0x05);
  }
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"dns-not-found\""}));
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"connection-refused\""}));
}

TEST(Socks5, BindAndUdpAssociateAreNotSupported) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  for (int command : {0x02, 0x03, 0x09}) {
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, socks5_request_for_name("origin.test", origin.port(), command)), 0x07)
        << command;
  }
  EXPECT_EQ(origin.connections(), 0u);
  EXPECT_TRUE(logged(proxy, {"\"reason\":\"socks-command-unsupported\"", "BIND"}))
      << proxy.log_text();
  EXPECT_TRUE(logged(proxy, {"\"reason\":\"socks-command-unsupported\"", "UDP ASSOCIATE"}));
  EXPECT_EQ(decisions(proxy, rules::Reason::socks_command_unsupported), 3u);
}

TEST(Socks5, MalformedMessagesAreRefused) {
  TestProxy proxy("", allow_loopback);
  {
    // A greeting that offers no method at all.
    TestClient client(proxy.port());
    client.send(bytes({0x05, 0x00}));
    EXPECT_EQ(client.read_exact(2), bytes({0x05, 0xff}));
  }
  {
    // A request with the wrong version byte.
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, bytes({0x04, 0x01, 0x00, 0x01, 1, 2, 3, 4, 0, 80})), 0x01);
  }
  {
    // An unknown address type.
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, bytes({0x05, 0x01, 0x00, 0x02, 1, 2, 3, 4, 0, 80})), 0x08);
  }
  {
    // A name the host parser refuses ('@' would split what is checked from what is dialled).
    TestClient client(proxy.port());
    EXPECT_EQ(ask(client, socks5_request_for_name("evil.com@github.com", 443)), 0x01);
  }
  {
    // A client that offers only username/password to a gate without a token.
    TestClient client(proxy.port());
    client.send(bytes({0x05, 0x01, 0x02}));
    EXPECT_EQ(client.read_exact(2), bytes({0x05, 0xff}));
  }
  EXPECT_TRUE(
      logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"bad-request\"", "version byte 4"}))
      << proxy.log_text();
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"invalid-host\""}));
  EXPECT_EQ(decisions(proxy, rules::Reason::bad_request), 4u);
}

TEST(Socks5, Socks4IsRefusedWithItsOwnReplyAndALogLine) {
  TestProxy proxy("", allow_loopback);
  TestClient client(proxy.port());
  // SOCKS4a CONNECT to example.test:80, user "u".
  client.send(bytes({0x04, 0x01, 0x00, 80, 0, 0, 0, 1}) + "u" + bytes({0}) + "example.test" +
              bytes({0}));
  EXPECT_EQ(client.read_exact(8), bytes({0x00, 91, 0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(
      logged(proxy, {"\"method\":\"SOCKS4\"", "\"reason\":\"socks4-refused\"", "use SOCKS5"}))
      << proxy.log_text();
  EXPECT_EQ(decisions(proxy, rules::Reason::socks4_refused), 1u);
}

TEST(Socks5, HttpStillWorksOnTheSameListener) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  EXPECT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");
}

// ---- The token ----

void with_token(settings::Settings& s) {
  s.policy.block_loopback = false;
  s.token = std::string(kToken);
}

TEST(Socks5Token, NoCredentialsOfferedIsRefused) {
  TestProxy proxy("", with_token);
  TestClient client(proxy.port());
  client.send(kNoAuthGreeting);
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0xff}));
  EXPECT_EQ(client.read_to_end(), "");
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"auth-required\""}))
      << proxy.log_text();
  EXPECT_EQ(decisions(proxy, rules::Reason::auth_required), 1u);
}

TEST(Socks5Token, AWrongPasswordIsRefusedAndNotLogged) {
  TestProxy proxy("", with_token);
  TestClient client(proxy.port());
  client.send(bytes({0x05, 0x02, 0x00, 0x02}));
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x02}));
  client.send(credentials("sandgate", "not-the-token"));
  EXPECT_EQ(client.read_exact(2), bytes({0x01, 0x01}));
  EXPECT_EQ(client.read_to_end(), "");
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"auth-failed\""}))
      << proxy.log_text();
  EXPECT_EQ(proxy.log_text().find("not-the-token"), std::string::npos);
  EXPECT_EQ(decisions(proxy, rules::Reason::auth_failed), 1u);
}

TEST(Socks5Token, ATokenPrefixIsWrongToo) {
  TestProxy proxy("", with_token);
  TestClient client(proxy.port());
  client.send(bytes({0x05, 0x01, 0x02}));
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x02}));
  client.send(credentials("u", kToken.substr(0, kToken.size() - 1)));
  EXPECT_EQ(client.read_exact(2), bytes({0x01, 0x01}));
}

TEST(Socks5Token, TheRightTokenOpensTheTunnel) {
  TcpOrigin origin;
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(bytes({0x05, 0x02, 0x00, 0x02}));
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x02}));
  client.send(credentials("anyone", kToken));
  EXPECT_EQ(client.read_exact(2), bytes({0x01, 0x00}));
  client.send(socks5_request_for_name("origin.test", origin.port()));
  EXPECT_EQ(reply_code(client), 0x00);
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");
}

// ---- Time ----

TEST(Socks5, TheWholeHandshakeHasTheHeadTimeout) {
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.head_timeout = std::chrono::seconds(1);
  });
  {
    // Stops after the greeting: closed, and logged, at the deadline.
    TestClient client(proxy.port());
    const auto start = std::chrono::steady_clock::now();
    client.send(kNoAuthGreeting);
    EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x00}));
    client.send(bytes({0x05, 0x01}));  // a request's first bytes only
    const std::string reply = client.read_to_end(nullptr, 5s);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(reply, bytes({0x05, 0x06, 0x00, 0x01, 0, 0, 0, 0, 0, 0})) << "TTL expired";
    EXPECT_LT(took, 3500ms);
  }
  {
    // Only the version byte.
    TestClient client(proxy.port());
    client.send(bytes({0x05}));
    EXPECT_EQ(client.read_to_end(nullptr, 5s), "");
  }
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"request-timeout\""}))
      << proxy.log_text();
  EXPECT_EQ(decisions(proxy, rules::Reason::request_timeout), 2u);
}

// A client that gives up in the middle of its handshake (here after the version byte alone, and
// after a whole greeting) gets an end line that names SOCKS5 and the stage it left at, counted
// as client-closed, not the HTTP "request head" line with method "-".
TEST(Socks5, AClientThatLeavesMidHandshakeIsLoggedAsSocks) {
  TestProxy proxy("", allow_loopback);
  {
    TestClient client(proxy.port());
    client.send(bytes({0x05}));
    client.close();
  }
  EXPECT_TRUE(logged(proxy, {"\"event\":\"end\"", "\"method\":\"SOCKS5\"",
                             "\"reason\":\"client-closed\"", "its SOCKS5 greeting"}))
      << proxy.log_text();
  {
    TestClient client(proxy.port());
    client.send(kNoAuthGreeting);
    EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x00}));
    client.send(bytes({0x05, 0x01, 0x00, 0x03}));  // half a request
    client.close();
  }
  EXPECT_TRUE(logged(proxy, {"\"event\":\"end\"", "\"method\":\"SOCKS5\"",
                             "\"reason\":\"client-closed\"", "its SOCKS5 request"}))
      << proxy.log_text();
  EXPECT_EQ(decisions(proxy, rules::Reason::client_closed), 2u);
  EXPECT_FALSE(proxy.log_text().find("request head") != std::string::npos) << proxy.log_text();
}

// A TLS port: the name in the ClientHello must be the one asked for. The denial comes after the
// success reply, so it closes the connection.
TEST(Socks5, SniMismatchAfterSuccessClosesTheTunnel) {
  TcpOrigin tls_origin;
  TestProxy proxy("", [&tls_origin](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.tls_ports = {tls_origin.port()};
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  EXPECT_EQ(ask(client, socks5_request_for_name("origin.test", tls_origin.port())), 0x00);
  client.send(client_hello_records("other.example"));
  EXPECT_EQ(client.read_to_end(), "");
  EXPECT_EQ(tls_origin.bytes_received(), 0u) << "no byte of the ClientHello went upstream";
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"sni-mismatch\""}))
      << proxy.log_text();
  EXPECT_EQ(decisions(proxy, rules::Reason::sni_mismatch), 1u);
}

TEST(Socks5, SshToANonGitHostIsClosedAfterSuccess) {
  TcpOrigin origin;
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(kNoAuthGreeting + socks5_request_for_name("origin.test", origin.port()) +
              "SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x00}));
  EXPECT_EQ(reply_code(client), 0x00);
  EXPECT_EQ(client.read_to_end(), "");
  EXPECT_EQ(origin.bytes_received(), 0u);
  EXPECT_TRUE(logged(proxy, {"\"method\":\"SOCKS5\"", "\"reason\":\"ssh-non-git-host\""}))
      << proxy.log_text();
}

}  // namespace
}  // namespace sandgate::testing
