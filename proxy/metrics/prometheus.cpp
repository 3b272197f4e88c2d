// Prometheus text exposition (version 0.0.4) and the /denials JSON. See prometheus.hpp.
#include "proxy/metrics/prometheus.hpp"

#include <algorithm>
#include <cstdio>

#include "proxy/json/json_writer.hpp"

namespace sandgate::metrics {
namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const std::string& name_and_labels, double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  out += name_and_labels;
  out += ' ';
  out += text;
  out += '\n';
}

void histogram(std::string& out, const char* name, const char* help,
               const std::vector<const WorkerMetrics*>& workers,
               const Histogram WorkerMetrics::*member) {
  header(out, name, "histogram", help);
  std::array<std::uint64_t, Histogram::kBounds.size() + 1> buckets{};
  double sum = 0;
  std::uint64_t count = 0;
  for (const auto* worker : workers) {
    const Histogram& h = worker->*member;
    auto values = h.buckets();
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      buckets[i] += values[i];
    }
    sum += h.sum_seconds();
    count += h.count();
  }
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    cumulative += buckets[i];
    char le[32];
    if (i < Histogram::kBounds.size()) {
      std::snprintf(le, sizeof le, "%g", Histogram::kBounds[i]);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    sample(out, std::string(name) + "_bucket{le=\"" + le + "\"}", static_cast<double>(cumulative));
  }
  sample(out, std::string(name) + "_sum", sum);
  sample(out, std::string(name) + "_count", static_cast<double>(count));
}

std::uint64_t sum(const std::vector<const WorkerMetrics*>& workers,
                  const Counter WorkerMetrics::*member) {
  std::uint64_t total = 0;
  for (const auto* worker : workers) {
    total += (worker->*member).get();
  }
  return total;
}

// The workers' total of what `read` reads of each (a counter of an array, a gauge).
template <typename Read>
std::uint64_t total_of(const std::vector<const WorkerMetrics*>& workers, Read read) {
  std::uint64_t total = 0;
  for (const auto* worker : workers) {
    total += read(*worker);
  }
  return total;
}

void render_decisions(std::string& out, const std::vector<const WorkerMetrics*>& workers) {
  header(out, "sandgate_decisions_total", "counter",
         "Decisions taken, by verdict (allow, deny, error), reason code, and whether a denial "
         "was enforced (false: report-only mode let it through, the log's would-deny).");
  // Every reason of the table, with its own verdict even at 0 (so a query for a reason that has
  // not happened yet finds a series), and any other verdict it was counted under.
  for (const rules::ReasonInfo& row : rules::kReasons) {
    const std::size_t r = rules::reason_index(row.reason);
    for (std::size_t v = 0; v < kVerdictCount; ++v) {
      const auto verdict = static_cast<rules::Verdict>(v);
      const std::uint64_t total =
          total_of(workers, [r, v](const WorkerMetrics& w) { return w.decisions[r][v].get(); });
      if (total > 0 || verdict == row.verdict) {
        sample(out,
               "sandgate_decisions_total{verdict=\"" + std::string(rules::verdict_name(verdict)) +
                   "\",reason=\"" + std::string(row.code) + "\",enforced=\"true\"}",
               static_cast<double>(total));
      }
    }
    // Report-only mode's would-denies: every reportable reason, even at 0.
    const std::uint64_t reported =
        total_of(workers, [r](const WorkerMetrics& w) { return w.would_deny[r].get(); });
    if (reported > 0 || rules::reportable(row.reason)) {
      sample(out,
             "sandgate_decisions_total{verdict=\"deny\",reason=\"" + std::string(row.code) +
                 "\",enforced=\"false\"}",
             static_cast<double>(reported));
    }
  }
}

// Connections, tunnels, requests and bytes, and how long the destinations took to connect.
void render_traffic(std::string& out, const std::vector<const WorkerMetrics*>& workers,
                    const GaugeValues& gauges) {
  header(out, "sandgate_open_connections", "gauge", "Client connections open now.");
  sample(out, "sandgate_open_connections", static_cast<double>(gauges.open_connections));
  const auto opened = sum(workers, &WorkerMetrics::tunnels_open_total);
  const auto closed = sum(workers, &WorkerMetrics::tunnels_closed_total);
  header(out, "sandgate_open_tunnels", "gauge", "CONNECT tunnels established and not yet ended.");
  sample(out, "sandgate_open_tunnels", static_cast<double>(opened - std::min(opened, closed)));
  header(out, "sandgate_tunnels_total", "counter", "CONNECT tunnels established.");
  sample(out, "sandgate_tunnels_total", static_cast<double>(opened));
  header(out, "sandgate_http_requests_total", "counter", "Plain-HTTP requests forwarded.");
  sample(out, "sandgate_http_requests_total",
         static_cast<double>(sum(workers, &WorkerMetrics::http_requests_total)));
  header(out, "sandgate_bytes_total", "counter",
         "Bytes relayed: up is client to destination, down is destination to client.");
  sample(out, "sandgate_bytes_total{direction=\"up\"}",
         static_cast<double>(sum(workers, &WorkerMetrics::bytes_up)));
  sample(out, "sandgate_bytes_total{direction=\"down\"}",
         static_cast<double>(sum(workers, &WorkerMetrics::bytes_down)));
  histogram(out, "sandgate_upstream_connect_seconds", "Time to connect to the destination.",
            workers, &WorkerMetrics::upstream_connect);
}

// How names were resolved: lookups, failures, the cache.
void render_dns_lookups(std::string& out, const std::vector<const WorkerMetrics*>& workers) {
  histogram(out, "sandgate_dns_lookup_seconds", "Time to resolve a destination name.", workers,
            &WorkerMetrics::dns_lookup);
  header(out, "sandgate_dns_failures_total", "counter",
         "Lookups that gave no address (not found, timeout, server failure).");
  sample(out, "sandgate_dns_failures_total",
         static_cast<double>(sum(workers, &WorkerMetrics::dns_failures_total)));
  header(out, "sandgate_dns_cache_lookups_total", "counter",
         "Names looked up through the DNS cache: hit (no query), miss (a query sent or joined).");
  sample(out, "sandgate_dns_cache_lookups_total{result=\"hit\"}",
         static_cast<double>(sum(workers, &WorkerMetrics::dns_cache_hits)));
  sample(out, "sandgate_dns_cache_lookups_total{result=\"miss\"}",
         static_cast<double>(sum(workers, &WorkerMetrics::dns_cache_misses)));
}

void render_parent_dials(std::string& out, const std::vector<const WorkerMetrics*>& workers) {
  // The parent proxy's dials, by outcome (all three present, 0 without a parent).
  constexpr std::array<const char*, 3> kOutcomes = {"connected", "refused", "unreachable"};
  header(out, "sandgate_parent_dials_total", "counter",
         "Connections to the parent proxy, by outcome: connected (2xx), refused (another "
         "status), unreachable (no connection, or no usable reply).");
  for (std::size_t i = 0; i < kOutcomes.size(); ++i) {
    const std::uint64_t total =
        total_of(workers, [i](const WorkerMetrics& w) { return w.parent_dials[i].get(); });
    sample(out, std::string("sandgate_parent_dials_total{outcome=\"") + kOutcomes[i] + "\"}",
           static_cast<double>(total));
  }
}

// Names answered without a query, and the names the caches hold.
void render_dns_answers(std::string& out, const std::vector<const WorkerMetrics*>& workers) {
  header(out, "sandgate_dns_hosts_file_answers_total", "counter",
         "Names answered from the hosts file (no query).");
  sample(out, "sandgate_dns_hosts_file_answers_total",
         static_cast<double>(sum(workers, &WorkerMetrics::dns_hosts_file_answers)));
  const std::uint64_t entries =
      total_of(workers, [](const WorkerMetrics& w) { return w.dns_cache_entries.get(); });
  header(out, "sandgate_dns_cache_entries", "gauge", "Names held in the workers' DNS caches.");
  sample(out, "sandgate_dns_cache_entries", static_cast<double>(entries));
}

// The rules in force and the reloads of their files.
void render_rules(std::string& out, const GaugeValues& gauges) {
  header(out, "sandgate_rules_loaded", "gauge", "Entries in force, per list.");
  sample(out, "sandgate_rules_loaded{list=\"blocklist\"}",
         static_cast<double>(gauges.blocklist_entries));
  if (gauges.allowlist_entries >= 0) {
    sample(out, "sandgate_rules_loaded{list=\"allowlist\"}",
           static_cast<double>(gauges.allowlist_entries));
  }
  header(out, "sandgate_reloads_total", "counter", "Reloads of each file, by result.");
  const std::pair<const char*, const ReloadCounts*> files[] = {
      {"blocklist", &gauges.blocklist_reloads},
      {"allowlist", &gauges.allowlist_reloads},
      {"request-rules", &gauges.request_rules_reloads},
      {"budgets", &gauges.budgets_reloads},
      {"config", &gauges.config_reloads}};
  for (const auto& [file, counts] : files) {
    sample(out, std::string("sandgate_reloads_total{file=\"") + file + "\",result=\"ok\"}",
           static_cast<double>(counts->ok));
    sample(out, std::string("sandgate_reloads_total{file=\"") + file + "\",result=\"failed\"}",
           static_cast<double>(counts->failed));
  }
}

}  // namespace

std::string render_prometheus(const std::vector<const WorkerMetrics*>& workers,
                              const GaugeValues& gauges) {
  // The families in the order they have always been exposed.
  std::string out;
  render_decisions(out, workers);
  render_traffic(out, workers, gauges);
  render_dns_lookups(out, workers);
  render_parent_dials(out, workers);
  render_dns_answers(out, workers);
  render_rules(out, gauges);
  header(out, "sandgate_build_info", "gauge", "The running build.");
  sample(out, "sandgate_build_info{version=\"" + gauges.version + "\"}", 1);
  return out;
}

std::string render_denials_json(const std::vector<const WorkerMetrics*>& workers) {
  std::vector<Denial> all;
  for (const auto* worker : workers) {
    auto denials = worker->recent_denials();
    all.insert(all.end(), std::make_move_iterator(denials.begin()),
               std::make_move_iterator(denials.end()));
  }
  std::sort(all.begin(), all.end(), [](const Denial& a, const Denial& b) {
    return a.unix_millis > b.unix_millis ||
           (a.unix_millis == b.unix_millis && a.connection_id > b.connection_id);
  });
  if (all.size() > kDenialsKept) {
    all.resize(kDenialsKept);
  }
  // Every field a client chose (method, host, ...) goes through the one JSON escaping function:
  // one denial with bytes that are not UTF-8 must not break the whole document.
  std::string out = "[";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Denial& d = all[i];
    out += i == 0 ? "\n" : ",\n";
    json_writer::ObjectWriter object(out);
    object.number("unix_ms", d.unix_millis)
        .number("conn", d.connection_id)
        .string("client", d.client)
        .string("method", d.method)
        .string("host", d.host)
        .number("port", d.port)
        .string("verdict", d.verdict)
        .string("reason", d.reason)
        .string("rule", d.rule)
        .string("detail", d.detail);
    object.close();
  }
  out += "\n]\n";
  return out;
}

}  // namespace sandgate::metrics
