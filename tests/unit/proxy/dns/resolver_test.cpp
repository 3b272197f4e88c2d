// Resolver against a real DNS server on loopback (tests/fakes/fake_dns_server): real UDP and TCP,
// c-ares on the Asio loop, no mocks. Counters on the fake prove merging, caching and retries;
// timing bounds are generous on purpose (they catch hangs, not slowness). Longer than most files:
// it is the one place the resolver's whole contract (lookups, cache, hosts file, failures,
// destruction) is pinned, one short case each, sharing one fixture.
#include "proxy/dns/resolver.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_dns_server.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using sandgate::dns::Resolution;
using sandgate::dns::ResolveError;
using sandgate::dns::Resolver;
using sandgate::dns::ResolverOptions;
using sandgate::fakes::DnsType;
using sandgate::fakes::FakeDnsServer;
using steady_clock = std::chrono::steady_clock;

// Named coroutines (never capturing lambdas: GCC 12 frame bugs); pointers passed by value.
asio::awaitable<void> resolve_into(Resolver* resolver, std::string name,
                                   std::optional<Resolution>* out) {
  *out = co_await resolver->resolve(std::move(name));
}

// Resolves `name` but gives up after `patience`, as a session with its own deadline would.
asio::awaitable<void> resolve_with_patience(Resolver* resolver, std::string name,
                                            std::chrono::milliseconds patience,
                                            std::optional<Resolution>* out) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, patience);
  auto winner =
      co_await (resolver->resolve(std::move(name)) || timer.async_wait(asio::use_awaitable));
  if (winner.index() == 0) {
    *out = std::get<0>(std::move(winner));
  }
}

// Runs `io` until `done()` or `limit` passes (a hang fails the test instead of blocking ctest).
bool run_until(asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds limit = 10s) {
  const steady_clock::time_point deadline = steady_clock::now() + limit;
  while (!done()) {
    if (steady_clock::now() >= deadline) {
      return false;
    }
    if (io.stopped()) {
      io.restart();
    }
    io.run_one_for(10ms);
  }
  return true;
}

Resolution resolve_now(asio::io_context& io, Resolver& resolver, std::string name) {
  std::optional<Resolution> result;
  asio::co_spawn(io, resolve_into(&resolver, std::move(name), &result), asio::detached);
  if (!run_until(io, [&] { return result.has_value(); })) {
    ADD_FAILURE() << "lookup did not complete";
    Resolution failed;
    failed.error = ResolveError::cancelled;
    return failed;
  }
  return *result;
}

bool contains(const Resolution& result, const char* address) {
  const auto wanted = asio::ip::make_address(address);
  return std::find(result.addresses.begin(), result.addresses.end(), wanted) !=
         result.addresses.end();
}

// A hosts file of the test's own, removed at the end.
class TempHosts {
 public:
  TempHosts() {
    path_ = std::filesystem::temp_directory_path() /
            ("sandgate-hosts-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
  }
  ~TempHosts() { std::filesystem::remove(path_); }
  void write(const std::string& text) const { std::ofstream(path_, std::ios::trunc) << text; }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

class ResolverTest : public ::testing::Test {
 protected:
  ResolverOptions options() const {
    ResolverOptions o;
    o.servers = {dns_.endpoint()};
    o.timeout = 2s;
    o.hosts_file = hosts_.path();
    return o;
  }

  asio::io_context io_;
  FakeDnsServer dns_;
  TempHosts hosts_;
};

TEST_F(ResolverTest, ReturnsIpv4AndIpv6Together) {
  dns_.set("dual.test", {"93.184.216.34", "2606:2800:220:1::1"});
  Resolver resolver(io_, options());

  const Resolution result = resolve_now(io_, resolver, "dual.test");

  EXPECT_EQ(result.error, ResolveError::none);
  EXPECT_EQ(result.addresses.size(), 2u);
  EXPECT_TRUE(contains(result, "93.184.216.34"));
  EXPECT_TRUE(contains(result, "2606:2800:220:1::1"));
  EXPECT_FALSE(result.from_cache);
  EXPECT_EQ(dns_.query_count("dual.test", DnsType::a), 1u);
  EXPECT_EQ(dns_.query_count("dual.test", DnsType::aaaa), 1u);
}

TEST_F(ResolverTest, DeduplicatesAddresses) {
  dns_.set("dup.test", {"192.0.2.7", "192.0.2.7", "192.0.2.8"});
  Resolver resolver(io_, options());

  const Resolution result = resolve_now(io_, resolver, "dup.test");

  EXPECT_EQ(result.error, ResolveError::none);
  EXPECT_EQ(result.addresses.size(), 2u);
}

TEST_F(ResolverTest, NxdomainIsNotFoundAndNegativelyCached) {
  Resolver resolver(io_, options());

  const Resolution first = resolve_now(io_, resolver, "missing.test");
  const std::size_t queries = dns_.query_count("missing.test");
  const Resolution second = resolve_now(io_, resolver, "missing.test");

  EXPECT_EQ(first.error, ResolveError::not_found);
  EXPECT_FALSE(first.from_cache);
  EXPECT_GE(queries, 2u);  // A and AAAA
  EXPECT_EQ(second.error, ResolveError::not_found);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(dns_.query_count("missing.test"), queries);
}

TEST_F(ResolverTest, NegativeEntryExpiresAfterNegativeTtl) {
  ResolverOptions o = options();
  o.negative_ttl = 1s;
  Resolver resolver(io_, o);

  EXPECT_EQ(resolve_now(io_, resolver, "later.test").error, ResolveError::not_found);
  dns_.set("later.test", {"192.0.2.9"});
  std::this_thread::sleep_for(1200ms);
  const Resolution result = resolve_now(io_, resolver, "later.test");

  EXPECT_EQ(result.error, ResolveError::none);
  EXPECT_TRUE(contains(result, "192.0.2.9"));
}

TEST_F(ResolverTest, NameWithoutAddressesIsNotFound) {
  dns_.set("empty.test", {});
  Resolver resolver(io_, options());

  EXPECT_EQ(resolve_now(io_, resolver, "empty.test").error, ResolveError::not_found);
}

TEST_F(ResolverTest, SilentServerTimesOutAndIsNotCached) {
  dns_.set_drop("silent.test", true);
  ResolverOptions o = options();
  o.timeout = 300ms;
  Resolver resolver(io_, o);

  const steady_clock::time_point start = steady_clock::now();
  const Resolution first = resolve_now(io_, resolver, "silent.test");
  const auto elapsed = steady_clock::now() - start;
  const std::size_t queries = dns_.query_count("silent.test");
  const Resolution second = resolve_now(io_, resolver, "silent.test");

  EXPECT_EQ(first.error, ResolveError::timeout);
  EXPECT_LT(elapsed, 3s);
  EXPECT_EQ(second.error, ResolveError::timeout);
  EXPECT_FALSE(second.from_cache);
  EXPECT_GT(dns_.query_count("silent.test"), queries);
  EXPECT_EQ(resolver.cache_size(), 0u);
}

TEST_F(ResolverTest, ServfailIsServerFailureAndNotCached) {
  dns_.set("broken.test", {"192.0.2.1"});
  dns_.set_servfail("broken.test", true);
  Resolver resolver(io_, options());

  const Resolution first = resolve_now(io_, resolver, "broken.test");
  const std::size_t queries = dns_.query_count("broken.test");
  const Resolution second = resolve_now(io_, resolver, "broken.test");

  EXPECT_EQ(first.error, ResolveError::server_failure);
  EXPECT_EQ(second.error, ResolveError::server_failure);
  EXPECT_FALSE(second.from_cache);
  EXPECT_GT(dns_.query_count("broken.test"), queries);

  // The server recovers: the next lookup asks again and succeeds.
  dns_.set_servfail("broken.test", false);
  EXPECT_EQ(resolve_now(io_, resolver, "broken.test").error, ResolveError::none);
}

TEST_F(ResolverTest, CachedAnswerDoesNotQueryAgain) {
  dns_.set("cached.test", {"192.0.2.10", "2001:db8::10"});
  Resolver resolver(io_, options());

  const Resolution first = resolve_now(io_, resolver, "cached.test");
  const Resolution second = resolve_now(io_, resolver, "cached.test");

  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.error, ResolveError::none);
  EXPECT_EQ(second.addresses, first.addresses);
  EXPECT_EQ(dns_.query_count("cached.test", DnsType::a), 1u);
  EXPECT_EQ(dns_.query_count("cached.test", DnsType::aaaa), 1u);
  EXPECT_EQ(resolver.cache_size(), 1u);
}

TEST_F(ResolverTest, AnswerExpiresAfterItsTtl) {
  dns_.set("short.test", {"192.0.2.11"}, 1s);
  Resolver resolver(io_, options());

  resolve_now(io_, resolver, "short.test");
  std::this_thread::sleep_for(1200ms);
  const Resolution again = resolve_now(io_, resolver, "short.test");

  EXPECT_FALSE(again.from_cache);
  EXPECT_EQ(dns_.query_count("short.test", DnsType::a), 2u);
}

TEST_F(ResolverTest, MaxTtlClampsLongTtl) {
  dns_.set("long.test", {"192.0.2.12"}, 3600s);
  ResolverOptions o = options();
  o.max_ttl = 1s;
  Resolver resolver(io_, o);

  resolve_now(io_, resolver, "long.test");
  EXPECT_TRUE(resolve_now(io_, resolver, "long.test").from_cache);
  std::this_thread::sleep_for(1200ms);
  const Resolution again = resolve_now(io_, resolver, "long.test");

  EXPECT_FALSE(again.from_cache);
  EXPECT_EQ(dns_.query_count("long.test", DnsType::a), 2u);
}

TEST_F(ResolverTest, ConcurrentLookupsOfOneNameShareOneQuery) {
  dns_.set("busy.test", {"192.0.2.13", "2001:db8::13"});
  dns_.set_delay("busy.test", 200ms);  // keep the query open while everyone joins
  Resolver resolver(io_, options());

  std::vector<std::optional<Resolution>> results(50);
  for (auto& result : results) {
    asio::co_spawn(io_, resolve_into(&resolver, "busy.test", &result), asio::detached);
  }
  ASSERT_TRUE(run_until(io_, [&] {
    return std::all_of(results.begin(), results.end(), [](const auto& r) { return r.has_value(); });
  }));

  for (const auto& result : results) {
    EXPECT_EQ(result->error, ResolveError::none);
    EXPECT_EQ(result->addresses.size(), 2u);
    EXPECT_FALSE(result->from_cache);
  }
  EXPECT_EQ(dns_.query_count("busy.test", DnsType::a), 1u);
  EXPECT_EQ(dns_.query_count("busy.test", DnsType::aaaa), 1u);
}

TEST_F(ResolverTest, ConcurrentLookupsOfDifferentNamesProceedTogether) {
  for (int i = 0; i < 10; ++i) {
    dns_.set("n" + std::to_string(i) + ".test", {"192.0.2." + std::to_string(100 + i)});
    dns_.set_delay("n" + std::to_string(i) + ".test", 300ms);
  }
  Resolver resolver(io_, options());

  std::vector<std::optional<Resolution>> results(10);
  const steady_clock::time_point start = steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    asio::co_spawn(io_, resolve_into(&resolver, "n" + std::to_string(i) + ".test", &results[i]),
                   asio::detached);
  }
  ASSERT_TRUE(run_until(io_, [&] {
    return std::all_of(results.begin(), results.end(), [](const auto& r) { return r.has_value(); });
  }));

  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(contains(*results[i], ("192.0.2." + std::to_string(100 + i)).c_str()));
  }
  EXPECT_LT(steady_clock::now() - start, 2s);  // in parallel, not 10 x 300ms
}

TEST_F(ResolverTest, CacheEvictsLeastRecentlyUsed) {
  dns_.set("a.test", {"192.0.2.21"});
  dns_.set("b.test", {"192.0.2.22"});
  dns_.set("c.test", {"192.0.2.23"});
  ResolverOptions o = options();
  o.cache_capacity = 2;
  Resolver resolver(io_, o);

  resolve_now(io_, resolver, "a.test");
  resolve_now(io_, resolver, "b.test");
  EXPECT_TRUE(resolve_now(io_, resolver, "a.test").from_cache);  // a is now the most recent
  resolve_now(io_, resolver, "c.test");                          // evicts b

  EXPECT_EQ(resolver.cache_size(), 2u);
  EXPECT_TRUE(resolve_now(io_, resolver, "a.test").from_cache);
  EXPECT_TRUE(resolve_now(io_, resolver, "c.test").from_cache);
  EXPECT_FALSE(resolve_now(io_, resolver, "b.test").from_cache);
  EXPECT_EQ(dns_.query_count("b.test", DnsType::a), 2u);
  EXPECT_EQ(resolver.cache_size(), 2u);
}

TEST_F(ResolverTest, ZeroCapacityDisablesTheCache) {
  dns_.set("nocache.test", {"192.0.2.24"});
  ResolverOptions o = options();
  o.cache_capacity = 0;
  Resolver resolver(io_, o);

  resolve_now(io_, resolver, "nocache.test");
  EXPECT_FALSE(resolve_now(io_, resolver, "nocache.test").from_cache);
  EXPECT_EQ(resolver.cache_size(), 0u);
}

TEST_F(ResolverTest, HostsFileIsHonoured) {
  Resolver resolver(io_, options());

  const Resolution result = resolve_now(io_, resolver, "localhost");

  EXPECT_EQ(result.error, ResolveError::none);
  EXPECT_TRUE(contains(result, "127.0.0.1") || contains(result, "::1"));
  EXPECT_EQ(dns_.query_count("localhost"), 0u);  // never sent to the name server
}

TEST_F(ResolverTest, HostsFileAnswersWithoutQueryAndInFileOrder) {
  hosts_.write(
      "# comment\n10.1.2.3  Web.Internal web  # trailing comment\n"
      "2001:db8::3 web.internal\n10.1.2.3 web.internal\nnot-an-address other\n");
  Resolver resolver(io_, options());

  const Resolution first = resolve_now(io_, resolver, "web.internal");
  const Resolution second = resolve_now(io_, resolver, "WEB.internal.");

  EXPECT_EQ(first.error, ResolveError::none);
  EXPECT_TRUE(first.from_hosts_file);
  ASSERT_EQ(first.addresses.size(), 2u);
  EXPECT_EQ(first.addresses[0], asio::ip::make_address("10.1.2.3"));
  EXPECT_EQ(first.addresses[1], asio::ip::make_address("2001:db8::3"));
  EXPECT_EQ(second.addresses, first.addresses);
  EXPECT_TRUE(contains(resolve_now(io_, resolver, "web"), "10.1.2.3"));
  EXPECT_EQ(dns_.total_queries(), 0u);
  EXPECT_EQ(resolver.cache_size(), 0u);  // hosts answers live in the hosts table, not the LRU
}

TEST_F(ResolverTest, HostsFileChangeIsNoticed) {
  hosts_.write("10.0.0.1 moving.test\n");
  ResolverOptions o = options();
  o.hosts_check_interval = 100ms;
  Resolver resolver(io_, o);
  dns_.set("moving.test", {"192.0.2.99"});

  EXPECT_EQ(resolve_now(io_, resolver, "moving.test").addresses,
            std::vector{asio::ip::make_address("10.0.0.1")});
  // Edited in place (same size, so only the times tell): seen after the check interval.
  hosts_.write("10.0.0.2 moving.test\n");
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(resolve_now(io_, resolver, "moving.test").addresses,
            std::vector{asio::ip::make_address("10.0.0.2")});
  // Replaced by a file without the name: DNS answers again.
  TempHosts other;
  other.write("10.9.9.9 elsewhere.test\n");
  std::filesystem::rename(other.path(), hosts_.path());
  std::this_thread::sleep_for(150ms);
  const Resolution from_dns = resolve_now(io_, resolver, "moving.test");
  EXPECT_FALSE(from_dns.from_hosts_file);
  EXPECT_TRUE(contains(from_dns, "192.0.2.99"));
  EXPECT_EQ(dns_.query_count("moving.test", DnsType::a), 1u);
}

TEST_F(ResolverTest, HostsFileIsNotReadAgainWithinTheCheckInterval) {
  hosts_.write("10.0.0.1 steady.test\n");
  ResolverOptions o = options();
  o.hosts_check_interval = 60s;
  Resolver resolver(io_, o);

  EXPECT_TRUE(contains(resolve_now(io_, resolver, "steady.test"), "10.0.0.1"));
  hosts_.write("10.0.0.2 steady.test\n");
  // Within the interval the file is not even stat()ed: the old answer stands.
  EXPECT_TRUE(contains(resolve_now(io_, resolver, "steady.test"), "10.0.0.1"));
}

TEST_F(ResolverTest, LocalhostNeverReachesTheServerEvenWithoutAHostsEntry) {
  hosts_.write("10.0.0.1 unrelated.test\n");
  Resolver resolver(io_, options());

  const Resolution result = resolve_now(io_, resolver, "db.localhost");

  EXPECT_TRUE(result.from_hosts_file);
  EXPECT_TRUE(contains(result, "127.0.0.1"));
  EXPECT_EQ(dns_.total_queries(), 0u);
}

TEST_F(ResolverTest, NegativeAnswerLivesForTheSoaMinimum) {
  dns_.set_negative_soa(1s);
  ResolverOptions o = options();
  o.negative_ttl = 3600s;  // the cap is not what decides here
  Resolver resolver(io_, o);

  const Resolution first = resolve_now(io_, resolver, "soon.test");
  EXPECT_EQ(first.error, ResolveError::not_found);
  EXPECT_EQ(first.ttl, 1s);
  EXPECT_TRUE(resolve_now(io_, resolver, "soon.test").from_cache);
  ASSERT_TRUE(resolver.cached("soon.test").has_value());
  EXPECT_EQ(resolver.cached("soon.test")->error, ResolveError::not_found);
  dns_.set("soon.test", {"192.0.2.31"});
  std::this_thread::sleep_for(1200ms);

  const Resolution later = resolve_now(io_, resolver, "soon.test");
  EXPECT_EQ(later.error, ResolveError::none);
  EXPECT_TRUE(contains(later, "192.0.2.31"));
}

TEST_F(ResolverTest, NegativeAnswerWithoutSoaIsNotCached) {
  dns_.set_negative_soa(std::nullopt);
  Resolver resolver(io_, options());

  EXPECT_EQ(resolve_now(io_, resolver, "nosoa.test").error, ResolveError::not_found);
  const Resolution second = resolve_now(io_, resolver, "nosoa.test");

  EXPECT_EQ(second.error, ResolveError::not_found);
  EXPECT_FALSE(second.from_cache);
  EXPECT_EQ(dns_.query_count("nosoa.test", DnsType::a), 2u);
}

TEST_F(ResolverTest, NodataForOneFamilyStillCachesTheOther) {
  dns_.set("v4only.test", {"192.0.2.32"}, 120s);
  Resolver resolver(io_, options());

  const Resolution first = resolve_now(io_, resolver, "v4only.test");
  EXPECT_EQ(first.ttl, 120s);
  EXPECT_TRUE(resolve_now(io_, resolver, "v4only.test").from_cache);
  ASSERT_TRUE(resolver.cached("v4only.test").has_value());
  EXPECT_LE(resolver.cached("v4only.test")->expires_in, 120s);
  EXPECT_GT(resolver.cached("v4only.test")->expires_in, 100s);
  EXPECT_EQ(dns_.query_count("v4only.test", DnsType::aaaa), 1u);
}

TEST_F(ResolverTest, ZeroTtlIsHonouredByNotCaching) {
  dns_.set("zero.test", {"192.0.2.33"}, 0s);
  Resolver resolver(io_, options());

  resolve_now(io_, resolver, "zero.test");
  EXPECT_FALSE(resolve_now(io_, resolver, "zero.test").from_cache);
  EXPECT_EQ(dns_.query_count("zero.test", DnsType::a), 2u);
}

TEST_F(ResolverTest, ManyNamesStayWithinTheBound) {
  ResolverOptions o = options();
  o.cache_capacity = 8;
  Resolver resolver(io_, o);
  for (int i = 0; i < 40; ++i) {
    const std::string name = "bound" + std::to_string(i) + ".test";
    dns_.set(name, {"192.0.2." + std::to_string(i + 1)});
    EXPECT_EQ(resolve_now(io_, resolver, name).error, ResolveError::none);
    EXPECT_LE(resolver.cache_size(), 8u);
  }
  EXPECT_EQ(resolver.cache_size(), 8u);
  // The last eight are kept; the first is gone and is asked for again.
  EXPECT_TRUE(resolve_now(io_, resolver, "bound39.test").from_cache);
  EXPECT_TRUE(resolve_now(io_, resolver, "bound32.test").from_cache);
  EXPECT_FALSE(resolve_now(io_, resolver, "bound0.test").from_cache);
  EXPECT_EQ(dns_.query_count("bound0.test", DnsType::a), 2u);
}

// The servers are read at start-up (a change needs a restart): a resolver started on new
// servers holds nothing of the old one's and answers from the new servers.
TEST_F(ResolverTest, NewServersAnswerAfterARestart) {
  dns_.set("moved.test", {"192.0.2.41"});
  auto resolver = std::make_unique<Resolver>(io_, options());
  EXPECT_TRUE(contains(resolve_now(io_, *resolver, "moved.test"), "192.0.2.41"));

  FakeDnsServer other;
  other.set("moved.test", {"192.0.2.42"});
  ResolverOptions o = options();
  o.servers = {other.endpoint()};
  resolver = std::make_unique<Resolver>(io_, o);
  const Resolution fresh = resolve_now(io_, *resolver, "moved.test");

  EXPECT_FALSE(fresh.from_cache);
  EXPECT_EQ(fresh.addresses, std::vector{asio::ip::make_address("192.0.2.42")});
  EXPECT_EQ(other.query_count("moved.test", DnsType::a), 1u);
}

TEST_F(ResolverTest, CachedAnswerKeepsItsOrder) {
  dns_.set("order.test", {"192.0.2.51", "192.0.2.52", "192.0.2.53"});
  Resolver resolver(io_, options());

  const Resolution first = resolve_now(io_, resolver, "order.test");
  const Resolution cached = resolve_now(io_, resolver, "order.test");

  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(cached.addresses, first.addresses);
  ASSERT_TRUE(resolver.cached("order.test").has_value());
  EXPECT_EQ(resolver.cached("order.test")->addresses, first.addresses);
  EXPECT_FALSE(resolver.cached("never-asked.test").has_value());
}

TEST_F(ResolverTest, MalformedNamesAreBadNames) {
  Resolver resolver(io_, options());

  EXPECT_EQ(resolve_now(io_, resolver, "").error, ResolveError::bad_name);
  EXPECT_EQ(resolve_now(io_, resolver, std::string("evil.test\0.good.test", 20)).error,
            ResolveError::bad_name);
  EXPECT_EQ(resolve_now(io_, resolver, "a..b.test").error, ResolveError::bad_name);
  EXPECT_EQ(resolve_now(io_, resolver, std::string(64, 'x') + ".test").error,
            ResolveError::bad_name);
  EXPECT_EQ(resolve_now(io_, resolver, std::string(300, 'x')).error, ResolveError::bad_name);
  EXPECT_EQ(dns_.total_queries(), 0u);
}

TEST_F(ResolverTest, TruncatedAnswerIsRetriedOverTcp) {
  dns_.set("big.test", {"192.0.2.30", "2001:db8::30"});
  dns_.set_truncate("big.test", true);
  Resolver resolver(io_, options());

  const Resolution result = resolve_now(io_, resolver, "big.test");

  EXPECT_EQ(result.error, ResolveError::none);
  EXPECT_TRUE(contains(result, "192.0.2.30"));
  EXPECT_TRUE(contains(result, "2001:db8::30"));
  EXPECT_EQ(dns_.query_count("big.test", DnsType::a), 2u);  // UDP, then TCP
}

TEST_F(ResolverTest, LargeAnswerOverflowsUdpAndArrivesOverTcp) {
  std::vector<std::string> many;
  for (int i = 1; i <= 60; ++i) {
    many.push_back("10.0.0." + std::to_string(i));
  }
  dns_.set("many.test", many);
  Resolver resolver(io_, options());

  const Resolution result = resolve_now(io_, resolver, "many.test");

  EXPECT_EQ(result.error, ResolveError::none);
  EXPECT_EQ(result.addresses.size(), 60u);
}

TEST_F(ResolverTest, DestructionCancelsPendingLookups) {
  dns_.set("slow.test", {"192.0.2.40"});
  dns_.set_delay("slow.test", 2s);
  dns_.set_drop("gone.test", true);
  auto resolver = std::make_unique<Resolver>(io_, options());

  std::vector<std::optional<Resolution>> results(6);
  for (std::size_t i = 0; i < results.size(); ++i) {
    asio::co_spawn(io_,
                   resolve_into(resolver.get(), i % 2 ? "slow.test" : "gone.test", &results[i]),
                   asio::detached);
  }
  // Start every lookup (a resolve() begun after the resolver died would be the caller's bug),
  // let the queries reach the server, then pull the resolver from under them.
  io_.poll();
  ASSERT_TRUE(run_until(io_, [&] { return dns_.total_queries() >= 4; }));
  resolver.reset();
  ASSERT_TRUE(run_until(io_, [&] {
    return std::all_of(results.begin(), results.end(), [](const auto& r) { return r.has_value(); });
  }));

  for (const auto& result : results) {
    EXPECT_EQ(result->error, ResolveError::cancelled);
  }
  // Whatever was still queued (released socket waits, timers) must run harmlessly.
  io_.restart();
  io_.run_for(100ms);
}

TEST_F(ResolverTest, DestructionWithIdleSocketsAndExpiredQueries) {
  // A lookup that timed out on our deadline leaves c-ares working in the background; the
  // resolver must still die cleanly.
  dns_.set_drop("slow.test", true);
  ResolverOptions o = options();
  o.timeout = 100ms;
  auto resolver = std::make_unique<Resolver>(io_, o);

  EXPECT_EQ(resolve_now(io_, *resolver, "slow.test").error, ResolveError::timeout);
  resolver.reset();
  io_.restart();
  io_.run_for(100ms);
}

TEST_F(ResolverTest, CallerCancellationEndsOnlyThatWaiter) {
  dns_.set("patient.test", {"192.0.2.50"});
  dns_.set_delay("patient.test", 300ms);
  Resolver resolver(io_, options());

  std::optional<Resolution> impatient;
  std::optional<Resolution> patient;
  asio::co_spawn(io_, resolve_with_patience(&resolver, "patient.test", 50ms, &impatient),
                 asio::detached);
  asio::co_spawn(io_, resolve_into(&resolver, "patient.test", &patient), asio::detached);
  ASSERT_TRUE(run_until(io_, [&] { return patient.has_value(); }));

  EXPECT_FALSE(impatient.has_value());  // its timer won; the shared query went on
  EXPECT_EQ(patient->error, ResolveError::none);
  EXPECT_EQ(dns_.query_count("patient.test", DnsType::a), 1u);
}

TEST_F(ResolverTest, NewAnswersAreSeenOnceTheCacheExpires) {
  dns_.set("rebind.test", {"192.0.2.60"}, 1s);
  Resolver resolver(io_, options());

  EXPECT_TRUE(contains(resolve_now(io_, resolver, "rebind.test"), "192.0.2.60"));
  dns_.set("rebind.test", {"192.0.2.61"}, 1s);
  EXPECT_TRUE(contains(resolve_now(io_, resolver, "rebind.test"), "192.0.2.60"));  // cached
  std::this_thread::sleep_for(1200ms);
  const Resolution fresh = resolve_now(io_, resolver, "rebind.test");

  EXPECT_TRUE(contains(fresh, "192.0.2.61"));
  EXPECT_FALSE(contains(fresh, "192.0.2.60"));
}

TEST(ResolverIpv6, ServerOnIpv6Loopback) {
  asio::io_context io;
  FakeDnsServer dns(FakeDnsServer::Family::v6);
  dns.set("six.test", {"2001:db8::6"});
  ResolverOptions o;
  o.servers = {dns.endpoint()};
  o.timeout = 2s;
  Resolver resolver(io, o);

  const Resolution result = resolve_now(io, resolver, "six.test");

  EXPECT_EQ(dns.endpoint().front(), '[');
  EXPECT_EQ(result.error, ResolveError::none);
  EXPECT_TRUE(contains(result, "2001:db8::6"));
}

TEST(ResolverOptionsTest, MalformedServersFailAtStartup) {
  asio::io_context io;
  for (const char* server : {"not-an-address:53", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536",
                             "127.0.0.1:5x", "::1:53", "[127.0.0.1]:53", "[::1]53", "[::1]:"}) {
    ResolverOptions o;
    o.servers = {server};
    EXPECT_THROW(Resolver(io, o), std::runtime_error) << server;
  }
  ResolverOptions o;
  o.timeout = 0ms;
  EXPECT_THROW(Resolver(io, o), std::runtime_error);
}

TEST(ResolverErrorTest, NamesAreStable) {
  EXPECT_EQ(sandgate::dns::to_string(ResolveError::none), "none");
  EXPECT_EQ(sandgate::dns::to_string(ResolveError::not_found), "not_found");
  EXPECT_EQ(sandgate::dns::to_string(ResolveError::timeout), "timeout");
  EXPECT_EQ(sandgate::dns::to_string(ResolveError::server_failure), "server_failure");
  EXPECT_EQ(sandgate::dns::to_string(ResolveError::cancelled), "cancelled");
  EXPECT_EQ(sandgate::dns::to_string(ResolveError::bad_name), "bad_name");
}

// The fake itself: garbage must be counted and survived, not crash it or stop it answering.
TEST(ResolverFakeDnsTest, SurvivesGarbageAndKeepsAnswering) {
  FakeDnsServer dns;
  dns.set("ok.test", {"192.0.2.70"});

  const int sock = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(dns.port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::vector<std::vector<std::uint8_t>> garbage = {
      {},                                                    // empty
      {0x12, 0x34, 0x01},                                    // shorter than a header
      {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0},      // a response, not a query
      {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0},      // question missing
      {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 63},  // label runs off the end
      {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1},  // pointer
      {0x12, 0x34, 0x01, 0x00, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1},           // 2 questions
      {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'x', 0, 0, 1},         // type cut off
  };
  for (const auto& message : garbage) {
    ::sendto(sock, message.data(), message.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  }
  ::close(sock);

  asio::io_context io;
  ResolverOptions o;
  o.servers = {dns.endpoint()};
  Resolver resolver(io, o);
  EXPECT_TRUE(contains(resolve_now(io, resolver, "ok.test"), "192.0.2.70"));
  EXPECT_GE(dns.malformed_queries(), 6u);
}

TEST(ResolverFakeDnsTest, RejectsBadAddressesAndCountsPerName) {
  FakeDnsServer dns;
  EXPECT_THROW(dns.set("x.test", {"not-an-ip"}), std::invalid_argument);
  EXPECT_EQ(dns.query_count("x.test"), 0u);
  EXPECT_EQ(dns.endpoint(), "127.0.0.1:" + std::to_string(dns.port()));

  asio::io_context io;
  ResolverOptions o;
  o.servers = {dns.endpoint()};
  Resolver resolver(io, o);
  dns.set("Mixed.Case.TEST.", {"192.0.2.80"});
  EXPECT_TRUE(contains(resolve_now(io, resolver, "mixed.case.test"), "192.0.2.80"));
  EXPECT_EQ(dns.query_count("MIXED.case.test"), 2u);
  dns.reset_counts();
  EXPECT_EQ(dns.query_count("mixed.case.test"), 0u);
  EXPECT_EQ(dns.total_queries(), 0u);
}

}  // namespace
