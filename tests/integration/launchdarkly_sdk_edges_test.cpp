// The LaunchDarkly client at the edges where LaunchDarkly's own client SDKs decide what is right
// (issue #21), against the project's fake LaunchDarkly (HTTPS on loopback): final HTTP errors
// stop it, others retry; the backoff resets only after a connection was open long enough;
// Retry-After; a ping whose re-fetch lacks the flag; pings merged; a 5 MiB put; a burst of new
// domains capped and carried over kept-alive connections; Host with a port.
//
// These drive a RemoteAllowlist directly (the client is the unit under test; the gate's use of
// it is covered in launchdarkly_test.cpp), with its timing shrunk so that backoffs can be
// measured in a test's time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "proxy/launchdarkly/https_client.hpp"
#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "rules/host.hpp"
#include "tests/fakes/fake_launchdarkly.hpp"

namespace sandgate::testing {
namespace {

namespace asio = boost::asio;
using fakes::FakeLaunchDarkly;
using launchdarkly::Answer;
using launchdarkly::RemoteAllowlist;
using launchdarkly::Source;
using launchdarkly::Timing;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

rules::Host host(const std::string& name) { return *rules::parse_host(name); }

// Fast timing for tests: 100 ms first delay, no jitter, "healthy" after 1 s open.
Timing fast_timing() {
  Timing timing;
  timing.first_backoff = 100ms;
  timing.max_backoff = 3200ms;
  timing.healthy_connection = 1000ms;
  timing.jitter = false;
  return timing;
}

// A RemoteAllowlist asking `fake`, with the notes it logs kept for the test to read.
class Client {
 public:
  Client(FakeLaunchDarkly& fake, settings::LdMode mode, Timing timing = fast_timing(),
         std::function<void(settings::Settings&)> configure = {}) {
    ::setenv("SSL_CERT_FILE", fake.ca_file().c_str(), 1);
    settings_.launchdarkly_client_id = fakes::kFakeClientId;
    settings_.ld_failover = settings::LdFailover::deny;
    settings_.ld_failover_given = true;
    settings_.ld_mode = mode;
    settings_.ld_timeout = 3000ms;
    settings_.ld_context_key = "build-bot";
    settings_.ld_base_uri = *settings::parse_service_uri(fake.base_uri());
    settings_.ld_stream_uri = settings_.ld_base_uri;
    if (configure) {
      configure(settings_);
    }
    remote_ = std::make_unique<RemoteAllowlist>(
        settings_,
        [this](std::string_view level, std::string_view text) {
          std::lock_guard lock(mutex_);
          notes_.push_back(std::string(level) + ": " + std::string(text));
        },
        timing);
    remote_->start();
  }

  RemoteAllowlist& operator*() { return *remote_; }
  RemoteAllowlist* operator->() { return remote_.get(); }

  Answer ask(const std::string& name) { return remote_->check_blocking(host(name), 443); }

  int notes_with(const std::string& text) const {
    std::lock_guard lock(mutex_);
    int count = 0;
    for (const auto& note : notes_) {
      count += note.find(text) != std::string::npos ? 1 : 0;
    }
    return count;
  }
  std::string notes() const {
    std::lock_guard lock(mutex_);
    std::string all;
    for (const auto& note : notes_) {
      all += note + "\n";
    }
    return all;
  }
  bool wait_note(const std::string& text, std::chrono::milliseconds timeout = 5s) const {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (notes_with(text) > 0) {
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

 private:
  settings::Settings settings_;
  mutable std::mutex mutex_;
  std::vector<std::string> notes_;
  std::unique_ptr<RemoteAllowlist> remote_;  // last: stopped before the rest goes
};

// Waits until the answer for `name` satisfies `predicate`: up to 30 s, a bound on "it happened",
// never a measure of speed (a 5 MiB put took over 5 s under TSan on a loaded machine).
template <typename Predicate>
bool eventually(Client& client, const std::string& name, Predicate predicate) {
  const auto deadline = Clock::now() + 30s;
  while (Clock::now() < deadline) {
    if (predicate(client.ask(name))) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

bool allowed_by_list(const Answer& answer) {
  return answer.allowed && answer.source == Source::list;
}

// ---- 1. A ping whose re-fetch lacks the flag means no list, as a put without it does ----

TEST(LaunchDarklySdkEdges, APingWhoseRefetchLacksTheFlagMeansNoList) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  Client client(fake, settings::LdMode::list);
  ASSERT_TRUE(fake.wait_for_streams(1, 5s));
  ASSERT_TRUE(eventually(client, "allowed.test", allowed_by_list));

  fake.set_behaviour(FakeLaunchDarkly::Behaviour::no_flag);
  fake.push_event("ping", "{}");
  ASSERT_TRUE(eventually(client, "allowed.test", [](const Answer& a) { return !a.allowed; }));
  const Answer answer = client.ask("allowed.test");
  EXPECT_EQ(answer.source, Source::failover);
  EXPECT_THAT(answer.detail, HasSubstr("do not include the list flag"));
  // An answer, not a failure: LaunchDarkly still counts as reachable, nothing failed.
  EXPECT_TRUE(client->reachable());
  EXPECT_EQ(client->counters().requests_failed.load(), 0u);
  EXPECT_EQ(client->list_entries(), -1);

  fake.set_behaviour(FakeLaunchDarkly::Behaviour::normal);
  fake.push_event("ping", "{}");
  EXPECT_TRUE(eventually(client, "allowed.test", allowed_by_list));
}

// ---- 2. Final HTTP errors stop the client; the others are retried ----

class FinalStatus : public ::testing::TestWithParam<unsigned> {};

TEST_P(FinalStatus, StopsTheStreamWithOneClearError) {
  const unsigned status = GetParam();
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  fake.fail_next_streams(1000, status);
  Client client(fake, settings::LdMode::list);
  ASSERT_TRUE(client.wait_note("HTTP " + std::to_string(status))) << client.notes();
  // With a 100 ms first backoff, a retrying client would have asked ~5 more times by now.
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(fake.stream_requests().size(), 1u);
  EXPECT_EQ(client.notes_with("error: LaunchDarkly refused the gate"), 1) << client.notes();
  EXPECT_EQ(client.notes_with("client-side ID"), 1) << client.notes();
  // The failover mode (deny) decides; the fetched list is not trusted any more.
  const Answer answer = client.ask("allowed.test");
  EXPECT_FALSE(answer.allowed);
  EXPECT_EQ(answer.reason, rules::Reason::launchdarkly_unreachable);
  EXPECT_THAT(answer.detail, HasSubstr("HTTP " + std::to_string(status)));
  EXPECT_FALSE(client->reachable());
}

TEST_P(FinalStatus, StopsPerDomainRequests) {
  const unsigned status = GetParam();
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value("true");
  fake.fail_next_evaluations(1000, status);
  Client client(fake, settings::LdMode::domain);
  const Answer first = client.ask("a.test");
  EXPECT_FALSE(first.allowed);
  EXPECT_THAT(first.detail, HasSubstr("HTTP " + std::to_string(status)));
  std::this_thread::sleep_for(500ms);  // several backoffs' worth
  for (const char* name : {"b.test", "c.test", "a.test"}) {
    const Answer later = client.ask(name);
    EXPECT_FALSE(later.allowed);
    EXPECT_THAT(later.detail, HasSubstr("not asked again until the gate restarts"));
  }
  EXPECT_EQ(fake.evaluations(), 1);
  EXPECT_EQ(client.notes_with("error: "), 1) << client.notes();
}

INSTANTIATE_TEST_SUITE_P(LaunchDarklySdkEdges, FinalStatus, ::testing::Values(401u, 403u, 404u));

class RecoverableStatus : public ::testing::TestWithParam<unsigned> {};

TEST_P(RecoverableStatus, IsRetriedWithBackoff) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  fake.fail_next_streams(2, GetParam());
  Client client(fake, settings::LdMode::list);
  ASSERT_TRUE(fake.wait_for_streams(1, 5s)) << client.notes();
  const auto requests = fake.stream_requests();
  ASSERT_EQ(requests.size(), 3u);
  // 100 ms, then 200 ms (no jitter in these tests).
  EXPECT_GE(requests[1] - requests[0], 100ms);
  EXPECT_GE(requests[2] - requests[1], 200ms);
  EXPECT_EQ(client.notes_with("error: "), 0) << client.notes();
  EXPECT_TRUE(eventually(client, "allowed.test", allowed_by_list));
}

INSTANTIATE_TEST_SUITE_P(LaunchDarklySdkEdges, RecoverableStatus,
                         ::testing::Values(400u, 408u, 429u, 500u, 503u));

// ---- 3. The backoff resets only after the stream was open (headers received) long enough ----

TEST(LaunchDarklySdkEdges, BackoffResetsOnlyAfterTheStreamWasOpenLongEnough) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  // Headers come 1.2 s after each request: longer than "healthy" (1 s). Timed from before
  // connecting, every attempt would look healthy and the backoff would never grow.
  fake.set_delay(1200ms);
  Client client(fake, settings::LdMode::list);
  for (int opened = 1; opened <= 3; ++opened) {
    ASSERT_TRUE(fake.wait_for_streams(opened, 10s));
    fake.close_streams();  // open for a moment only
  }
  ASSERT_TRUE(fake.wait_for_streams(4, 10s));
  auto requests = fake.stream_requests();
  ASSERT_GE(requests.size(), 4u);
  // Each gap is the head delay, the moment open, and the backoff: 100, 200, 400 ms.
  const auto second_gap = requests[2] - requests[1];
  const auto third_gap = requests[3] - requests[2];
  EXPECT_GE(third_gap - second_gap, 150ms) << "the backoff did not grow";

  // Now open 1.3 s (more than healthy) before it ends: the next delay is the first again.
  fake.set_delay(0ms);
  fake.close_streams();
  ASSERT_TRUE(fake.wait_for_streams(5, 10s));
  std::this_thread::sleep_for(1300ms);
  const auto closed_at = Clock::now();
  fake.close_streams();
  ASSERT_TRUE(fake.wait_for_streams(6, 10s));
  requests = fake.stream_requests();
  EXPECT_LT(requests.back() - closed_at, 350ms) << "the backoff was not reset";
  EXPECT_GE(requests.back() - closed_at, 90ms);
}

// ---- 4. Parse limits sized for environments, and named when hit ----

std::string put_of_size(std::size_t bytes, const std::string& list) {
  std::string data = R"({"egress-allowlist":{"value":)" + list + R"(,"version":7})";
  int n = 0;
  while (data.size() < bytes) {
    data += ",\"pad-" + std::to_string(n++) + "\":{\"value\":\"" + std::string(64 * 1024, 'x') +
            "\",\"version\":1}";
  }
  return data + "}";
}

TEST(LaunchDarklySdkEdges, AFiveMebibytePutIsAccepted) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  Client client(fake, settings::LdMode::list);
  ASSERT_TRUE(fake.wait_for_streams(1, 5s));
  ASSERT_TRUE(eventually(client, "allowed.test", allowed_by_list));
  fake.push_event("put", put_of_size(5u << 20, R"(["big.test"])"));
  EXPECT_TRUE(eventually(client, "big.test", allowed_by_list)) << client.notes();
  EXPECT_EQ(fake.streams_opened(), 1) << "the stream was dropped";
}

TEST(LaunchDarklySdkEdges, APutBeyondTheLimitSaysWhichLimit) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  Client client(fake, settings::LdMode::list, fast_timing(),
                [](settings::Settings& s) { s.ld_max_payload = 1u << 20; });
  ASSERT_TRUE(fake.wait_for_streams(1, 5s));
  fake.push_event("put", put_of_size(2u << 20, R"(["big.test"])"));
  EXPECT_TRUE(client.wait_note("SANDGATE_LD_MAX_PAYLOAD")) << client.notes();
  EXPECT_TRUE(fake.wait_for_streams(2, 5s)) << "the stream reconnects";
}

// ---- 5. A burst of new domains: capped, over kept-alive connections ----

asio::awaitable<void> ask_one(RemoteAllowlist* remote, std::string name,
                              std::atomic<int>* allowed) {
  const Answer answer = co_await remote->check(*rules::parse_host(name), 443);
  if (answer.allowed && answer.source == Source::network) {
    ++*allowed;
  }
}

TEST(LaunchDarklySdkEdges, FiveHundredNewDomainsAtOnceStayUnderTheCap) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value("true");
  fake.set_delay(5ms);  // so that requests overlap
  // Declared before the client, so that the client's thread (which posts the answers here) is
  // joined before this loop is destroyed.
  asio::io_context io;
  Client client(fake, settings::LdMode::domain, fast_timing(), [](settings::Settings& s) {
    s.ld_max_lookups = 8;
    s.ld_timeout = 30s;  // a queue 500 deep must not time out on a slow machine
  });
  std::atomic<int> allowed{0};
  for (int i = 0; i < 500; ++i) {
    asio::co_spawn(io, ask_one(&*client, "burst" + std::to_string(i) + ".test", &allowed),
                   asio::detached);
  }
  io.run();
  EXPECT_EQ(allowed.load(), 500);
  EXPECT_EQ(fake.evaluations(), 500);
  EXPECT_LE(fake.max_open_connections(), 8);
  EXPECT_LE(fake.connections(), 8) << "connections were not reused";
  for (const auto& head : fake.request_heads()) {
    EXPECT_EQ(head.find("Connection: close"), std::string::npos) << head;
  }
}

// ---- 6. Retry-After ----

TEST(LaunchDarklySdkEdges, RetryAfterIsHonouredOnTheStream) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  fake.fail_next_streams(1, 429, "2");
  Client client(fake, settings::LdMode::list);
  ASSERT_TRUE(fake.wait_for_streams(1, 10s));
  const auto requests = fake.stream_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(requests[1] - requests[0], 1950ms);  // not the 100 ms backoff
}

TEST(LaunchDarklySdkEdges, RetryAfterIsHonouredPerDomain) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value("true");
  fake.fail_next_evaluations(1, 503, "2");
  Client client(fake, settings::LdMode::domain);
  EXPECT_EQ(client.ask("a.test").source, Source::failover);
  const auto failed_at = Clock::now();
  // Well past the 100 ms backoff, within the 2 s asked for: no request, the outage answer.
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(client.ask("b.test").source, Source::failover);
  EXPECT_EQ(fake.evaluations(), 1);
  while (Clock::now() - failed_at < 2100ms) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(client.ask("b.test").allowed);
  EXPECT_EQ(fake.evaluations(), 2);
}

// ---- 7. Pings merged ----

TEST(LaunchDarklySdkEdges, PingsAreMerged) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value(R"(["allowed.test"])");
  Client client(fake, settings::LdMode::list);
  ASSERT_TRUE(fake.wait_for_streams(1, 5s));
  ASSERT_TRUE(eventually(client, "allowed.test", allowed_by_list));
  const int before = fake.evaluations();
  fake.set_delay(300ms);  // the first re-fetch is still out while the other pings arrive
  for (int i = 0; i < 20; ++i) {
    fake.push_event("ping", "{}");
  }
  std::this_thread::sleep_for(1500ms);
  const int refetches = fake.evaluations() - before;
  EXPECT_GE(refetches, 1);
  EXPECT_LE(refetches, 2) << "one re-fetch, and one more for the pings that came meanwhile";
}

// ---- 8. Host carries a non-default port ----

TEST(LaunchDarklySdkEdges, HostCarriesTheServicePort) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value("true");
  Client client(fake, settings::LdMode::domain);
  ASSERT_TRUE(client.ask("a.test").allowed);
  ASSERT_FALSE(fake.request_heads().empty());
  EXPECT_THAT(fake.request_heads()[0], HasSubstr("Host: localhost:" + std::to_string(fake.port())));

  using launchdarkly::host_field;
  EXPECT_EQ(host_field({true, "clientsdk.launchdarkly.com", 443, {}}),
            "clientsdk.launchdarkly.com");
  EXPECT_EQ(host_field({false, "127.0.0.1", 80, {}}), "127.0.0.1");
  EXPECT_EQ(host_field({true, "relay.example", 8030, {}}), "relay.example:8030");
  EXPECT_EQ(host_field({false, "::1", 8030, {}}), "[::1]:8030");
  EXPECT_EQ(host_field({true, "::1", 443, {}}), "[::1]");
}

// ---- 9. Replies held at once: one gate-wide budget (issue 27) ----

// Waits (bounded) until `predicate` holds; the tests assert outcomes, not how long they took.
template <typename Predicate>
bool wait_until(Predicate predicate, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (predicate()) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return predicate();
}

// Lookups from threads of their own, each blocking until its answer.
class Lookups {
 public:
  Lookups(Client& client, const std::vector<std::string>& names) {
    for (const auto& name : names) {
      threads_.emplace_back([this, &client, name] {
        Answer answer = client.ask(name);
        std::lock_guard lock(mutex_);
        answers_.push_back(std::move(answer));
      });
    }
  }
  ~Lookups() { join(); }
  void join() {
    for (auto& thread : threads_) {
      if (thread.joinable()) {
        thread.join();
      }
    }
  }
  std::size_t answered() const {
    std::lock_guard lock(mutex_);
    return answers_.size();
  }
  std::vector<Answer> answers() const {
    std::lock_guard lock(mutex_);
    return answers_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Answer> answers_;
  std::vector<std::thread> threads_;
};

// 1 MiB per reply: a 2 MiB budget for every reply held at once.
void small_payloads(settings::Settings& s) {
  s.ld_max_payload = 1u << 20;
  s.ld_max_lookups = 16;
  s.ld_timeout = 30s;  // the held replies must not time out on a slow machine
}

constexpr std::size_t kLargeReply = 700u << 10;  // three do not fit in 2 MiB, two do

// Sixteen new domains at once, each answered with a 700 KiB reply that states its length and
// whose body is held back: two fit in the budget, fourteen are refused on their head, before a
// byte of their body is read, and take the failover answer (deny) without LaunchDarkly counting
// as down. Once the two are let go, the budget is free again.
TEST(LaunchDarklySdkEdges, RepliesHeldAtOnceStayWithinOneBudget) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value("true");
  fake.set_reply_size(kLargeReply, FakeLaunchDarkly::Framing::length);
  fake.hold_replies();
  Client client(fake, settings::LdMode::domain, fast_timing(), small_payloads);
  ASSERT_EQ(client->reply_budget().total(), 2u << 20);
  std::vector<std::string> names;
  for (int i = 0; i < 16; ++i) {
    names.push_back("large" + std::to_string(i) + ".test");
  }
  Lookups lookups(client, names);
  ASSERT_TRUE(wait_until([&] { return lookups.answered() == 14 && fake.held_replies() == 16; }))
      << lookups.answered() << " answered, " << fake.held_replies() << " held\n"
      << client.notes();
  EXPECT_EQ(client->reply_budget().in_use(), 2 * kLargeReply);
  EXPECT_EQ(client->reply_budget().refusals(), 14u);
  for (const Answer& answer : lookups.answers()) {
    EXPECT_FALSE(answer.allowed);
    EXPECT_EQ(answer.source, Source::failover);
    EXPECT_EQ(answer.reason, rules::Reason::launchdarkly_unreachable);
    EXPECT_THAT(answer.detail, HasSubstr("twice SANDGATE_LD_MAX_PAYLOAD"));
  }
  EXPECT_TRUE(client->reachable()) << "the gate's own limit is no outage of LaunchDarkly";
  EXPECT_EQ(client.notes_with("LaunchDarkly reply refused"), 1) << client.notes();
  EXPECT_THAT(client->render_prometheus(),
              HasSubstr("sandgate_launchdarkly_replies_over_budget_total 14\n"));

  fake.release_replies();
  lookups.join();
  int allowed = 0;
  for (const Answer& answer : lookups.answers()) {
    allowed += answer.allowed && answer.source == Source::network ? 1 : 0;
  }
  EXPECT_EQ(allowed, 2);
  EXPECT_EQ(client->reply_budget().in_use(), 0u) << "given back after parsing";
  EXPECT_LE(client->reply_budget().peak(), client->reply_budget().total());
  const Answer later = client.ask("later.test");
  EXPECT_TRUE(later.allowed) << later.detail;
  EXPECT_EQ(later.source, Source::network);
}

// A reply without a length (chunked) is charged as its bytes arrive: with most of the budget
// held by two replies, a chunked 700 KiB reply is refused part-way, the failover applies to its
// lookup alone, and once the budget is free again the same reply is accepted.
TEST(LaunchDarklySdkEdges, AChunkedReplyIsChargedAsItArrives) {
  FakeLaunchDarkly fake(fakes::kFakeClientId);
  fake.set_default_value("true");
  fake.set_reply_size(kLargeReply, FakeLaunchDarkly::Framing::length);
  fake.hold_replies();
  Client client(fake, settings::LdMode::domain, fast_timing(), small_payloads);
  Lookups holding(client, {"held1.test", "held2.test"});
  ASSERT_TRUE(wait_until([&] { return client->reply_budget().in_use() == 2 * kLargeReply; }))
      << client.notes();

  fake.set_reply_size(kLargeReply, FakeLaunchDarkly::Framing::chunked);
  fake.hold_replies(false);  // the two stay held; the next reply streams at once
  const Answer refused = client.ask("chunked.test");
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.source, Source::failover);
  EXPECT_THAT(refused.detail, HasSubstr("bytes so far"));
  EXPECT_EQ(client->reply_budget().refusals(), 1u);
  EXPECT_EQ(client->reply_budget().in_use(), 2 * kLargeReply) << "the refused part was given back";

  fake.release_replies();
  holding.join();
  for (const Answer& answer : holding.answers()) {
    EXPECT_TRUE(answer.allowed) << answer.detail;
  }
  const Answer accepted = client.ask("chunked2.test");
  EXPECT_TRUE(accepted.allowed) << accepted.detail;
  EXPECT_EQ(accepted.source, Source::network);
  EXPECT_EQ(client->reply_budget().in_use(), 0u);
}

}  // namespace
}  // namespace sandgate::testing
