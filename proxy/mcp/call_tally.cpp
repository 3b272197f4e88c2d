// /metrics for MCP calls (see call_tally.hpp).
#include "proxy/mcp/call_tally.hpp"

namespace sandgate::mcp {
namespace {

// A label value as Prometheus's text format writes it: `\`, `"` and newlines escaped.
std::string label(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string_view verdict_label(const Call& call) {
  switch (call.outcome) {
    case Call::Outcome::allowed:
      return "allow";
    case Call::Outcome::refused:
      return "deny";
    case Call::Outcome::would_deny:
      return "would-deny";
    case Call::Outcome::passed:
      break;
  }
  return call.is_call() ? "allow" : "";
}

void CallTally::count(std::string_view host, const std::vector<Call>& calls) {
  std::lock_guard lock(mutex_);
  for (const Call& call : calls) {
    if (!call.is_call()) {
      continue;
    }
    const std::string kind(rules::mcp_noun(call.kind));
    const std::string verdict(verdict_label(call));
    const std::string name = rules::plain_name(call.kind, call.name) ? call.name : "(odd)";
    Key key{std::string(host), kind, name, verdict};
    auto found = counts_.find(key);
    if (found == counts_.end() && counts_.size() >= kMaxSeries) {
      std::get<2>(key) = "(other)";
      found = counts_.find(key);
      if (found == counts_.end()) {
        std::get<0>(key) = "(other)";
        found = counts_.find(key);
      }
    }
    if (found == counts_.end()) {
      // A series beyond the bound is still opened for the (other) rows (at most a few).
      found = counts_.emplace(std::move(key), 0).first;
    }
    ++found->second;
  }
}

std::string CallTally::render_prometheus() const {
  std::string out =
      "# HELP sandgate_mcp_calls_total MCP calls judged (tools/call, prompts/get, "
      "resources/read and resources/subscribe) on hosts with MCP rules, by host, kind, name and "
      "verdict; names past the series bound count as (other), names that are not plain ASCII "
      "as (odd).\n"
      "# TYPE sandgate_mcp_calls_total counter\n";
  std::lock_guard lock(mutex_);
  for (const auto& [key, count] : counts_) {
    const auto& [host, kind, name, verdict] = key;
    out += "sandgate_mcp_calls_total{host=\"" + label(host) + "\",kind=\"" + kind + "\",name=\"" +
           label(name) + "\",verdict=\"" + verdict + "\"} " + std::to_string(count) + "\n";
  }
  return out;
}

}  // namespace sandgate::mcp
