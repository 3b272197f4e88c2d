// A real DNS server on loopback for tests: answers A and AAAA queries over UDP and TCP from a
// table the test controls, with per-name knobs (delay, silence, SERVFAIL, truncation) and
// per-name query counters, so tests can assert merging, caching and retries. Negative answers
// carry an SOA (its MINIMUM set by the test), so negative caching can be tested.
//
// It runs on its own thread (plain POSIX sockets and poll()), so a test's io_context can be
// stopped or blocked without starving it. Every public member function is thread-safe; answers
// may be changed while queries are in flight (DNS rebinding tests).
//
//   FakeDnsServer dns;                                     // 127.0.0.1, UDP and TCP, port 0
//   dns.set("example.test", {"93.184.216.34", "2606:2800::1"}, std::chrono::seconds{60});
//   options.servers = {dns.endpoint()};                     // "127.0.0.1:PORT"
//   ... EXPECT_EQ(dns.query_count("example.test", DnsType::a), 1);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::fakes {

// The query types the fake answers with records (others get an empty answer).
enum class DnsType : std::uint16_t { a = 1, aaaa = 28 };

class FakeDnsServer {
 public:
  enum class Family { v4, v6 };  // listen on 127.0.0.1 or on ::1

  // Binds UDP and TCP on one free port and starts serving. Throws std::runtime_error if the
  // sockets cannot be set up.
  explicit FakeDnsServer(Family family = Family::v4);
  ~FakeDnsServer();  // stops the thread; queries in flight or delayed are dropped
  FakeDnsServer(const FakeDnsServer&) = delete;
  FakeDnsServer& operator=(const FakeDnsServer&) = delete;

  // Makes `name` exist with these addresses (IPv4 ones answer A, IPv6 ones AAAA), replacing what
  // it had. Names match case-insensitively and without a trailing dot. An empty list makes a
  // name with no addresses (NOERROR, no data). Throws std::invalid_argument on a bad address.
  void set(std::string_view name, const std::vector<std::string>& addresses,
           std::chrono::seconds ttl = std::chrono::seconds{60});
  // Forgets `name`'s records: it is NXDOMAIN again. Its knobs stay.
  void remove(std::string_view name);

  // Knobs per name (whether or not the name has records); each call replaces that knob only.
  void set_delay(std::string_view name, std::chrono::milliseconds delay);  // answer late
  void set_drop(std::string_view name, bool drop);          // never answer: client times out
  void set_servfail(std::string_view name, bool servfail);  // answer SERVFAIL
  void set_truncate(std::string_view name, bool truncate);  // UDP says TC; answers over TCP only

  // Negative answers (NXDOMAIN, and NOERROR without records of the type asked) carry an SOA in
  // their authority section, as an authoritative server's do, with this TTL and MINIMUM; a
  // resolver may cache them for min(ttl, minimum) (RFC 2308). nullopt: no SOA (then they must
  // not be cached). Default: TTL 3600 s, MINIMUM 60 s.
  void set_negative_soa(std::optional<std::chrono::seconds> minimum,
                        std::chrono::seconds ttl = std::chrono::seconds{3600});

  // Where to send queries: "127.0.0.1:PORT" or "[::1]:PORT" (ResolverOptions::servers format).
  std::string endpoint() const;
  std::uint16_t port() const;

  // Well-formed queries received for `name` over UDP and TCP (every message, even dropped ones);
  // one getaddrinfo() is an A and an AAAA query.
  std::size_t query_count(std::string_view name) const;
  std::size_t query_count(std::string_view name, DnsType type) const;
  std::size_t total_queries() const;      // well-formed queries, all names
  std::size_t malformed_queries() const;  // datagrams or TCP messages that failed to parse
  void reset_counts();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sandgate::fakes
