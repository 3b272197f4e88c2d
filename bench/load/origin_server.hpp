// The load tool's own origin: one loopback listener whose sessions pick a role from the first byte
// the client sends, so one address serves every workload through any proxy:
//   'e'  echo    every byte is sent back until EOF (setups, idle)
//   'd'  source  writes chunks as fast as the peer takes them, until the peer goes (download)
//   'u'  sink    reads and discards until EOF (upload)
//   'G'  HTTP    "GET /N HTTP/1.x" requests answered with an N-byte body, kept alive (http)
// With --tls-cert and --tls-key, a session whose first byte is a TLS handshake record (0x16) is
// TLS: the origin completes the handshake and serves HTTP inside it (https, https-setups), or
// HTTP/2 when the client chose h2 by ALPN (h2, h2-hold; h2_origin.hpp). "GET /hold", either way,
// is answered with a head and a body that never comes (the hold workloads).
// With --dns it also answers DNS queries over UDP on the same port: every name's A record is
// 127.0.0.1 (and it has no AAAA), so a proxy pointed at it resolves --connect-host to the origin.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <string>

namespace sandgate::load {

// The first byte of a session, chosen by the client.
inline constexpr char origin_echo = 'e';
inline constexpr char origin_source = 'd';
inline constexpr char origin_sink = 'u';
inline constexpr char origin_http = 'G';

struct origin_options {
  boost::asio::ip::tcp::endpoint listen;
  std::string port_file;     // written (atomically) with "HOST:PORT\n" once listening
  double lifetime_s = 3600;  // exits by itself after this long, so a lost process cannot linger
  std::size_t chunk_bytes = 128 * 1024;  // write size of the source and read size of the sink
  bool dns = false;  // also answer DNS (UDP) on the listening port: every name is 127.0.0.1
  // Both set: TLS sessions (told apart by their first byte) are served HTTP inside TLS with this
  // PEM certificate chain and key. Empty: plain sessions only.
  std::string tls_certificate_file;
  std::string tls_key_file;
};

// Listens, prints "sandgate-load origin listening on HOST:PORT" on stdout, serves on the calling
// thread (one io_context, one thread: the origin must never take more than one core) until
// SIGINT/SIGTERM or the lifetime ends. Returns the process exit code.
int run_origin(const origin_options& options);

}  // namespace sandgate::load
