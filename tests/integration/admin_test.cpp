// The admin endpoint against a running proxy: counters after known traffic, recent denials,
// health and readiness, over real HTTP on loopback.
#include <gtest/gtest.h>

#include "proxy/admin/admin_server.hpp"
#include "proxy/commands/serve.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "proxy/reload/policy_reloader.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"

namespace sandgate::testing {
namespace {

// GET path from the admin listener at `address` ("127.0.0.1:PORT"); returns the whole response.
std::string http_get(const std::string& address, const std::string& path) {
  const auto port = static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
  TestClient client(port);
  client.send("GET " + path + " HTTP/1.1\r\nHost: " + address + "\r\n\r\n");
  return client.read_to_end();
}

// The value of one sample line `name value` in a Prometheus text body, or -1.
double sample_value(const std::string& body, const std::string& name) {
  const auto at = body.find("\n" + name + " ");
  if (at == std::string::npos) {
    return -1;
  }
  return std::stod(body.substr(at + name.size() + 2));
}

TEST(AdminEndpoint, CountsDecisionsBytesAndDenials) {
  fakes::TcpOrigin origin;
  TestProxy proxy("evil.test\n", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  auto log = log::DecisionLog::open(settings::LogFormat::json, proxy.folder() + "/r.log");
  reload::PolicyReloader reloader(proxy.settings(), settings::Sources{}, **log,
                                  proxy.server().current_policy(),
                                  [](std::shared_ptr<const rules::Policy>) {});
  admin::AdminHandlers handlers;
  handlers.metrics = [&] { return commands::render_metrics(proxy.server(), reloader); };
  handlers.denials = [&] { return metrics::render_denials_json(proxy.server().worker_metrics()); };
  handlers.ready = [&] { return proxy.server().accepting(); };
  admin::AdminServer admin(handlers);
  auto address = admin.start("127.0.0.1:0");
  ASSERT_TRUE(address) << address.error();

  // Known traffic: two denials, one tunnel carrying 1000 bytes each way.
  for (int i = 0; i < 2; ++i) {
    TestClient client(proxy.port());
    ASSERT_EQ(send_connect(client, "api.evil.test:443").status, 403);
  }
  {
    TestClient client(proxy.port());
    ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
    client.send(std::string(1000, 'x'));
    ASSERT_EQ(client.read_exact(1000).size(), 1000u);
    client.shutdown_write();
    client.read_to_end();
  }
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& text) {
    return text.find("\"event\":\"end\"") != std::string::npos;
  }));

  const std::string metrics = http_get(*address, "/metrics");
  EXPECT_NE(metrics.find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(metrics.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(sample_value(metrics, "sandgate_decisions_total{verdict=\"deny\",reason=\"blocklist\"}"),
            2);
  EXPECT_EQ(sample_value(metrics, "sandgate_decisions_total{verdict=\"allow\",reason=\"allowed\"}"),
            1);
  EXPECT_EQ(sample_value(metrics, "sandgate_tunnels_total"), 1);
  EXPECT_EQ(sample_value(metrics, "sandgate_open_tunnels"), 0);
  EXPECT_EQ(sample_value(metrics, "sandgate_bytes_total{direction=\"up\"}"), 1000);
  EXPECT_EQ(sample_value(metrics, "sandgate_bytes_total{direction=\"down\"}"), 1000);
  EXPECT_EQ(sample_value(metrics, "sandgate_upstream_connect_seconds_count"), 1);
  EXPECT_EQ(sample_value(metrics, "sandgate_dns_lookup_seconds_count"), 1);
  EXPECT_EQ(sample_value(metrics, "sandgate_rules_loaded{list=\"blocklist\"}"), 1);
  EXPECT_EQ(sample_value(metrics, "sandgate_build_info{version=\"0.1.0\"}"), 1);

  const std::string denials = http_get(*address, "/denials");
  EXPECT_NE(denials.find("\"host\":\"api.evil.test\""), std::string::npos) << denials;
  EXPECT_NE(denials.find("\"reason\":\"blocklist\""), std::string::npos) << denials;
  EXPECT_NE(denials.find("blocked.txt:1 evil.test"), std::string::npos) << denials;

  EXPECT_NE(http_get(*address, "/healthz").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(http_get(*address, "/readyz").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(http_get(*address, "/nope").find("HTTP/1.1 404"), std::string::npos);
  proxy.stop();
  EXPECT_NE(http_get(*address, "/readyz").find("HTTP/1.1 503"), std::string::npos);
}

TEST(AdminEndpoint, RefusesNonLoopbackAddresses) {
  admin::AdminServer admin(admin::AdminHandlers{});
  auto bound = admin.start("0.0.0.0:0");
  ASSERT_FALSE(bound);
  EXPECT_NE(bound.error().find("not loopback"), std::string::npos);
}

}  // namespace
}  // namespace sandgate::testing
