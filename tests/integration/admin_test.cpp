// The admin endpoint against a running proxy: counters after known traffic, recent denials,
// health and readiness, over real HTTP on loopback, and non-UTF-8 bytes in a denied request (the
// JSON log and /denials stay valid JSON). What a hostile or broken client can do to the endpoint
// itself: tests/unit/proxy/admin/admin_server_test.cpp.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "proxy/admin/admin_server.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "proxy/reload/policy_reloader.hpp"
#include "proxy/settings/load.hpp"
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
  // The gate's own admin endpoint, as `serve --admin 127.0.0.1:0` starts it.
  TestProxy proxy("evil.test\n", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::optional<std::string> address = proxy.gate().admin_address();
  ASSERT_FALSE(address->empty());

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
  ASSERT_TRUE(proxy.wait_for_log(
      [](const std::string& text) { return text.find("\"event\":\"end\"") != std::string::npos; }));

  const std::string metrics = http_get(*address, "/metrics");
  EXPECT_NE(metrics.find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(metrics.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(
      sample_value(
          metrics,
          "sandgate_decisions_total{verdict=\"deny\",reason=\"blocklist\",enforced=\"true\"}"),
      2);
  EXPECT_EQ(sample_value(
                metrics,
                "sandgate_decisions_total{verdict=\"allow\",reason=\"allowed\",enforced=\"true\"}"),
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
  auto bound = admin.start({"0.0.0.0", 0});
  ASSERT_FALSE(bound);
  EXPECT_NE(bound.error().find("not loopback"), std::string::npos);
}

// The admin address is parsed once, with the settings: a malformed one is a start-up error that
// names the flag.
TEST(AdminEndpoint, RefusesMalformedAddresses) {
  for (const char* listen : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536",
                             "[::1]", "[::1]x1", "[::1"}) {
    settings::Sources sources;
    sources.flags.emplace("--admin", listen);
    sources.home = "/nonexistent-home";
    auto loaded = settings::load(sources);
    ASSERT_FALSE(loaded) << listen;
    EXPECT_EQ(loaded.error().rfind("--admin=", 0), 0u) << loaded.error();
  }
}

// The body of a whole HTTP response.
std::string body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

// Boost.JSON's strict parse (it refuses text that is not UTF-8); the error text, or empty.
std::string json_error(std::string_view text, boost::json::value* value = nullptr) {
  boost::system::error_code error;
  auto parsed = boost::json::parse(boost::json::string_view(text.data(), text.size()), error);
  if (value != nullptr) {
    *value = std::move(parsed);
  }
  return error ? error.message() : std::string();
}

// The replacement character, as the JSON writer puts it for each ill-formed stretch.
constexpr std::string_view kReplacement = "\xef\xbf\xbd";

// A client sends hosts that are not UTF-8 (issue 14): the gate denies them, and every line of its
// JSON log and the whole of /denials still parse as strict JSON, with each ill-formed stretch
// read back as U+FFFD.
TEST(AdminEndpoint, NonUtf8HostsKeepTheJsonLogAndDenialsValid) {
  TestProxy proxy("evil.test\n");  // JSON log
  admin::AdminHandlers handlers;
  handlers.metrics = [] { return std::string(); };
  handlers.denials = [&] { return metrics::render_denials_json(proxy.server().worker_metrics()); };
  handlers.ready = [] { return true; };
  admin::AdminServer admin(handlers);
  auto address = admin.start({"127.0.0.1", 0});
  ASSERT_TRUE(address) << address.error();

  // Not UTF-8 at all, a surrogate, an overlong '/', a sequence cut short, a C1 control.
  const std::vector<std::string> targets = {"\xff\xfe.example:443", "\xed\xa0\x80.example:443",
                                            "\xc0\xaf.example:443", "a\xe2\x82:443",
                                            "\xc2\x9b[31m.example:443"};
  for (const std::string& target : targets) {
    TestClient client(proxy.port());
    const auto reply = send_connect(client, target);
    EXPECT_GE(reply.status, 400) << reply.head;
  }
  {
    TestClient client(proxy.port());
    client.send("GET http://\xff\xfe.example/ HTTP/1.1\r\nHost: \xff\xfe.example\r\n\r\n");
    EXPECT_GE(read_response_head(client).status, 400);
  }
  const std::size_t denials = targets.size() + 1;
  ASSERT_TRUE(proxy.wait_for_log([&](const std::string& text) {
    std::size_t count = 0;
    for (auto at = text.find("\"verdict\":\"deny\""); at != std::string::npos;
         at = text.find("\"verdict\":\"deny\"", at + 1)) {
      ++count;
    }
    return count >= denials;
  })) << proxy.log_text();

  // Every line of the log parses; the first host reads back with two replacements.
  std::istringstream lines(proxy.log_text());
  std::string line;
  std::vector<std::string> hosts;
  while (std::getline(lines, line)) {
    boost::json::value value;
    const std::string error = json_error(line, &value);
    EXPECT_EQ(error, "") << line;
    if (!error.empty()) {
      continue;  // and go on to /denials, which must be valid on its own
    }
    if (const auto* host = value.as_object().if_contains("host")) {
      hosts.emplace_back(host->as_string().c_str(), host->as_string().size());
    }
  }
  const std::string first = std::string(kReplacement) + std::string(kReplacement) + ".example:443";
  EXPECT_NE(std::find(hosts.begin(), hosts.end(), first), hosts.end());

  // And /denials, as a whole.
  const std::string response = http_get(*address, "/denials");
  ASSERT_NE(response.find("HTTP/1.1 200"), std::string::npos) << response;
  boost::json::value value;
  ASSERT_EQ(json_error(body_of(response), &value), "") << response;
  ASSERT_TRUE(value.is_array());
  EXPECT_EQ(value.as_array().size(), denials);
  bool found = false;
  for (const auto& denial : value.as_array()) {
    const auto& host = denial.at("host").as_string();
    found = found || std::string_view(host.data(), host.size()) == first;
  }
  EXPECT_TRUE(found) << response;
}

}  // namespace
}  // namespace sandgate::testing
