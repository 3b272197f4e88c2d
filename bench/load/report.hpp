// The outcome of one load run and its two renderings: one JSON line (for compare.sh and result
// files) and one line for a person.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "bench/load/histogram.hpp"
#include "bench/load/process_memory.hpp"
#include "bench/load/tunnel.hpp"

namespace sandgate::load {

struct run_result {
  // What ran.
  std::string label;         // free text from --label (compare.sh passes the target's name)
  std::string workload;      // setups | download | upload | idle | http | https... | h2 | h2-hold
  std::string connect_host;  // --connect-host, empty when the origin's address was used
  std::string proxy;         // HOST:PORT or "none"
  std::string origin;
  unsigned concurrency = 0;  // clients, tunnels or connections
  unsigned streams = 0;      // h2, h2-hold: streams per connection (in flight, or held)
  unsigned threads = 1;
  double duration_s = 0;  // as asked
  double measured_s = 0;  // the window the rates are computed over (duration minus warm-up)

  // Setups: completed inside the window. Download/upload: tunnels established. HTTP: responses
  // received inside the window.
  std::uint64_t ops = 0;
  std::uint64_t bytes = 0;  // payload bytes moved inside the window (download/upload)
  histogram latency_ns;     // setups: connect -> echo received; http: request -> whole response
  std::uint64_t connections = 0;  // http(s), h2: connections opened (1 per client when kept alive)

  // Timed workloads with --proxy-pid: the proxy's CPU time at the start and end of the window.
  std::optional<cpu_sample> cpu_before;
  std::optional<cpu_sample> cpu_after;

  std::array<std::uint64_t, error_kind_count> errors{};
  std::map<int, std::uint64_t> refused_status;  // proxy status code -> count, for `refused`
  bool aborted = false;                         // stopped early because --max-errors was reached
  bool hard_stopped = false;  // the run overstayed its bound and was cut (a bug if ever seen)

  // Idle and h2-hold (whose tunnels are HTTP/2 connections that carried one request).
  std::uint64_t tunnels_requested = 0;
  std::uint64_t tunnels_open = 0;   // established and echoed once
  std::uint64_t tunnels_alive = 0;  // still open (no EOF from the proxy) at the end of the hold
  double open_s = 0;                // time to open them all
  int proxy_pid = 0;
  std::optional<memory_sample> memory_before;
  // h2-hold: after the connections opened, before any stream was held.
  std::optional<memory_sample> memory_connections;
  std::optional<memory_sample> memory_after;  // idle: tunnels open; h2-hold: streams held too
  std::uint64_t streams_open = 0;             // h2-hold: streams held (their heads came back)

  std::uint64_t error_total() const;
  // Adds another worker thread's counts into this one (same run, same window).
  void merge(const run_result& other);
};

// The figure a workload is judged by, over the measured window: setups/s, requests/s, or Gbit/s
// for download and upload.
double headline_rate(const run_result& result);

std::string to_json(const run_result& result);
std::string to_human(const run_result& result);

}  // namespace sandgate::load
