// Every reason the gate gives is counted under its own label: a real in-process gate is made to
// decide a representative set of reasons (the policy's, the request checks', DNS and connect
// failures, the TLS check of a tunnel, the gate's own), and each then shows in the rendered
// /metrics as `sandgate_decisions_total{verdict=..., reason=...}` with its row's verdict and a
// count, never as `other`. The reasons come from the table (rules/reason.hpp); the test only
// says how to produce each.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "proxy/metrics/prometheus.hpp"
#include "rules/reason.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;
using fakes::TcpOrigin;
using rules::Reason;

// The count of `reason` under its row's verdict in the rendered /metrics; nothing when there is
// no such series.
std::optional<std::uint64_t> counted(TestProxy& proxy, Reason reason) {
  const rules::ReasonInfo& row = rules::reason_info(reason);
  const std::string text = metrics::render_prometheus(proxy.server().worker_metrics(), {});
  const std::string series = "sandgate_decisions_total{verdict=\"" +
                             std::string(rules::verdict_name(row.verdict)) + "\",reason=\"" +
                             std::string(row.code) + "\",enforced=\"true\"} ";
  const auto at = text.find(series);
  if (at == std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(text.substr(at + series.size()));
}

// Waits (up to 5 s) until `reason` has been counted at least once.
bool eventually_counted(TestProxy& proxy, Reason reason) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (counted(proxy, reason).value_or(0) > 0) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
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

std::string connect_to(std::string_view host, std::uint16_t port) {
  return "CONNECT " + std::string(host) + ":" + std::to_string(port) + " HTTP/1.1\r\n\r\n";
}

// Sends `request` and reads until the gate closes.
void ask(TestProxy& proxy, const std::string& request) {
  TestClient client(proxy.port());
  client.send(request);
  client.read_to_end();
}

struct Produce {
  Reason reason;
  std::function<void()> produce;
};

void expect_each_counted(TestProxy& proxy, const std::vector<Produce>& cases) {
  for (const Produce& c : cases) {
    const std::string code(rules::reason_code(c.reason));
    SCOPED_TRACE(code);
    EXPECT_EQ(counted(proxy, c.reason), 0u) << "every reason is rendered, at 0 before it happens";
    c.produce();
    EXPECT_TRUE(eventually_counted(proxy, c.reason))
        << code << " was not counted under its own label in:\n"
        << metrics::render_prometheus(proxy.server().worker_metrics(), {}) << "\nlog:\n"
        << proxy.log_text();
  }
  const std::string text = metrics::render_prometheus(proxy.server().worker_metrics(), {});
  EXPECT_EQ(text.find("reason=\"other\""), std::string::npos) << text;
}

TEST(ReasonMetrics, ThePolicyTheRequestAndTheNetworkEachHaveTheirOwnLabel) {
  TcpOrigin origin;
  TcpOrigin tls_origin;
  TestProxy proxy("evil.test\n", [&tls_origin](settings::Settings& s) {
    s.policy.block_loopback = false;  // the origins are on loopback
    s.tls_ports = {tls_origin.port()};
    s.head_timeout = std::chrono::seconds(1);
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  proxy.dns().set("multicast.test", {"224.0.0.1"});
  proxy.dns().set("closed.test", {"127.0.0.1"});
  const std::uint16_t closed = closed_port();

  const std::vector<Produce> cases = {
      {Reason::allowed,
       [&] {
         TestClient client(proxy.port());
         ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status,
                   200);
       }},
      {Reason::blocklist, [&] { ask(proxy, connect_to("api.evil.test", 443)); }},
      {Reason::invalid_host, [&] { ask(proxy, "CONNECT evil.test:0443 HTTP/1.1\r\n\r\n"); }},
      {Reason::ip_address, [&] { ask(proxy, connect_to("93.184.216.34", 443)); }},
      {Reason::metadata_address, [&] { ask(proxy, connect_to("metadata.google.internal", 80)); }},
      {Reason::reserved_address, [&] { ask(proxy, connect_to("multicast.test", 80)); }},
      {Reason::ssh_non_git_host, [&] { ask(proxy, connect_to("example.test", 22)); }},
      {Reason::protocol_mismatch,
       [&] {
         TestClient client(proxy.port());
         ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(tls_origin.port())).status,
                   200);
         client.send("GET / HTTP/1.1\r\n\r\n");
         client.read_to_end();
       }},
      {Reason::sni_mismatch,
       [&] {
         TestClient client(proxy.port());
         ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(tls_origin.port())).status,
                   200);
         client.send(client_hello_records("other.example"));
         client.read_to_end();
       }},
      {Reason::origin_form, [&] { ask(proxy, "GET /path HTTP/1.1\r\nHost: a.test\r\n\r\n"); }},
      {Reason::https_absolute_form,
       [&] { ask(proxy, "GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n"); }},
      {Reason::unsupported_scheme,
       [&] { ask(proxy, "GET ftp://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n"); }},
      {Reason::bad_request, [&] { ask(proxy, "NOT HTTP AT ALL\r\n\r\n"); }},
      {Reason::header_too_large,
       [&] {
         ask(proxy,
             "GET http://a.test/ HTTP/1.1\r\nX-Big: " + std::string(17 * 1024, 'x') + "\r\n\r\n");
       }},
      {Reason::request_timeout, [&] { ask(proxy, "CONNECT a.test:443 HTTP/1.1\r\n"); }},
      {Reason::dns_not_found, [&] { ask(proxy, connect_to("nowhere.test", 80)); }},
      {Reason::connection_refused, [&] { ask(proxy, connect_to("closed.test", closed)); }},
      {Reason::no_request, [&] { TestClient silent(proxy.port()); }},
      {Reason::client_closed,
       [&] {
         TestClient partial(proxy.port());
         partial.send("GET http://a.test/ HTTP/1.1\r\nHost:");
         std::this_thread::sleep_for(100ms);
       }},
  };
  expect_each_counted(proxy, cases);
}

TEST(ReasonMetrics, TheTokenChecksHaveTheirOwnLabel) {
  TcpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.token = "a-token-of-sixteen-chars";
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());

  const std::vector<Produce> cases = {
      {Reason::auth_required,
       [&] { ask(proxy, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"); }},
      {Reason::auth_failed,
       [&] {
         ask(proxy, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target +
                        "\r\nProxy-Authorization: Basic dTp3cm9uZw==\r\n\r\n");  // u:wrong
       }},
  };
  expect_each_counted(proxy, cases);
}

TEST(ReasonMetrics, TheConnectionLimitHasItsOwnLabel) {
  TestProxy proxy("", [](settings::Settings& s) { s.max_connections = 1; });
  const std::vector<Produce> cases = {
      {Reason::connection_limit,
       [&] {
         TestClient first(proxy.port());
         first.send("CONNECT ");  // holds the one place
         // Until the gate has counted it (a slow build may take longer than any fixed sleep).
         for (int i = 0; i < 500 && proxy.server().open_connections() == 0; ++i) {
           std::this_thread::sleep_for(10ms);
         }
         ASSERT_EQ(proxy.server().open_connections(), 1u);
         TestClient second(proxy.port());
         const auto head = read_response_head(second);
         EXPECT_EQ(head.status, 503) << head.head;
       }},
  };
  expect_each_counted(proxy, cases);
}

}  // namespace
}  // namespace sandgate::testing
