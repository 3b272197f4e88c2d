// The client side of the load tool: its workloads and the options they share.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "bench/load/report.hpp"

namespace sandgate::load {

enum class workload_kind {
  setups,    // connect, CONNECT, 32-byte echo, close, in a loop per client: setups/s and latency
  download,  // N tunnels reading from the origin's source: aggregate Gbit/s
  upload,    // N tunnels writing into the origin's sink: aggregate Gbit/s
  idle,      // N tunnels opened, echoed once, then held: the proxy's memory per tunnel
  http,      // N kept-alive connections, each a loop of plain-HTTP GET -> response: requests/s
  // connect, CONNECT, TLS handshake (SNI, verified), one GET and its response, close, in a loop
  // per client: handshakes/s and latency
  https_setups,
  https,  // N kept-alive TLS connections (one CONNECT each), a loop of GET -> response: requests/s
  // N HTTP/2 connections (TLS, ALPN h2; one CONNECT each), each with M GETs in flight, each
  // replaced as it completes: requests/s and latency (h2_client.hpp)
  h2,
  // connect, CONNECT, TLS handshake offering h2, one GET stream and its response, close, in a
  // loop per client: a client that opens a connection per request, as a command-line tool or a
  // short-lived agent process does; an inspecting proxy's origin connections are what it can
  // keep between them (h2_client.hpp)
  h2_setups,
  // N HTTP/2 connections opened and parked, then M streams held open on each by the origin's
  // /hold: the proxy's memory per idle connection and per open stream (hold.hpp)
  h2_hold,
  // the same over HTTP/1.1 inside TLS, one request held open per connection (hold.hpp)
  https_hold,
};

struct run_options {
  std::optional<boost::asio::ip::tcp::endpoint> proxy;  // nullopt: straight to the origin
  boost::asio::ip::tcp::endpoint origin;
  workload_kind workload = workload_kind::setups;
  unsigned concurrency = 16;  // clients (setups) or tunnels (the others; h2: connections)
  unsigned streams = 1;   // h2: streams in flight per connection; h2-hold, https-hold: held on each
  double duration_s = 5;  // run length; for idle, how long the tunnels are held
  double warmup_s = -1;   // excluded from the rates; < 0: 10% of the duration, at most 1 s
  double timeout_s = 5;   // bound on each connect / handshake / echo / stalled read
  unsigned threads = 1;   // event-loop threads, at most the number of cores
  int proxy_pid = 0;      // idle: memory sampled; timed workloads: CPU time sampled (0: none)
  std::string label;      // copied into the report
  // The name to CONNECT to (and to put in HTTP URLs) instead of the origin's IP address, so the
  // proxy takes its name path: blocklist lookup of a name, DNS (the origin's --dns answers every
  // name with 127.0.0.1). Empty: the origin's address literal.
  std::string connect_host;
  bool socks5 = false;  // ask the proxy with SOCKS5 instead of HTTP CONNECT (tunnel workloads)
  // https and h2 workloads: the PEM bundle the server's certificate is verified against; the name
  // verified (and sent as SNI) is connect_host, or the origin's address when that is empty.
  std::string ca_file;
  std::uint64_t max_errors = 100000;     // the run stops early past this many errors
  std::size_t payload_bytes = 32;        // setups/idle echo size; http(s) response body size
  std::size_t chunk_bytes = 128 * 1024;  // download read size, upload write size
  unsigned open_parallelism = 64;        // idle: tunnels being opened at once
  double settle_s = 1;                   // idle: pause between the last open and the sample
};

// The workload's name on the command line and in reports ("https-setups", "h2-hold").
const char* workload_name(workload_kind kind);

// Runs one workload to completion on the calling thread (plus threads - 1 helpers for the timed
// workloads; idle and h2-hold always use one), bounded by duration + timeout + a few seconds.
run_result run_workload(const run_options& options);

}  // namespace sandgate::load
