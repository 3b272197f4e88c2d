// Opening a tunnel to the origin, through a CONNECT proxy or directly, and the error taxonomy
// every workload reports.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "bench/load/client_slot.hpp"

namespace sandgate::load {

// Why an operation failed; reported per kind so a proxy that refuses shows up as such, not as slow.
enum class error_kind {
  none,          // success
  connect,       // TCP connect to the first hop failed (refused, reset, no ports left)
  refused,       // the proxy answered CONNECT with a status other than 200 (status kept apart)
  proxy_closed,  // the proxy closed or reset the connection before its response head was complete
  bad_response,  // the response head was malformed, over 16 KB, or followed by unrequested bytes
  timeout,       // the operation passed its deadline (--timeout) and the watchdog closed it
  io,            // the established tunnel failed: read/write error or early EOF
  mismatch,      // the origin's echo differed from what was sent
  tls,           // the TLS handshake failed: certificate not verified, an alert, or a close
  alpn,          // h2 workloads: the TLS handshake succeeded but the server did not choose h2
};
inline constexpr std::size_t error_kind_count = 10;

std::string_view error_kind_name(error_kind kind);

// How a client reaches the origin: the first hop to dial, and the CONNECT request to send there
// (empty when the first hop is the origin itself, i.e. no proxy).
struct route {
  boost::asio::ip::tcp::endpoint first_hop;
  std::string connect_request;
  // The request is SOCKS5's (greeting with "no authentication" and CONNECT, sent together); its
  // answer is the method reply and the request reply (2 + 10 bytes for an IPv4 BND.ADDR).
  bool socks5 = false;
};

// `connect_host`, when not empty, replaces the origin's address in the CONNECT request (the
// proxy then resolves it; the port stays the origin's). `socks5`: ask with SOCKS5 instead of
// HTTP CONNECT (a domain name request with connect_host, an IPv4 one otherwise).
route make_route(const std::optional<boost::asio::ip::tcp::endpoint>& proxy,
                 const boost::asio::ip::tcp::endpoint& origin, const std::string& connect_host,
                 bool socks5 = false);

// HOST:PORT as a request names the origin: `connect_host` when given, else its address.
std::string origin_authority(const boost::asio::ip::tcp::endpoint& origin,
                             const std::string& connect_host);

// The plain-HTTP GET the `http` workload repeats on a kept-alive connection: absolute-form
// (`GET http://HOST:PORT/N`) through a proxy, origin-form (`GET /N`) straight to the origin. The
// origin answers /N with an N-byte body.
std::string make_http_request(bool through_proxy, const boost::asio::ip::tcp::endpoint& origin,
                              const std::string& connect_host, std::size_t body_bytes);

// "HTTP/1.1 200 OK" -> 200; 0 when the status line is not HTTP/1.x.
int parse_http_status(std::string_view head);

// Connects the slot's socket (closing any previous one) and, through a proxy, sends the CONNECT
// request and reads the response head, leaving the socket at the first byte of the tunnel.
// `head` is scratch space the caller reuses across calls; `status` receives the proxy's status
// code (0 when direct or unparsable). Completes on the slot's executor; bounded by the slot's
// deadline, which the caller arms.
boost::asio::awaitable<error_kind> open_tunnel(client_slot& slot, const route& via,
                                               std::string& head, int& status);

}  // namespace sandgate::load
