// `sandgate-load compare`: several proxies side by side in rounds, and the table of ratios.
//
// One command benchmarks any HTTP CONNECT or SOCKS5 proxies listening on loopback against each
// other and against no proxy at all ("direct"): it starts its own origin (unless given one), then
// for each round runs every workload and level against every target, in an order rotated each
// round so that no target always runs first, and prints for each workload the median over rounds
// with two ratios: to direct, and to the first proxy named (the reference). Ratios taken in the
// same rounds are what holds on a shared, noisy machine; an absolute figure is only for this run.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/load/workloads.hpp"

namespace sandgate::load {

struct compare_target {
  std::string name;
  std::optional<boost::asio::ip::tcp::endpoint> proxy;  // nullopt: direct (no proxy)
  bool socks5 = false;
  int pid = 0;  // the proxy's PID, for its CPU time per operation (0: not sampled)
};

struct compare_options {
  std::vector<compare_target> targets;  // "direct" first, then the proxies in the order given
  std::vector<workload_kind> workloads{workload_kind::setups, workload_kind::download};
  std::vector<unsigned> levels{16};  // clients (setups, http) or tunnels (download, upload)
  unsigned rounds = 3;
  double duration_s = 5;
  double timeout_s = 5;
  unsigned threads = 1;
  std::optional<boost::asio::ip::tcp::endpoint> origin;  // nullopt: start one of our own
  bool json = false;  // JSON lines (every run, then one summary line per row) instead of tables
  std::string plot;   // also draw the ratios to direct as an SVG bar chart into this file
};

// Runs the comparison and prints it on stdout (progress on stderr, as a live line on a
// terminal). Returns 0, or 1 when some target completed nothing in some run.
int run_compare(const compare_options& options);

}  // namespace sandgate::load
