// Renders the gate's state for the admin endpoint: Prometheus text format for /metrics and a
// JSON array for /denials. Reads counters other threads write (see metrics.hpp); thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proxy/metrics/metrics.hpp"

namespace sandgate::metrics {

struct ReloadCounts {
  std::uint64_t ok = 0;
  std::uint64_t failed = 0;
};

// Everything a scrape reports besides the per-worker counters.
struct GaugeValues {
  std::uint64_t open_connections = 0;
  std::uint64_t blocklist_entries = 0;
  std::int64_t allowlist_entries = -1;  // -1: no allowlist mode
  ReloadCounts blocklist_reloads;
  ReloadCounts allowlist_reloads;
  ReloadCounts request_rules_reloads;
  ReloadCounts budgets_reloads;
  ReloadCounts config_reloads;
  std::string version;
};

std::string render_prometheus(const std::vector<const WorkerMetrics*>& workers,
                              const GaugeValues& gauges);

// The most recent denials of all workers, newest first, as a JSON array. Valid UTF-8 JSON
// whatever bytes the denials hold (escaped by proxy/json/json_writer.hpp).
std::string render_denials_json(const std::vector<const WorkerMetrics*>& workers);

}  // namespace sandgate::metrics
