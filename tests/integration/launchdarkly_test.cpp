// The LaunchDarkly allowlist through a real in-process gate, against the project's own fake
// LaunchDarkly (HTTPS on loopback, a CA made by the real openssl command): per-domain answers,
// merging and caching, every failure shape under each failover mode, outages answered at once,
// recovery, stale answers during an outage, a client leaving mid-lookup, and list mode with
// its stream (put, patch, delete, ping).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tests/fakes/fake_launchdarkly.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"

namespace sandgate::testing {
namespace {

using fakes::FakeLaunchDarkly;
using fakes::TcpOrigin;
using Behaviour = FakeLaunchDarkly::Behaviour;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

struct Options {
  settings::LdFailover failover = settings::LdFailover::deny;
  settings::LdMode mode = settings::LdMode::domain;
  std::chrono::milliseconds timeout = 2000ms;
  std::chrono::seconds ttl{3600};
  std::string base_uri;  // empty: the fake's
};

// A gate that asks `fake`, trusting the fake's CA, with loopback origins reachable by name.
std::unique_ptr<TestProxy> gate_for(FakeLaunchDarkly& fake, Options options = {}) {
  ::setenv("SSL_CERT_FILE", fake.ca_file().c_str(), 1);
  auto base =
      settings::parse_service_uri(options.base_uri.empty() ? fake.base_uri() : options.base_uri);
  EXPECT_TRUE(base.has_value());
  auto proxy = std::make_unique<TestProxy>("blocked.test\n", [&](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.threads = 2;
    s.launchdarkly_client_id = fakes::kFakeClientId;
    s.ld_failover = options.failover;
    s.ld_failover_given = true;
    s.ld_mode = options.mode;
    s.ld_timeout = options.timeout;
    s.ld_cache_ttl = options.ttl;
    s.ld_base_uri = *base;
    s.ld_stream_uri = *base;
    s.ld_context_key = "build-bot";
  });
  for (const char* name : {"allowed.test", "denied.test", "blocked.test", "other.test",
                           "a.wild.test", "late.test", "stale.test"}) {
    proxy->dns().set(name, {"127.0.0.1"});
  }
  for (int i = 0; i < 100; ++i) {
    proxy->dns().set("host" + std::to_string(i) + ".test", {"127.0.0.1"});
  }
  return proxy;
}

struct Outcome {
  int status = 0;
  std::string proxy_status;
};

Outcome connect_to(TestProxy& proxy, const std::string& host, std::uint16_t port) {
  TestClient client(proxy.port());
  auto head = send_connect(client, host + ":" + std::to_string(port));
  return {head.status, head.proxy_status};
}

// ---- Per-domain mode ----

TEST(LaunchDarklyDomainMode, TrueAllowsAnythingElseDenies) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("allowed.test", "true");
  fake.set_value("denied.test", "false");
  fake.set_value("other.test", "\"true\"");  // a string is not true
  auto proxy = gate_for(fake);

  EXPECT_EQ(connect_to(*proxy, "allowed.test", origin.port()).status, 200);
  const Outcome denied = connect_to(*proxy, "denied.test", origin.port());
  EXPECT_EQ(denied.status, 403);
  EXPECT_THAT(denied.proxy_status, HasSubstr("details=\"launchdarkly: LaunchDarkly's flag "
                                             "'egress-allowlist' is not true for denied.test"));
  EXPECT_EQ(connect_to(*proxy, "other.test", origin.port()).status, 403);
  // The local rules come first: a blocked host is never sent to LaunchDarkly.
  EXPECT_THAT(connect_to(*proxy, "blocked.test", origin.port()).proxy_status,
              HasSubstr("blocklist"));
  EXPECT_EQ(fake.evaluations_for("blocked.test"), 0);
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"launchdarkly\"") != std::string::npos;
  })) << proxy->log_text();
}

TEST(LaunchDarklyDomainMode, RequestsCarryTheContextAndNoCredentials) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("allowed.test", "true");
  auto proxy = gate_for(fake);
  ASSERT_EQ(connect_to(*proxy, "ALLOWED.test.", origin.port()).status, 200);

  ASSERT_EQ(fake.contexts().size(), 1u);
  const std::string context = fake.contexts()[0];
  EXPECT_THAT(context, HasSubstr("\"kind\":\"user\""));
  EXPECT_THAT(context, HasSubstr("\"key\":\"allowed.test\""));  // the normalised name
  EXPECT_THAT(context, HasSubstr("\"username\":"));
  ASSERT_EQ(fake.request_heads().size(), 1u) << "no analytics or other requests";
  const std::string head = fake.request_heads()[0];
  EXPECT_THAT(head, HasSubstr("REPORT /sdk/evalx/0123456789abcdef01234567/context HTTP/1.1"));
  EXPECT_THAT(head, HasSubstr("Content-Type: application/json"));
  EXPECT_EQ(head.find("Authorization"), std::string::npos) << head;
}

TEST(LaunchDarklyDomainMode, FiftySimultaneousConnectionsMakeOneRequest) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("allowed.test", "true");
  fake.set_delay(300ms);  // so that every connection arrives while the first lookup is out
  auto proxy = gate_for(fake);

  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 50; ++i) {
    clients.emplace_back([&] {
      if (connect_to(*proxy, "allowed.test", origin.port()).status == 200) {
        ++ok;
      }
    });
  }
  for (auto& client : clients) {
    client.join();
  }
  EXPECT_EQ(ok.load(), 50);
  EXPECT_EQ(fake.evaluations_for("allowed.test"), 1);
}

TEST(LaunchDarklyDomainMode, AnswersAreCachedUntilTheyExpire) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("allowed.test", "true");
  Options options;
  options.ttl = std::chrono::seconds(1);
  auto proxy = gate_for(fake, options);

  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(connect_to(*proxy, "allowed.test", origin.port()).status, 200);
  }
  EXPECT_EQ(fake.evaluations_for("allowed.test"), 1);
  const std::string metrics = proxy->remote_allowlist()->render_prometheus();
  EXPECT_THAT(metrics,
              HasSubstr("sandgate_launchdarkly_lookups_total{source=\"launchdarkly\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("sandgate_launchdarkly_lookups_total{source=\"cache\"} 4\n"));
  EXPECT_THAT(metrics, HasSubstr("sandgate_launchdarkly_requests_total{result=\"ok\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("sandgate_launchdarkly_up 1\n"));
  // Expired: asked again, and the new answer applies.
  fake.set_value("allowed.test", "false");
  std::this_thread::sleep_for(1100ms);
  EXPECT_EQ(connect_to(*proxy, "allowed.test", origin.port()).status, 403);
  EXPECT_EQ(fake.evaluations_for("allowed.test"), 2);
}

// Every shape of "no usable answer", under each failover mode.
struct FailureCase {
  const char* name;
  Behaviour behaviour;
  const char* why;  // in the log's explanation
};

class LaunchDarklyFailure
    : public ::testing::TestWithParam<std::tuple<FailureCase, settings::LdFailover>> {};

TEST_P(LaunchDarklyFailure, FailoverModeDecides) {
  const auto& [failure, mode] = GetParam();
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("allowed.test", "true");
  fake.set_behaviour(failure.behaviour);
  Options options;
  options.failover = mode;
  // Only the hanging service needs the timeout to fire; the others get one long enough that a
  // loaded machine (sanitizers, parallel tests) still sees their own failure, not a timeout.
  options.timeout = failure.behaviour == Behaviour::hang ? 500ms : 10000ms;
  auto proxy = gate_for(fake, options);

  const Outcome outcome = connect_to(*proxy, "allowed.test", origin.port());
  if (mode == settings::LdFailover::deny) {
    EXPECT_EQ(outcome.status, 403);
    EXPECT_THAT(outcome.proxy_status, HasSubstr("launchdarkly-unreachable"));
    EXPECT_THAT(outcome.proxy_status, HasSubstr(failure.why));
  } else {
    EXPECT_EQ(outcome.status, 200);
    const std::string expected =
        mode == settings::LdFailover::allow ? "failover allow" : "failover blocklist";
    EXPECT_TRUE(proxy->wait_for_log([&](const std::string& log) {
      return log.find(expected) != std::string::npos && log.find(failure.why) != std::string::npos;
    })) << proxy->log_text();
  }
  // Local rules still apply in every mode.
  EXPECT_EQ(connect_to(*proxy, "blocked.test", origin.port()).status, 403);
}

std::string failure_name(
    const ::testing::TestParamInfo<std::tuple<FailureCase, settings::LdFailover>>& info) {
  const char* modes[] = {"allow", "deny", "blocklist"};
  return std::string(std::get<0>(info.param).name) + "_" +
         modes[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    EveryShape, LaunchDarklyFailure,
    ::testing::Combine(
        ::testing::Values(FailureCase{"timeout", Behaviour::hang, "within 500 ms"},
                          FailureCase{"refused", Behaviour::refuse, "connection refused"},
                          FailureCase{"http404", Behaviour::status_404, "HTTP 404"},
                          FailureCase{"http500", Behaviour::status_500, "HTTP 500"},
                          FailureCase{"bad_json", Behaviour::bad_json, "not valid JSON"},
                          FailureCase{"wrong_type", Behaviour::wrong_content_type, "text/html"},
                          FailureCase{"no_flag", Behaviour::no_flag, "is not in LaunchDarkly"}),
        ::testing::Values(settings::LdFailover::allow, settings::LdFailover::deny,
                          settings::LdFailover::blocklist)),
    failure_name);

TEST(LaunchDarklyDomainMode, AnUntrustedCertificateIsAFailure) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  FakeLaunchDarkly other(
      fakes::kFakeClientId);  // another CA: trusting it does not make `fake` trusted
  fake.set_value("allowed.test", "true");
  auto proxy = [&] {
    ::setenv("SSL_CERT_FILE", other.ca_file().c_str(), 1);
    auto base = settings::parse_service_uri(fake.base_uri());
    return std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;
      s.launchdarkly_client_id = fakes::kFakeClientId;
      s.ld_failover = settings::LdFailover::deny;
      s.ld_base_uri = *base;
    });
  }();
  proxy->dns().set("allowed.test", {"127.0.0.1"});
  const Outcome outcome = connect_to(*proxy, "allowed.test", origin.port());
  EXPECT_EQ(outcome.status, 403);
  EXPECT_THAT(outcome.proxy_status, HasSubstr("certificate verify failed"));
  EXPECT_EQ(fake.evaluations(), 0) << "nothing was sent over the unverified connection";
}

TEST(LaunchDarklyDomainMode, DuringAnOutageConnectionsDoNotWait) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_behaviour(Behaviour::hang);
  Options options;
  options.failover = settings::LdFailover::deny;
  options.timeout = 3000ms;
  auto proxy = gate_for(fake, options);

  // The first lookup waits for the timeout and finds LaunchDarkly down.
  EXPECT_EQ(connect_to(*proxy, "host0.test", origin.port()).status, 403);
  const int asked = fake.evaluations();
  // 100 connections to other domains now: answered from the outage state, none asking.
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  std::atomic<int> refused{0};
  for (int i = 0; i < 100; ++i) {
    clients.emplace_back([&, i] {
      const Outcome outcome =
          connect_to(*proxy, "host" + std::to_string(i) + ".test", origin.port());
      if (outcome.status == 403 &&
          outcome.proxy_status.find("launchdarkly-unreachable") != std::string::npos) {
        ++refused;
      }
    });
  }
  for (auto& client : clients) {
    client.join();
  }
  const auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(refused.load(), 100);
  // At most the one retry the backoff allows in that time went out.
  EXPECT_LE(fake.evaluations(), asked + 1);
  // Not a timing measurement: a bound far above the expected few milliseconds, far below the
  // 100 timeouts goose would have waited one after another.
  EXPECT_LT(elapsed, 3000ms) << "connections waited for LaunchDarkly during a known outage";
}

TEST(LaunchDarklyDomainMode, RecoversAfterTheOutage) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("allowed.test", "true");
  fake.set_behaviour(Behaviour::refuse);
  Options options;
  options.failover = settings::LdFailover::deny;
  auto proxy = gate_for(fake, options);

  EXPECT_EQ(connect_to(*proxy, "allowed.test", origin.port()).status, 403);
  fake.set_behaviour(Behaviour::normal);
  // The first retry comes after at most 1 s (jittered); then answers flow again.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    status = connect_to(*proxy, "allowed.test", origin.port()).status;
    if (status == 200) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("LaunchDarkly reachable again") != std::string::npos;
  })) << proxy->log_text();
}

TEST(LaunchDarklyDomainMode, AnExpiredAnswerServesWhileUnreachable) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("stale.test", "true");
  Options options;
  options.failover = settings::LdFailover::deny;  // so that an allow can only be the stale answer
  options.ttl = std::chrono::seconds(1);
  auto proxy = gate_for(fake, options);

  ASSERT_EQ(connect_to(*proxy, "stale.test", origin.port()).status, 200);
  fake.set_behaviour(Behaviour::status_500);
  std::this_thread::sleep_for(1100ms);
  EXPECT_EQ(connect_to(*proxy, "stale.test", origin.port()).status, 200);  // asked, failed, stale
  EXPECT_EQ(connect_to(*proxy, "stale.test", origin.port()).status, 200);  // known outage, stale
  EXPECT_EQ(connect_to(*proxy, "other.test", origin.port()).status, 403);  // nothing cached
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("kept while LaunchDarkly is unreachable") != std::string::npos;
  })) << proxy->log_text();
}

TEST(LaunchDarklyDomainMode, AClientLeavingDuringALookupCostsNothing) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("late.test", "true");
  fake.set_value("allowed.test", "true");
  fake.set_delay(500ms);
  auto proxy = gate_for(fake);

  for (int i = 0; i < 10; ++i) {
    TestClient client(proxy->port());
    client.send("CONNECT late.test:" + std::to_string(origin.port()) + " HTTP/1.1\r\n\r\n");
    client.close();  // gone before LaunchDarkly answers
  }
  std::this_thread::sleep_for(700ms);
  fake.set_delay(0ms);
  // The gate is still here and serving, and made no tunnel for the clients that left.
  EXPECT_EQ(connect_to(*proxy, "allowed.test", origin.port()).status, 200);
  EXPECT_EQ(fake.evaluations_for("late.test"), 1);
}

TEST(LaunchDarklyDomainMode, PlainHttpForwardingIsCheckedToo) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_value("denied.test", "false");
  auto proxy = gate_for(fake);
  TestClient client(proxy->port());
  client.send("GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n");
  auto head = read_response_head(client);
  EXPECT_EQ(head.status, 403);
  EXPECT_THAT(head.proxy_status, HasSubstr("launchdarkly"));
}

// ---- List mode ----

Options list_mode() {
  Options options;
  options.mode = settings::LdMode::list;
  options.failover = settings::LdFailover::deny;
  return options;
}

// Waits until `host` gets `status` through the gate (the stream applies updates asynchronously).
bool eventually(TestProxy& proxy, const std::string& host, std::uint16_t port, int status) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (connect_to(proxy, host, port).status == status) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(LaunchDarklyListMode, TheListDecidesLocally) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test", "*.wild.test", "not a host!", 7])");
  auto proxy = gate_for(fake, list_mode());
  ASSERT_TRUE(eventually(*proxy, "allowed.test", origin.port(), 200));
  EXPECT_EQ(connect_to(*proxy, "a.wild.test", origin.port()).status, 200);
  const Outcome outcome = connect_to(*proxy, "other.test", origin.port());
  EXPECT_EQ(outcome.status, 403);
  EXPECT_THAT(outcome.proxy_status, HasSubstr("not-allowlisted"));
  // One context, the configured key; no host name was sent.
  for (const auto& context : fake.contexts()) {
    EXPECT_THAT(context, HasSubstr("\"key\":\"build-bot\""));
    EXPECT_EQ(context.find(".test"), std::string::npos) << context;
  }
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("entry 3 'not a host!' skipped") != std::string::npos &&
           log.find("entry 4 '7' skipped: not a string") != std::string::npos;
  })) << proxy->log_text();
}

TEST(LaunchDarklyListMode, StreamEventsChangeTheListLive) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_version(5);
  fake.set_default_value(R"(["allowed.test"])");
  auto proxy = gate_for(fake, list_mode());
  ASSERT_TRUE(fake.wait_for_streams(1, 5s));
  ASSERT_TRUE(eventually(*proxy, "allowed.test", origin.port(), 200));
  EXPECT_EQ(connect_to(*proxy, "other.test", origin.port()).status, 403);

  // A newer patch adds other.test.
  fake.push_event(
      "patch", R"({"key":"egress-allowlist","value":["allowed.test","other.test"],"version":6})");
  EXPECT_TRUE(eventually(*proxy, "other.test", origin.port(), 200));
  // An older one is ignored.
  fake.push_event("patch", R"({"key":"egress-allowlist","value":[],"version":4})");
  // Another flag's patch is ignored; a broken event is ignored.
  fake.push_event("patch", R"({"key":"other-flag","value":[],"version":99})");
  fake.push_event("patch", R"({"key":"egress-allowlist","value":)");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(connect_to(*proxy, "other.test", origin.port()).status, 200);

  // A ping makes the gate fetch again.
  const int before = fake.evaluations();
  fake.set_version(10);
  fake.set_default_value(R"(["other.test"])");
  fake.push_event("ping", "{}");
  EXPECT_TRUE(eventually(*proxy, "allowed.test", origin.port(), 403));
  EXPECT_GT(fake.evaluations(), before);

  // A delete leaves no list: the failover mode (deny) decides, with its own reason.
  fake.push_event("delete", R"({"key":"egress-allowlist","version":11})");
  EXPECT_TRUE(eventually(*proxy, "other.test", origin.port(), 403));
  EXPECT_THAT(connect_to(*proxy, "other.test", origin.port()).proxy_status,
              HasSubstr("launchdarkly-unreachable"));
  // A put brings it back.
  fake.push_event("put", R"({"egress-allowlist":{"value":["other.test"],"version":12}})");
  EXPECT_TRUE(eventually(*proxy, "other.test", origin.port(), 200)) << proxy->log_text();
}

TEST(LaunchDarklyListMode, FailoverUntilTheFirstListThenTheLastGoodListThroughOutages) {
  TcpOrigin origin;
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  fake.set_behaviour(Behaviour::refuse);
  auto proxy = gate_for(fake, list_mode());
  // No list yet: failover deny.
  const Outcome before = connect_to(*proxy, "allowed.test", origin.port());
  EXPECT_EQ(before.status, 403);
  EXPECT_THAT(before.proxy_status, HasSubstr("no list received"));

  fake.set_behaviour(Behaviour::normal);
  ASSERT_TRUE(eventually(*proxy, "allowed.test", origin.port(), 200));  // the first list
  // The list may have come from the fetch before the stream opened; closing streams
  // the fake has not yet accepted would close nothing.
  ASSERT_TRUE(fake.wait_for_streams(1, 10s));

  // LaunchDarkly goes away: the last good list stays.
  fake.set_behaviour(Behaviour::refuse);
  fake.close_streams();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(connect_to(*proxy, "allowed.test", origin.port()).status, 200);
  EXPECT_EQ(connect_to(*proxy, "other.test", origin.port()).status, 403);
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("the last good list stays in force") != std::string::npos;
  })) << proxy->log_text();

  // It comes back: the stream reconnects (backoff from 1 s).
  const int streams = fake.streams_opened();
  fake.set_behaviour(Behaviour::normal);
  EXPECT_TRUE(fake.wait_for_streams(streams + 1, 10s));
}

}  // namespace
}  // namespace sandgate::testing
