// The admin endpoint against a running proxy: counters after known traffic, recent denials,
// health and readiness, over real HTTP on loopback. Then what a hostile or broken client can do
// to it: non-UTF-8 bytes in a denied request (the JSON log and /denials stay valid JSON), more
// connections than the cap, an oversized or never-finished request head, a client that never
// reads, and running out of descriptors (the accept loop must pause, not spin).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
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
#include "tests/support/sanitized_build.hpp"

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

using namespace std::chrono_literals;

// Waits until `done()` holds or `timeout` passes; returns whether it held.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(10ms);
  }
  return true;
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

// An admin endpoint with trivial handlers and the given limits; it collects its notes.
class TestAdmin {
 public:
  explicit TestAdmin(
      admin::AdminLimits limits = {},
      std::function<std::string()> metrics = [] { return std::string("m 1\n"); }) {
    admin::AdminHandlers handlers;
    handlers.metrics = std::move(metrics);
    handlers.denials = [] { return std::string("[]"); };
    handlers.ready = [] { return true; };
    // Runs on the admin thread, possibly with no descriptor left: memory only.
    handlers.note = [this](std::string_view, std::string_view text) {
      const std::lock_guard lock(mutex_);
      notes_.emplace_back(text);
    };
    server_ = std::make_unique<admin::AdminServer>(std::move(handlers), limits);
    auto bound = server_->start({"127.0.0.1", 0});
    if (!bound) {
      throw std::runtime_error(bound.error());
    }
    address_ = *bound;
    port_ = static_cast<std::uint16_t>(std::stoul(address_.substr(address_.rfind(':') + 1)));
  }

  const std::string& address() const { return address_; }
  std::uint16_t port() const { return port_; }
  std::size_t open() const { return server_->open_connections(); }
  // The notes that contain `text`.
  std::size_t notes_with(std::string_view text) {
    const std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count_if(
        notes_.begin(), notes_.end(),
        [&](const std::string& note) { return note.find(text) != std::string::npos; }));
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> notes_;
  std::unique_ptr<admin::AdminServer> server_;  // last: stopped before the notes go
  std::string address_;
  std::uint16_t port_ = 0;
};

// 64 connections at most: one more is closed at once, unanswered; when one ends, the endpoint
// serves again.
TEST(AdminEndpoint, ClosesConnectionsOverTheCapAtOnce) {
  TestAdmin admin;  // the default limits
  ASSERT_EQ(admin::AdminLimits{}.max_connections, 64u);
  std::vector<std::unique_ptr<TestClient>> idle;
  for (int i = 0; i < 64; ++i) {
    idle.push_back(std::make_unique<TestClient>(admin.port()));
  }
  ASSERT_TRUE(eventually([&] { return admin.open() == 64; })) << admin.open();

  // Closed at once: well before the 10 s an idle connection is given (read_to_end throws if the
  // connection is still open after 5 s).
  TestClient extra(admin.port());
  EXPECT_EQ(extra.read_to_end(nullptr, 5s), "");
  EXPECT_EQ(admin.open(), 64u);
  EXPECT_EQ(admin.notes_with("64 connections open"), 1u);

  idle.pop_back();
  ASSERT_TRUE(eventually([&] { return admin.open() == 63; })) << admin.open();
  EXPECT_NE(http_get(admin.address(), "/healthz").find("HTTP/1.1 200"), std::string::npos);
}

// The request head may be 8 KiB: just under is served, over is answered 431 and closed at once.
TEST(AdminEndpoint, RequestHeadIsBoundedInSize) {
  admin::AdminLimits limits;
  limits.request_timeout = 60s;  // only the size limit can end these requests early
  TestAdmin admin(limits);
  {
    TestClient client(admin.port());
    client.send("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Pad: " + std::string(8000, 'a') +
                "\r\n\r\n");
    EXPECT_NE(client.read_to_end(nullptr, 5s).find("HTTP/1.1 200"), std::string::npos);
  }
  {
    TestClient client(admin.port());
    client.send("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Pad: " + std::string(9000, 'a'));
    const std::string reply = client.read_to_end(nullptr, 5s);  // closed, not waiting for more
    EXPECT_TRUE(reply.empty() || reply.starts_with("HTTP/1.1 431")) << reply;
  }
  EXPECT_TRUE(eventually([&] { return admin.open() == 0; })) << admin.open();
}

// A head that never ends is closed, unanswered, at the request deadline.
TEST(AdminEndpoint, UnfinishedRequestIsClosedAtItsDeadline) {
  admin::AdminLimits limits;
  limits.request_timeout = 200ms;
  TestAdmin admin(limits);
  TestClient client(admin.port());
  client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n");
  EXPECT_EQ(client.read_to_end(nullptr, 5s), "");
  EXPECT_TRUE(eventually([&] { return admin.open() == 0; })) << admin.open();
}

// A client that asks for a large answer and never reads it loses its connection at the response
// deadline instead of holding a slot for ever.
TEST(AdminEndpoint, ClientThatNeverReadsIsCutOff) {
  admin::AdminLimits limits;
  limits.response_timeout = 300ms;
  TestAdmin admin(limits, [] { return std::string(std::size_t{64} << 20, 'x'); });
  TestClient client(admin.port());
  client.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return admin.open() == 1; }));
  EXPECT_TRUE(eventually([&] { return admin.open() == 0; })) << "still writing to a stuck client";
}

// HEAD gets the length a GET would, and no body.
TEST(AdminEndpoint, HeadAnswersWithTheLengthAndNoBody) {
  TestAdmin admin;
  TestClient client(admin.port());
  client.send("HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
  const std::string reply = client.read_to_end(nullptr, 5s);
  EXPECT_NE(reply.find("HTTP/1.1 200"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Content-Length: 3\r\n"), std::string::npos) << reply;
  EXPECT_TRUE(reply.ends_with("\r\n\r\n")) << reply;
}

// CPU time this process has used, every thread, user and system. No descriptor needed.
std::chrono::duration<double> process_cpu_time() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return std::chrono::duration<double>(seconds(usage.ru_utime) + seconds(usage.ru_stime));
}

// Out of descriptors (issue 14): a connection waits in the backlog, accept fails with EMFILE
// again and again, and the endpoint must pause between tries rather than spin a core. The
// soft RLIMIT_NOFILE is lowered to the lowest free descriptor, so that this process can open
// nothing at all; the test itself uses no descriptor until the limit is back.
// The sanitizers' runtimes need descriptors of their own while this process has none (UBSan's
// vptr check probes memory through a pipe and reports a false "invalid vptr" when it cannot make
// one: tests/support/sanitized_build.hpp), so this case runs in the release job only; every
// other admin case runs sanitized.

TEST(AdminEndpoint, BacksOffInsteadOfSpinningWhileOutOfDescriptors) {
  if (kSanitizedBuild) {
    GTEST_SKIP() << "a sanitizer runtime cannot work without descriptors; the release job runs "
                    "this case";
  }
  TestAdmin admin;
  // The client's socket exists before the limit drops; it connects after (the kernel completes
  // a loopback connection into the backlog without the endpoint's accept).
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  sockaddr_in endpoint{};
  endpoint.sin_family = AF_INET;
  endpoint.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  endpoint.sin_port = htons(admin.port());

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int lowest_free = ::dup(client);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  const rlimit lowered{static_cast<rlim_t>(lowest_free), saved.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const int probe = ::dup(client);
  const int probe_errno = errno;
  const int connected =
      ::connect(client, reinterpret_cast<const sockaddr*>(&endpoint), sizeof endpoint);
  const auto cpu_before = process_cpu_time();
  const auto wall_before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1s);
  const std::chrono::duration<double> cpu = process_cpu_time() - cpu_before;
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_before;
  const std::size_t complaints = admin.notes_with("accept failed");
  ::setrlimit(RLIMIT_NOFILE, &saved);  // before any assertion can end the test

  ASSERT_EQ(probe, -1) << "the limit did not leave the process without descriptors";
  ASSERT_EQ(probe_errno, EMFILE);
  ASSERT_EQ(connected, 0) << std::strerror(errno);
  std::printf("out of descriptors: %.3f s of CPU in %.3f s\n", cpu.count(), wall.count());
  EXPECT_LT(cpu.count(), 0.2 * wall.count())
      << "the admin endpoint used " << cpu.count() << " s of CPU in " << wall.count()
      << " s while out of descriptors";
  // It said so, and not on every try (about ten in that second): at most once a second.
  EXPECT_GE(complaints, 1u);
  EXPECT_LE(complaints, 2u);

  // With descriptors back, the connection that waited is served.
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n";
  ASSERT_EQ(::send(client, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string reply;
  char buffer[4096];
  pollfd readable{client, POLLIN, 0};
  while (::poll(&readable, 1, 5000) == 1) {
    const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
    if (n <= 0) {
      break;
    }
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(client);
  EXPECT_NE(reply.find("HTTP/1.1 200"), std::string::npos) << reply;
}

}  // namespace
}  // namespace sandgate::testing
