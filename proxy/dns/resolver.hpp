// Asynchronous DNS for the proxy: c-ares driven by the Asio event loop of one worker thread.
//
// One Resolver per worker io_context; it is not thread-safe and must be used only from its own
// io_context's thread (the proxy runs one io_context per thread, so no locks are needed).
// Lookups ask for A and AAAA together, answer from the hosts file first (kept in memory, re-read
// when it changes), time out, are cached for their TTL (positive answers) or their SOA's negative
// TTL (NXDOMAIN, no records), both capped and bounded in entries (least recently used first out),
// and concurrent lookups of one name share a query. A cached answer is handed out as it was
// received and ordered (RFC 6724, once per answer); the caller checks every use against the
// policy in force and dials only addresses it checked.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "proxy/dns/resolve_error.hpp"
#include "proxy/settings/endpoint.hpp"

namespace sandgate::dns {

struct ResolverOptions {
  // `ADDR:PORT` or `[V6]:PORT` of name servers to use instead of the system's (/etc/resolv.conf).
  // Empty: the system's.
  std::vector<std::string> servers;
  // Name servers already parsed (the settings' dns_servers): used as given, not parsed again.
  std::vector<settings::TcpEndpoint> endpoints;
  // Give up on a name after this long in total (all tries and servers).
  std::chrono::milliseconds timeout{5000};
  // Cache bounds. Positive answers live min(TTL, max_ttl); failures (NXDOMAIN, no addresses)
  // live min(the SOA's negative TTL, negative_ttl), and not at all without an SOA; timeouts and
  // server failures are not cached. cache_capacity 0 turns the cache off.
  std::size_t cache_capacity = 4096;
  std::chrono::seconds max_ttl{300};
  std::chrono::seconds negative_ttl{30};
  // The hosts file, consulted before DNS; empty: none. Its answers live until it changes (it is
  // stat()ed at most once per hosts_check_interval).
  std::string hosts_file = "/etc/hosts";
  std::chrono::milliseconds hosts_check_interval{1000};
};

struct Resolution {
  ResolveError error = ResolveError::none;
  // In the order to try them: as c-ares sorted them (RFC 6724), IPv6 and IPv4 mixed.
  std::vector<boost::asio::ip::address> addresses;
  bool from_cache = false;       // answered from the DNS cache, no query sent
  bool from_hosts_file = false;  // answered from the hosts file, no query sent
  // For a fresh answer from DNS: its TTL as received (positive: the smallest record TTL;
  // negative: the SOA's), before the cache caps it; 0 when it has none.
  std::chrono::seconds ttl{0};
};

// What the cache holds for one name (Resolver::cached).
struct CachedAnswer {
  ResolveError error = ResolveError::none;
  std::vector<boost::asio::ip::address> addresses;
  std::chrono::seconds expires_in{0};
};

class Resolver {
 public:
  // Throws std::runtime_error with a readable message if c-ares cannot start or a server
  // address is malformed (a start-up configuration error).
  Resolver(boost::asio::io_context& io, ResolverOptions options);
  ~Resolver();  // completes pending lookups with ResolveError::cancelled

  // Completes pending lookups with ResolveError::cancelled and answers every later resolve()
  // with it at once, without a query. The gate's drain calls this on the io_context's thread;
  // the object itself stays until the worker that owns it is gone, so a session that resumes
  // late still calls into a live object. Idempotent.
  void shut_down();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Resolves `name` (a normalised DNS name, not an IP literal). Completes on this resolver's
  // io_context. Never throws for lookup failures: they are in Resolution::error.
  boost::asio::awaitable<Resolution> resolve(std::string name);

  std::size_t cache_size() const;  // 0 after shut_down()

  // What the DNS cache holds for `name` now, without counting as a use (the LRU order stays);
  // nothing when it holds nothing fresh. And the hosts file's addresses for `name` (re-read first
  // if it changed), empty when it has none. For `sandgate check --resolve` and tests.
  std::optional<CachedAnswer> cached(std::string_view name) const;
  std::vector<boost::asio::ip::address> hosts_entry(std::string_view name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandgate::dns
