// Asynchronous DNS for the proxy: c-ares driven by the Asio event loop of one worker thread.
//
// One Resolver per worker io_context; it is not thread-safe and must be used only from its own
// io_context's thread (the proxy runs one io_context per thread, so no locks are needed).
// Lookups ask for A and AAAA together, honour /etc/hosts, time out, are cached for their TTL
// (bounded, least recently used first out), and concurrent lookups of one name share a query.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

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
  // live negative_ttl; timeouts and server failures are not cached.
  std::size_t cache_capacity = 4096;
  std::chrono::seconds max_ttl{300};
  std::chrono::seconds negative_ttl{5};
};

// Why a lookup produced no address. Stable codes for logs and Proxy-Status.
enum class ResolveError : std::uint8_t {
  none,
  not_found,       // NXDOMAIN, or the name has no A/AAAA records
  timeout,         // no answer within ResolverOptions::timeout
  server_failure,  // SERVFAIL, REFUSED, malformed replies, connection refused by the server
  cancelled,       // the resolver was destroyed or the lookup cancelled
  bad_name,        // c-ares refused the name
};
std::string_view to_string(ResolveError);

struct Resolution {
  ResolveError error = ResolveError::none;
  // In the order to try them: as c-ares sorted them (RFC 6724), IPv6 and IPv4 mixed.
  std::vector<boost::asio::ip::address> addresses;
  bool from_cache = false;
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandgate::dns
