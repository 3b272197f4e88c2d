// JSON and human renderings of a run (see report.hpp).
#include "bench/load/report.hpp"

#include <cstdio>

#include "bench/load/json_line.hpp"

namespace sandgate::load {

std::uint64_t run_result::error_total() const {
  std::uint64_t total = 0;
  for (std::size_t i = 1; i < errors.size(); ++i) {
    total += errors[i];
  }
  return total;
}

void run_result::merge(const run_result& other) {
  ops += other.ops;
  bytes += other.bytes;
  connections += other.connections;
  latency_ns.merge(other.latency_ns);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    errors[i] += other.errors[i];
  }
  for (const auto& [status, count] : other.refused_status) {
    refused_status[status] += count;
  }
  aborted = aborted || other.aborted;
  hard_stopped = hard_stopped || other.hard_stopped;
}

namespace {

double per_second(double count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

double micros(std::uint64_t nanos) { return static_cast<double>(nanos) / 1000.0; }

// The proxy's CPU seconds over the window, user and system; null when unmeasured.
void cpu_object(json_line& json, const run_result& r) {
  if (!r.cpu_before || !r.cpu_after) {
    json.null_field("proxy_cpu_s");
    return;
  }
  json.open("proxy_cpu_s")
      .field("user", r.cpu_after->user_s - r.cpu_before->user_s)
      .field("system", r.cpu_after->system_s - r.cpu_before->system_s)
      .close();
}

void latency_object(json_line& json, const histogram& h) {
  json.open("latency_us")
      .field("min", micros(h.min()))
      .field("mean", h.mean() / 1000.0)
      .field("p50", micros(h.value_at_percentile(50)))
      .field("p90", micros(h.value_at_percentile(90)))
      .field("p99", micros(h.value_at_percentile(99)))
      .field("p999", micros(h.value_at_percentile(99.9)))
      .field("max", micros(h.max()))
      .close();
}

void memory_object(json_line& json, const char* name, const std::optional<memory_sample>& m) {
  if (!m) {
    json.null_field(name);
    return;
  }
  json.open(name)
      .field("rss", m->rss_kb)
      .field("pss", m->pss_kb)
      .field("anon", m->anonymous_kb)
      .close();
}

// (after - before) / count, in KB; null when unmeasured. Signed: a proxy may trim its heap.
void per_unit(json_line& json, const char* name, const std::optional<memory_sample>& before,
              const std::optional<memory_sample>& after, std::uint64_t count,
              std::uint64_t memory_sample::*member) {
  if (!before || !after || count == 0) {
    json.null_field(name);
    return;
  }
  const double delta = static_cast<double>(*after.*member) - static_cast<double>(*before.*member);
  json.field(name, delta / static_cast<double>(count));
}

void per_tunnel(json_line& json, const char* name, const run_result& r,
                std::uint64_t memory_sample::*member) {
  per_unit(json, name, r.memory_before, r.memory_after, r.tunnels_open, member);
}

// h2-hold: the proxy's memory per connection (before -> connections open) and per stream
// (connections open -> streams held as well).
void hold_fields(json_line& json, const run_result& r) {
  json.field("connections_requested", r.tunnels_requested)
      .field("connections_open", r.tunnels_open)
      .field("connections_alive", r.tunnels_alive)
      .field("streams_open", r.streams_open)
      .field("open_s", r.open_s)
      .field("proxy_pid", r.proxy_pid);
  memory_object(json, "memory_before_kb", r.memory_before);
  memory_object(json, "memory_connections_kb", r.memory_connections);
  memory_object(json, "memory_after_kb", r.memory_after);
  for (const auto& [kind, member] : {std::pair{"anon", &memory_sample::anonymous_kb},
                                     std::pair{"rss", &memory_sample::rss_kb}}) {
    per_unit(json, (std::string(kind) + "_kb_per_connection").c_str(), r.memory_before,
             r.memory_connections, r.tunnels_open, member);
    per_unit(json, (std::string(kind) + "_kb_per_stream").c_str(), r.memory_connections,
             r.memory_after, r.streams_open, member);
  }
}

// A memory delta per unit for the human line, 0 when unmeasured.
double kb_per(const std::optional<memory_sample>& before, const std::optional<memory_sample>& after,
              std::uint64_t count) {
  if (!before || !after || count == 0) {
    return 0.0;
  }
  return (static_cast<double>(after->anonymous_kb) - static_cast<double>(before->anonymous_kb)) /
         static_cast<double>(count);
}

}  // namespace

double headline_rate(const run_result& r) {
  if (r.workload == "download" || r.workload == "upload") {
    return per_second(static_cast<double>(r.bytes) * 8 / 1e9, r.measured_s);
  }
  return per_second(static_cast<double>(r.ops), r.measured_s);
}

std::string to_json(const run_result& r) {
  json_line json;
  json.field("tool", "sandgate-load")
      .field("format", 1)
      .field("label", r.label)
      .field("workload", r.workload)
      .field("proxy", r.proxy)
      .field("origin", r.origin)
      .field("connect_host", r.connect_host)
      .field("concurrency", r.concurrency)
      .field("threads", r.threads)
      .field("duration_s", r.duration_s)
      .field("measured_s", r.measured_s);

  if (r.workload == "setups" || r.workload == "https-setups" || r.workload == "h2-setups") {
    // An https setup is one full TLS handshake (and one request): setups_per_s is handshakes/s.
    json.field("setups", r.ops).field("setups_per_s", headline_rate(r));
    latency_object(json, r.latency_ns);
    cpu_object(json, r);
  } else if (r.workload == "http" || r.workload == "https" || r.workload == "h2") {
    json.field("requests", r.ops)
        .field("requests_per_s", headline_rate(r))
        .field("connections", r.connections);
    if (r.workload == "h2") {
      json.field("streams", r.streams);
    }
    latency_object(json, r.latency_ns);
    cpu_object(json, r);
  } else if (r.workload == "h2-hold" || r.workload == "https-hold") {
    json.field("streams", r.streams);
    hold_fields(json, r);
  } else if (r.workload == "download" || r.workload == "upload") {
    json.field("tunnels", r.ops).field("bytes", r.bytes).field("gbit_per_s", headline_rate(r));
    cpu_object(json, r);
  } else if (r.workload == "idle") {
    json.field("tunnels_requested", r.tunnels_requested)
        .field("tunnels_open", r.tunnels_open)
        .field("tunnels_alive", r.tunnels_alive)
        .field("open_s", r.open_s)
        .field("proxy_pid", r.proxy_pid);
    memory_object(json, "memory_before_kb", r.memory_before);
    memory_object(json, "memory_after_kb", r.memory_after);
    per_tunnel(json, "anon_kb_per_tunnel", r, &memory_sample::anonymous_kb);
    per_tunnel(json, "rss_kb_per_tunnel", r, &memory_sample::rss_kb);
    per_tunnel(json, "pss_kb_per_tunnel", r, &memory_sample::pss_kb);
  }

  json.field("errors_total", r.error_total()).open("errors");
  for (std::size_t i = 1; i < r.errors.size(); ++i) {
    json.field(error_kind_name(static_cast<error_kind>(i)), r.errors[i]);
  }
  json.close().open("refused_status");
  for (const auto& [status, count] : r.refused_status) {
    json.field(std::to_string(status), count);
  }
  json.close().field("aborted", r.aborted).field("hard_stopped", r.hard_stopped);
  return json.str();
}

std::string to_human(const run_result& r) {
  char line[512];
  const char* name = r.label.empty() ? r.proxy.c_str() : r.label.c_str();
  if (r.workload == "https-setups" || r.workload == "h2-setups") {
    std::snprintf(line, sizeof line,
                  "%-10s %-12s c=%-5u %9.0f handshakes/s  p50 %7.3f ms  p99 %7.3f ms  "
                  "p99.9 %7.3f ms",
                  name, r.workload.c_str(), r.concurrency, headline_rate(r),
                  micros(r.latency_ns.value_at_percentile(50)) / 1000,
                  micros(r.latency_ns.value_at_percentile(99)) / 1000,
                  micros(r.latency_ns.value_at_percentile(99.9)) / 1000);
  } else if (r.workload == "setups") {
    std::snprintf(line, sizeof line,
                  "%-10s setups   c=%-5u %9.0f setups/s  p50 %7.3f ms  p99 %7.3f ms  "
                  "p99.9 %7.3f ms",
                  name, r.concurrency, headline_rate(r),
                  micros(r.latency_ns.value_at_percentile(50)) / 1000,
                  micros(r.latency_ns.value_at_percentile(99)) / 1000,
                  micros(r.latency_ns.value_at_percentile(99.9)) / 1000);
  } else if (r.workload == "http" || r.workload == "https") {
    std::snprintf(line, sizeof line,
                  "%-10s %-8s c=%-5u %9.0f requests/s  p50 %7.3f ms  p99 %7.3f ms  "
                  "over %llu connections",
                  name, r.workload.c_str(), r.concurrency, headline_rate(r),
                  micros(r.latency_ns.value_at_percentile(50)) / 1000,
                  micros(r.latency_ns.value_at_percentile(99)) / 1000,
                  static_cast<unsigned long long>(r.connections));
  } else if (r.workload == "h2") {
    std::snprintf(line, sizeof line,
                  "%-10s h2       c=%-5u x%-4u %9.0f requests/s  p50 %7.3f ms  p99 %7.3f ms  "
                  "over %llu connections",
                  name, r.concurrency, r.streams, headline_rate(r),
                  micros(r.latency_ns.value_at_percentile(50)) / 1000,
                  micros(r.latency_ns.value_at_percentile(99)) / 1000,
                  static_cast<unsigned long long>(r.connections));
  } else if (r.workload == "h2-hold" || r.workload == "https-hold") {
    const bool measured = r.memory_before && r.memory_connections;
    std::snprintf(line, sizeof line,
                  "%-10s %-10s n=%-5llu open %llu in %.2f s, alive %llu, streams %llu; "
                  "%s%.2f KB anon/connection, %.2f KB anon/stream",
                  name, r.workload.c_str(), static_cast<unsigned long long>(r.tunnels_requested),
                  static_cast<unsigned long long>(r.tunnels_open), r.open_s,
                  static_cast<unsigned long long>(r.tunnels_alive),
                  static_cast<unsigned long long>(r.streams_open),
                  measured ? "" : "(no --proxy-pid) ",
                  kb_per(r.memory_before, r.memory_connections, r.tunnels_open),
                  kb_per(r.memory_connections, r.memory_after, r.streams_open));
  } else if (r.workload == "idle") {
    const bool measured = r.memory_before && r.memory_after && r.tunnels_open > 0;
    const double anon = measured ? (static_cast<double>(r.memory_after->anonymous_kb) -
                                    static_cast<double>(r.memory_before->anonymous_kb)) /
                                       static_cast<double>(r.tunnels_open)
                                 : 0.0;
    std::snprintf(line, sizeof line,
                  "%-10s idle     n=%-5llu open %llu in %.2f s, alive %llu, %s%.2f KB anon/tunnel",
                  name, static_cast<unsigned long long>(r.tunnels_requested),
                  static_cast<unsigned long long>(r.tunnels_open), r.open_s,
                  static_cast<unsigned long long>(r.tunnels_alive),
                  measured ? "" : "(no --proxy-pid) ", anon);
  } else {
    std::snprintf(line, sizeof line, "%-10s %-8s c=%-5u %7.2f Gbit/s over %llu tunnels", name,
                  r.workload.c_str(), r.concurrency, headline_rate(r),
                  static_cast<unsigned long long>(r.ops));
  }
  std::string text = line;
  if (r.error_total() > 0) {
    text += "  errors " + std::to_string(r.error_total()) + " (";
    bool first = true;
    for (std::size_t i = 1; i < r.errors.size(); ++i) {
      if (r.errors[i] > 0) {
        text += (first ? "" : ", ") + std::string(error_kind_name(static_cast<error_kind>(i))) +
                " " + std::to_string(r.errors[i]);
        first = false;
      }
    }
    text += ")";
  }
  if (r.aborted) {
    text += "  ABORTED: too many errors";
  }
  return text;
}

}  // namespace sandgate::load
