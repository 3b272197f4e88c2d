// The h2-hold workload: what an idle HTTP/2 connection and an open stream cost the proxy in
// memory. It opens --concurrency HTTP/2 connections (as the h2 workload does, each carrying one
// GET so it has been used), samples the proxy's memory, then opens --streams streams on each to
// the origin's /hold (which answers with a head and never ends the body, a slow origin), waits
// until every head has come back through the proxy, samples again, holds them for --duration,
// and checks the proxy kept every connection. Needs --proxy-pid for the samples.
#pragma once

#include "bench/load/report.hpp"
#include "bench/load/workloads.hpp"

namespace sandgate::load {

// Runs on the calling thread (one io_context, like idle), bounded by two minutes for opening the
// connections, two for opening the streams, the settling pauses and --duration.
run_result run_h2_hold(const run_options& options);

}  // namespace sandgate::load
