// The hold workloads: what an idle inspected connection and an open request cost the proxy in
// memory, over HTTP/2 (h2-hold) and HTTP/1.1 (https-hold), for the same inspecting proxy.
//   h2-hold     opens --concurrency HTTP/2 connections (as the h2 workload does, each carrying
//               one GET so it has been used), samples the proxy's memory, then opens --streams
//               streams on each to the origin's /hold (a head, then a body that never comes: a
//               slow origin), waits until every head has come back through the proxy, samples
//               again, holds them for --duration, and checks the proxy kept every connection.
//   https-hold  the same with HTTP/1.1 inside TLS (as the https workload, no ALPN): one GET per
//               connection, then at most one request held open on each (--streams 0 or 1).
// Needs --proxy-pid for the samples.
#pragma once

#include "bench/load/report.hpp"
#include "bench/load/workloads.hpp"

namespace sandgate::load {

// Runs on the calling thread (one io_context, like idle), bounded by two minutes for opening the
// connections, two for opening the streams, the settling pauses and --duration.
run_result run_hold(const run_options& options);

}  // namespace sandgate::load
