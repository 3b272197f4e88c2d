// /metrics for MCP calls: how many tools/call, prompts/get and resources/read the gate judged,
// per host, kind, name and verdict:
//
//   sandgate_mcp_calls_total{host="mcp.example.com",kind="tool",name="search",verdict="allow"} 12
//
// The labels' cardinality is bounded: at most kMaxSeries series; a call that would open one more
// is counted under name="(other)" (and host="(other)" when its host is new too), and a name that
// is not plain (rules::plain_name: non-ASCII, spaces, control bytes) always is name="(odd)", so an
// agent inventing names cannot grow the scrape. Verdicts: allow, deny, would-deny (report-only).
//
// Thread-safe: one mutex, taken once per judged call (never per byte), and by the scrape.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "proxy/mcp/mcp_stage.hpp"

namespace sandgate::mcp {

class CallTally {
 public:
  static constexpr std::size_t kMaxSeries = 512;

  // Counts each judged call of `calls` (protocol methods are not counted) on `host`.
  void count(std::string_view host, const std::vector<Call>& calls);
  // The counter in Prometheus text format.
  std::string render_prometheus() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  mutable std::mutex mutex_;
  std::map<Key, std::uint64_t> counts_;
};

// "allow", "deny" or "would-deny": the verdict label of a judged call; empty for one that passed
// unjudged (a host with no lines of its word).
std::string_view verdict_label(const Call& call);

}  // namespace sandgate::mcp
