// The gate's side of a parent proxy, against a fake parent the test scripts byte for byte (a
// real listening socket on loopback, one connection at a time on its own thread): what the gate
// sends it (CONNECT, Host, Proxy-Authorization; plain http in absolute form), bytes behind its
// 2xx head reaching the client, a refusal's body never passed on, malformed and silent parents,
// the SOCKS5 codes of both reasons, and the dial counters. Also the SOCKS5 remainders: BND.ADDR
// 0.0.0.0:0 in the success reply, and a SOCKS5 client over the connection limit answered in
// SOCKS. Real sockets, the in-process gate (TestProxy); nothing resolves off the machine.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "proxy/metrics/metrics.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "proxy/parent/parent_proxy.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& text, std::string_view piece) {
  return text.find(piece) != std::string::npos;
}

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int value : values) {
    out += static_cast<char>(value);
  }
  return out;
}

// A parent proxy that reads each request head, keeps it, answers with `reply` (possibly
// nothing) and then echoes what follows until the gate closes.
class FakeParent {
 public:
  explicit FakeParent(std::string reply) : reply_(std::move(reply)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 16) != 0) {
      throw std::runtime_error("fake parent: bind/listen failed");
    }
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeParent() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string heads() const {
    std::lock_guard lock(mutex_);
    return heads_;
  }

 private:
  void serve() {
    while (!stopping_) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        return;
      }
      timeval timeout{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
      std::string head;
      char buffer[4096];
      while (!contains(head, "\r\n\r\n")) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
          break;
        }
        head.append(buffer, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard lock(mutex_);
        heads_ += head;
      }
      if (!reply_.empty()) {
        ::send(fd, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      }
      for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
        ::send(fd, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL);
      }
      ::close(fd);
    }
  }

  std::string reply_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::string heads_;
  std::thread thread_;
};

// Settings for a parent at `url`, with `credentials` ("user:password") when not empty.
std::function<void(settings::Settings&)> through(const std::string& url,
                                                 const std::string& credentials = "") {
  return [url, credentials](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.connect_timeout = 1s;
    s.dns_timeout = 1s;
    s.parent_proxy = parent::parse_parent_url(url).value();
    s.parent_proxy_url = url;
    if (!credentials.empty()) {
      s.parent_credentials = parent::parse_credentials(credentials).value();
    }
  };
}

std::uint64_t parent_dials(TestProxy& proxy, metrics::WorkerMetrics::ParentDial outcome) {
  std::uint64_t total = 0;
  for (const auto* worker : proxy.server().worker_metrics()) {
    total += worker->parent_dials[static_cast<std::size_t>(outcome)].get();
  }
  return total;
}

TEST(ParentDial, TheConnectCarriesCredentialsAndBytesBehindTheHeadReachTheClient) {
  FakeParent parent("HTTP/1.1 200 Connection established\r\nVia: 1.1 fake\r\n\r\nbanner\n");
  TestProxy proxy("", through(parent.url(), "agent:se:cret"));

  TestClient client(proxy.port());
  const auto head = send_connect(client, "origin.test:8022");
  EXPECT_EQ(head.status, 200);
  // The banner may have come with the head (read_until keeps what it read past the head in
  // `pending` too) or after it.
  std::string banner = head.body_after;
  client.pending.clear();
  if (banner.size() < 7) {
    banner += client.read_exact(7 - banner.size());
  }
  EXPECT_EQ(banner, "banner\n");
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");

  // "agent:se:cret" in Base64: the password keeps its colon.
  EXPECT_TRUE(contains(parent.heads(),
                       "CONNECT origin.test:8022 HTTP/1.1\r\nHost: origin.test:8022\r\n"
                       "Proxy-Authorization: Basic YWdlbnQ6c2U6Y3JldA==\r\n\r\n"))
      << parent.heads();
  client.close();
  EXPECT_TRUE(proxy.wait_for_log([&](const std::string& log) {
    return contains(log, "\"verdict\":\"allow\"") &&
           contains(log, "\"address\":\"127.0.0.1:" + std::to_string(parent.port())) &&
           contains(log, "through the parent proxy") && contains(log, "\"event\":\"end\"");
  })) << proxy.log_text();
  EXPECT_FALSE(contains(proxy.log_text(), "se:cret"));
  EXPECT_EQ(parent_dials(proxy, metrics::WorkerMetrics::ParentDial::connected), 1u);
}

// On a tunnel the gate inspects, the client's TLS is with the gate: bytes the parent passed
// behind its 200 (an origin speaks only after the gate's own ClientHello) must never reach the
// client outside that TLS. The tunnel is refused instead, with its reason.
TEST(ParentDial, BytesBehindTheHeadNeverReachTheClientOfAnInspectedTunnel) {
  FakeParent parent("HTTP/1.1 200 Connection established\r\n\r\nstray bytes\n");
  std::string ca_dir = ::testing::TempDir() + "/parent-inspect-XXXXXX";
  ASSERT_NE(::mkdtemp(ca_dir.data()), nullptr);
  TestProxy proxy("", [&](settings::Settings& s) {
    through(parent.url())(s);
    s.inspect = {"origin.test"};
    s.ca_dir = ca_dir + "/ca";
  });

  TestClient client(proxy.port());
  const auto head = send_connect(client, "origin.test:443");
  ASSERT_EQ(head.status, 200) << head.head;
  std::string seen = head.body_after;
  client.pending.clear();
  client.send(client_hello_records("origin.test"));
  seen += client.read_to_end(nullptr, 3s);
  EXPECT_FALSE(contains(seen, "stray")) << seen;
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"reason\":\"bad-response\"") && contains(log, "behind its reply");
  })) << proxy.log_text();
}

TEST(ParentDial, PlainHttpGoesInAbsoluteFormWithCredentials) {
  FakeParent parent("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nhi\n");
  TestProxy proxy("", through(parent.url(), "agent:secret"));
  TestClient client(proxy.port());
  client.send(
      "GET http://origin.test:8080/path?q=1 HTTP/1.1\r\nHost: origin.test:8080\r\n"
      "Proxy-Authorization: Basic Zm9yOnRoZWdhdGU=\r\n\r\n");
  const auto head = read_response_head(client);
  EXPECT_EQ(head.status, 200);
  const std::string sent = parent.heads();
  EXPECT_TRUE(sent.starts_with("GET http://origin.test:8080/path?q=1 HTTP/1.1\r\n")) << sent;
  EXPECT_TRUE(contains(sent, "Proxy-Authorization: Basic YWdlbnQ6c2VjcmV0\r\n")) << sent;
  EXPECT_FALSE(contains(sent, "Zm9yOnRoZWdhdGU=")) << "the client's field was for this gate";
}

TEST(ParentDial, ARefusalIs502WithTheParentsStatusAndNotItsBody) {
  FakeParent parent("HTTP/1.1 403 Forbidden\r\nContent-Length: 13\r\n\r\nsquid-page-xx");
  TestProxy proxy("", through(parent.url()));
  TestClient client(proxy.port());
  const auto head = send_connect(client, "refused.test:443");
  EXPECT_EQ(head.status, 502);
  EXPECT_TRUE(contains(head.proxy_status, "parent-refused")) << head.head;
  EXPECT_TRUE(contains(head.proxy_status, "answered 403 Forbidden")) << head.head;
  const std::string rest = head.body_after + client.read_to_end();
  EXPECT_FALSE(contains(rest, "squid-page")) << rest;
  EXPECT_EQ(parent_dials(proxy, metrics::WorkerMetrics::ParentDial::refused), 1u);

  // The same refusal to a SOCKS5 client: not allowed by ruleset.
  TestClient socks(proxy.port());
  socks.send(bytes({0x05, 0x01, 0x00}));
  EXPECT_EQ(socks.read_exact(2), bytes({0x05, 0x00}));
  socks.send(bytes({0x05, 0x01, 0x00, 0x03, 12}) + "refused.test" + bytes({0x01, 0xbb}));
  EXPECT_EQ(socks.read_exact(2), bytes({0x05, 0x02}));
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"method\":\"SOCKS5\"") && contains(log, "\"reason\":\"parent-refused\"");
  })) << proxy.log_text();
}

TEST(ParentDial, MalformedSilentAndAbsentParentsAreUnreachable) {
  {
    FakeParent parent("SSH-2.0-not-a-proxy\r\n\r\n");
    TestProxy proxy("", through(parent.url()));
    TestClient client(proxy.port());
    const auto head = send_connect(client, "origin.test:443");
    EXPECT_EQ(head.status, 502);
    EXPECT_TRUE(contains(head.proxy_status, "parent-unreachable")) << head.head;
    EXPECT_TRUE(contains(head.proxy_status, "does not start with HTTP/1.")) << head.head;
  }
  {
    FakeParent parent("HTTP/1.1 100 Continue\r\n\r\n");  // no interim replies to CONNECT
    TestProxy proxy("", through(parent.url()));
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, "origin.test:443").status, 502);
  }
  {
    FakeParent parent("");  // accepts, reads, never answers
    TestProxy proxy("", through(parent.url()));
    TestClient client(proxy.port());
    const auto started = std::chrono::steady_clock::now();
    const auto head = send_connect(client, "origin.test:443");
    EXPECT_EQ(head.status, 502);
    EXPECT_TRUE(contains(head.proxy_status, "did not answer CONNECT")) << head.head;
    EXPECT_LT(std::chrono::steady_clock::now() - started, 4s);
    EXPECT_EQ(parent_dials(proxy, metrics::WorkerMetrics::ParentDial::unreachable), 1u);
  }
  {
    std::uint16_t closed = 0;
    {
      FakeParent gone("");
      closed = gone.port();
    }
    TestProxy proxy("", through("http://127.0.0.1:" + std::to_string(closed)));
    TestClient socks(proxy.port());
    socks.send(bytes({0x05, 0x01, 0x00}));
    EXPECT_EQ(socks.read_exact(2), bytes({0x05, 0x00}));
    socks.send(bytes({0x05, 0x01, 0x00, 0x03, 11}) + "origin.test" + bytes({0x01, 0xbb}));
    EXPECT_EQ(socks.read_exact(2), bytes({0x05, 0x03})) << "network unreachable";
    const std::string text = metrics::render_prometheus(proxy.server().worker_metrics(), {});
    EXPECT_TRUE(contains(text, "sandgate_parent_dials_total{outcome=\"unreachable\"} 1")) << text;
  }
}

TEST(ParentDial, LocalDecisionsComeFirstAndExclusionsGoDirect) {
  FakeParent parent("HTTP/1.1 200 OK\r\n\r\n");
  fakes::TcpOrigin origin;
  TestProxy proxy("blocked.test\n", [&](settings::Settings& s) {
    through(parent.url())(s);
    s.parent_exclude = parent::ExcludeList::parse("direct.test").value();
    s.parent_exclude_text = "direct.test";
  });
  proxy.dns().set("direct.test", {"127.0.0.1"});
  {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, "blocked.test:443").status, 403);
  }
  {
    TestClient client(proxy.port());
    EXPECT_EQ(send_connect(client, "direct.test:" + std::to_string(origin.port())).status, 200);
    client.send("echo");
    EXPECT_EQ(client.read_exact(4), "echo");
  }
  EXPECT_EQ(parent.heads(), "") << "neither reached the parent";
  EXPECT_EQ(origin.connections(), 1u);
}

// The body of a plain response whose head read_response_head() read, `size` bytes in all.
std::string plain_body(TestClient& client, const ResponseHead& head, std::size_t size) {
  std::string body = head.body_after;
  client.pending.clear();
  if (body.size() < size) {
    body += client.read_exact(size - body.size());
  }
  return body;
}

// Plain requests on one kept-alive client connection, each decided and routed on its own: an
// excluded host goes direct in origin form with neither credential on it, the next host goes
// to the parent in absolute form with the parent's credentials only, and a blocked host is
// refused by the gate without reaching either.
TEST(ParentDial, KeptAlivePlainRequestsAreEachDecidedAndRouted) {
  FakeParent parent("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\npa\n");
  FakeParent origin("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nor\n");
  TestProxy proxy("blocked.test\n", [&](settings::Settings& s) {
    through(parent.url(), "agent:parent-pw")(s);
    s.parent_exclude = parent::ExcludeList::parse("DIRECT.test.").value();
    s.parent_exclude_text = "DIRECT.test.";
  });
  proxy.dns().set("direct.test", {"127.0.0.1"});
  const std::string client_auth = "Proxy-Authorization: Basic Y2xpZW50OmZvci10aGUtZ2F0ZQ==\r\n";
  const std::string direct = "direct.test:" + std::to_string(origin.port());

  TestClient client(proxy.port());
  client.send("GET http://" + direct + "/a HTTP/1.1\r\nHost: " + direct + "\r\n" + client_auth +
              "\r\n");
  auto head = read_response_head(client);
  ASSERT_EQ(head.status, 200) << head.head;
  EXPECT_EQ(plain_body(client, head, 3), "or\n");

  client.send("GET http://via.test:8080/b HTTP/1.1\r\nHost: via.test:8080\r\n" + client_auth +
              "\r\n");
  head = read_response_head(client);
  ASSERT_EQ(head.status, 200) << head.head;
  EXPECT_EQ(plain_body(client, head, 3), "pa\n");

  client.send("GET http://blocked.test/c HTTP/1.1\r\nHost: blocked.test\r\n\r\n");
  EXPECT_EQ(read_response_head(client).status, 403);
  client.close();

  const std::string at_origin = origin.heads();
  EXPECT_TRUE(at_origin.starts_with("GET /a HTTP/1.1\r\n")) << at_origin;
  EXPECT_FALSE(contains(at_origin, "Proxy-Authorization")) << at_origin;
  const std::string at_parent = parent.heads();
  EXPECT_TRUE(at_parent.starts_with("GET http://via.test:8080/b HTTP/1.1\r\n")) << at_parent;
  EXPECT_TRUE(contains(at_parent, "Proxy-Authorization: Basic YWdlbnQ6cGFyZW50LXB3\r\n"))
      << at_parent;
  EXPECT_FALSE(contains(at_parent, "Y2xpZW50OmZvci10aGUtZ2F0ZQ==")) << at_parent;
  EXPECT_FALSE(contains(at_origin + at_parent, "blocked.test"));
  EXPECT_FALSE(contains(at_origin + at_parent, "/a HTTP/1.1\r\nHost: via")) << "one each";
}

// RFC 1928's BND.ADDR would be the host's outbound address: the gate sends zeros.
TEST(Socks5Remainders, TheSuccessReplyCarriesNoAddress) {
  fakes::TcpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(bytes({0x05, 0x01, 0x00}));
  EXPECT_EQ(client.read_exact(2), bytes({0x05, 0x00}));
  client.send(bytes({0x05, 0x01, 0x00, 0x03, 11}) + "origin.test" +
              bytes({origin.port() >> 8, origin.port() & 0xff}));
  EXPECT_EQ(client.read_exact(10), bytes({0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0}));
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");
}

// Over the connection limit a SOCKS5 client gets general failure in its own protocol, with or
// without username/password offered; an HTTP client still gets 503.
TEST(Socks5Remainders, OverTheLimitASocksClientGetsGeneralFailure) {
  TestProxy proxy("", [](settings::Settings& s) { s.max_connections = 1; });
  TestClient holder(proxy.port());  // the one connection allowed, idle
  std::this_thread::sleep_for(100ms);
  {
    TestClient socks(proxy.port());
    socks.send(bytes({0x05, 0x01, 0x00}));
    EXPECT_EQ(socks.read_exact(2), bytes({0x05, 0x00}));
    socks.send(bytes({0x05, 0x01, 0x00, 0x03, 11}) + "origin.test" + bytes({0x01, 0xbb}));
    EXPECT_EQ(socks.read_exact(10), bytes({0x05, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0}));
  }
  {
    TestClient socks(proxy.port());
    socks.send(bytes({0x05, 0x01, 0x02}));
    EXPECT_EQ(socks.read_exact(2), bytes({0x05, 0x02}));
    socks.send(bytes({0x01, 1}) + "u" + bytes({1}) + "p");
    EXPECT_EQ(socks.read_exact(2), bytes({0x01, 0x00}));
    socks.send(bytes({0x05, 0x01, 0x00, 0x03, 11}) + "origin.test" + bytes({0x01, 0xbb}));
    EXPECT_EQ(socks.read_exact(2), bytes({0x05, 0x01}));
  }
  {
    TestClient http(proxy.port());
    http.send("CONNECT origin.test:443 HTTP/1.1\r\n\r\n");
    EXPECT_EQ(read_response_head(http).status, 503);
  }
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"method\":\"SOCKS5\"") &&
           contains(log, "\"reason\":\"connection-limit\"");
  })) << proxy.log_text();
}

}  // namespace
}  // namespace sandgate::testing
