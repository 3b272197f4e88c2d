// `sandgate-load compare`. See compare.hpp.
#include "bench/load/compare.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "bench/load/json_line.hpp"
#include "bench/load/loopback_endpoint.hpp"
#include "bench/load/origin_server.hpp"
#include "bench/load/report.hpp"

namespace sandgate::load {
namespace {

const char* unit_of(workload_kind kind) {
  switch (kind) {
    case workload_kind::setups:
      return "setups/s";
    case workload_kind::http:
    case workload_kind::https:
    case workload_kind::h2:
      return "requests/s";
    case workload_kind::https_setups:
    case workload_kind::h2_setups:
      return "handshakes/s";
    default:
      return "Gbit/s";
  }
}

bool has_latency(workload_kind kind) {
  return kind == workload_kind::setups || kind == workload_kind::http ||
         kind == workload_kind::https_setups || kind == workload_kind::https;
}

double median(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// One row of the table: a target at one workload and level, over the rounds.
struct row {
  std::vector<double> value;
  std::vector<double> p99_ms;
  std::vector<double> cpu;  // the proxy's CPU: µs per setup or request, ns per KiB relayed
  std::uint64_t errors = 0;
  unsigned runs = 0;
};

// The origin, in a process of its own (forked before any thread exists), for as long as this
// process lives.
class own_origin {
 public:
  own_origin() {
    char folder[] = "/tmp/sandgate-load-compare-XXXXXX";
    if (::mkdtemp(folder) == nullptr) {
      return;
    }
    folder_ = folder;
    const std::string port_file = folder_ + "/origin";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      std::freopen("/dev/null", "w", stdout);
      origin_options options;
      options.listen = boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0);
      options.port_file = port_file;
      options.lifetime_s = 86400;
      ::_exit(run_origin(options));
    }
    for (int i = 0; i < 200 && pid_ > 0; ++i) {
      std::ifstream in(port_file);
      std::string text;
      if (std::getline(in, text) && !text.empty()) {
        std::string error;
        endpoint_ = parse_loopback_endpoint(text, false, error);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  ~own_origin() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
  own_origin(const own_origin&) = delete;
  own_origin& operator=(const own_origin&) = delete;

  const std::optional<boost::asio::ip::tcp::endpoint>& endpoint() const { return endpoint_; }

 private:
  std::string folder_;
  pid_t pid_ = -1;
  std::optional<boost::asio::ip::tcp::endpoint> endpoint_;
};

// The live line on a terminal; nothing when standard error is not one.
class progress {
 public:
  progress() : live_(::isatty(STDERR_FILENO) == 1) {}
  void show(const std::string& text) {
    if (live_) {
      std::fprintf(stderr, "\r\033[K%s", text.c_str());
      std::fflush(stderr);
    }
  }
  void done() {
    if (live_) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  }

 private:
  bool live_;
};

std::string ratio_text(double value, double base) {
  if (base <= 0) {
    return "—";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f×", value / base);
  return text;
}

// One bar of the chart: a proxy's median as a ratio to direct, at one workload and level.
struct bar {
  std::string target;
  double ratio = 0;
};
struct chart_group {
  std::string title;  // "setups ×16"
  std::vector<bar> bars;
};

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A self-contained SVG: one cluster of bars per workload and level, one bar per proxy, the
// height its ratio to direct, a line at 1.0 (as fast as no proxy).
bool write_chart(const std::string& path, const std::vector<chart_group>& groups,
                 const std::vector<std::string>& names, unsigned rounds) {
  constexpr double kBar = 26, kGap = 34, kTop = 50, kPlot = 260, kLeft = 60;
  double top = 1.2;
  std::size_t bars = 0;
  for (const auto& group : groups) {
    bars += group.bars.size();
    for (const auto& b : group.bars) {
      top = std::max(top, b.ratio * 1.1);
    }
  }
  const double width = kLeft + bars * kBar + groups.size() * kGap + 20 + 160;
  const double height = kTop + kPlot + 60;
  static const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  std::string svg;
  char text[512];
  std::snprintf(text, sizeof text,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%.0f\" y=\"24\" font-size=\"15\">Ratio to no proxy (median of %u "
                "round(s); higher is better)</text>\n",
                width, height, kLeft, rounds);
  svg += text;
  const auto y_of = [&](double ratio) { return kTop + kPlot - ratio / top * kPlot; };
  for (double tick = 0; tick <= top + 1e-9; tick += top > 3 ? 1.0 : 0.25) {
    std::snprintf(text, sizeof text,
                  "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
                  "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n",
                  kLeft, width - 170, y_of(tick), y_of(tick),
                  std::abs(tick - 1) < 1e-9 ? "#333" : "#ddd", kLeft - 6, y_of(tick) + 4, tick);
    svg += text;
  }
  double x = kLeft + kGap / 2;
  for (const auto& group : groups) {
    const double start = x;
    for (const auto& b : group.bars) {
      const std::size_t colour =
          static_cast<std::size_t>(std::find(names.begin(), names.end(), b.target) -
                                   names.begin()) %
          10;
      std::snprintf(text, sizeof text,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>%s: %.2f×</title></rect>\n",
                    x, y_of(b.ratio), kBar - 4, kTop + kPlot - y_of(b.ratio), kColours[colour],
                    escape_xml(b.target).c_str(), b.ratio);
      svg += text;
      x += kBar;
    }
    std::snprintf(text, sizeof text,
                  "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", (start + x) / 2,
                  kTop + kPlot + 20, escape_xml(group.title).c_str());
    svg += text;
    x += kGap;
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::snprintf(text, sizeof text,
                  "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                  "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                  width - 150, kTop + i * 20.0, kColours[i % 10], width - 132, kTop + i * 20.0 + 11,
                  escape_xml(names[i]).c_str());
    svg += text;
  }
  svg += "</svg>\n";
  std::ofstream out(path, std::ios::trunc);
  out << svg;
  return static_cast<bool>(out.flush());
}

}  // namespace

int run_compare(const compare_options& options) {
  std::optional<own_origin> started;
  std::optional<boost::asio::ip::tcp::endpoint> origin = options.origin;
  if (!origin) {
    started.emplace();
    origin = started->endpoint();
    if (!origin) {
      std::fprintf(stderr, "sandgate-load compare: the origin did not start\n");
      return 1;
    }
  }
  const auto& targets = options.targets;
  // (workload, level, target index) -> row
  std::map<std::tuple<int, unsigned, std::size_t>, row> rows;
  progress line;
  bool some_failed = false;
  for (unsigned round = 1; round <= options.rounds; ++round) {
    for (workload_kind workload : options.workloads) {
      for (unsigned level : options.levels) {
        for (std::size_t i = 0; i < targets.size(); ++i) {
          const std::size_t index = (i + round - 1) % targets.size();
          const compare_target& target = targets[index];
          char text[160];
          std::snprintf(text, sizeof text, "round %u/%u  %s ×%u  %s  (%.0f s)", round,
                        options.rounds, workload_name(workload), level, target.name.c_str(),
                        options.duration_s);
          line.show(text);
          run_options run;
          run.proxy = target.proxy;
          run.socks5 = target.socks5;
          run.origin = *origin;
          run.workload = workload;
          run.concurrency = level;
          run.duration_s = options.duration_s;
          run.timeout_s = options.timeout_s;
          run.threads = options.threads;
          run.proxy_pid = target.pid;
          run.label = target.name;
          const run_result result = run_workload(run);
          if (options.json) {
            std::printf("%s\n", to_json(result).c_str());
            std::fflush(stdout);
          }
          row& r = rows[{static_cast<int>(workload), level, index}];
          r.runs += 1;
          r.errors += result.error_total();
          if (result.ops == 0) {
            some_failed = true;
            continue;
          }
          r.value.push_back(headline_rate(result));
          if (has_latency(workload)) {
            r.p99_ms.push_back(static_cast<double>(result.latency_ns.value_at_percentile(99)) /
                               1e6);
          }
          if (result.cpu_before && result.cpu_after) {
            const double cpu = result.cpu_after->user_s + result.cpu_after->system_s -
                               result.cpu_before->user_s - result.cpu_before->system_s;
            if (has_latency(workload)) {
              r.cpu.push_back(cpu * 1e6 / static_cast<double>(result.ops));
            } else if (result.bytes > 0) {
              r.cpu.push_back(cpu * 1e9 / (static_cast<double>(result.bytes) / 1024));
            }
          }
        }
      }
    }
  }
  line.done();

  // The reference: the first proxy named (direct is targets[0]).
  const std::size_t reference = targets.size() > 1 ? 1 : 0;
  for (workload_kind workload : options.workloads) {
    if (!options.json) {
      std::printf(
          "\n%s: median of %u round(s) of %.0f s; (× direct) and (× %s) are ratios in "
          "the same rounds\n\n",
          workload_name(workload), options.rounds, options.duration_s,
          targets[reference].name.c_str());
      std::printf("| target | %s | %s | × direct | × %s |%s proxy CPU %s | runs | errors |\n",
                  has_latency(workload) ? "clients" : "tunnels", unit_of(workload),
                  targets[reference].name.c_str(),
                  has_latency(workload) ? " p99 ms | p99 × direct |" : "",
                  has_latency(workload) ? "µs/op" : "ns/KiB");
      std::printf("|---|---:|---:|---:|---:|%s---:|---:|---:|\n",
                  has_latency(workload) ? "---:|---:|" : "");
    }
    for (unsigned level : options.levels) {
      const auto base = rows.find({static_cast<int>(workload), level, 0});
      const auto ref = rows.find({static_cast<int>(workload), level, reference});
      const double base_value = base == rows.end() ? 0 : median(base->second.value);
      const double ref_value = ref == rows.end() ? 0 : median(ref->second.value);
      const double base_p99 = base == rows.end() ? 0 : median(base->second.p99_ms);
      for (std::size_t index = 0; index < targets.size(); ++index) {
        const auto found = rows.find({static_cast<int>(workload), level, index});
        if (found == rows.end()) {
          continue;
        }
        const row& r = found->second;
        const double value = median(r.value);
        const double p99 = median(r.p99_ms);
        const double cpu = median(r.cpu);
        const bool measured = !r.value.empty();
        if (options.json) {
          json_line out;
          out.field("summary", true)
              .field("target", targets[index].name)
              .field("workload", workload_name(workload))
              .field("concurrency", level)
              .field("median", measured ? value : 0.0)
              .field("unit", unit_of(workload))
              .field("runs", r.runs)
              .field("errors", r.errors);
          if (measured && base_value > 0 && index != 0) {
            out.field("ratio_to_direct", value / base_value);
          } else {
            out.null_field("ratio_to_direct");
          }
          if (measured && ref_value > 0 && index != reference) {
            out.field("ratio_to_reference", value / ref_value);
          } else {
            out.null_field("ratio_to_reference");
          }
          if (has_latency(workload) && measured) {
            out.field("p99_ms", p99);
          }
          if (!r.cpu.empty()) {
            out.field(has_latency(workload) ? "proxy_cpu_us_per_op" : "proxy_cpu_ns_per_kib", cpu);
          }
          std::printf("%s\n", out.str().c_str());
          continue;
        }
        if (!measured) {
          std::printf("| %s | %u | failed | — | — |%s — | %u | %llu |\n",
                      targets[index].name.c_str(), level, has_latency(workload) ? " — | — |" : "",
                      r.runs, static_cast<unsigned long long>(r.errors));
          continue;
        }
        char value_text[32];
        std::snprintf(value_text, sizeof value_text,
                      workload == workload_kind::download || workload == workload_kind::upload
                          ? "%.2f"
                          : "%.0f",
                      value);
        std::string latency;
        if (has_latency(workload)) {
          char text[64];
          std::snprintf(text, sizeof text, " %.2f | %s |", p99,
                        index == 0 ? "—" : ratio_text(p99, base_p99).c_str());
          latency = text;
        }
        char cpu_text[32] = "—";
        if (!r.cpu.empty()) {
          std::snprintf(cpu_text, sizeof cpu_text, "%.1f", cpu);
        }
        std::printf("| %s | %u | %s | %s | %s |%s %s | %u | %llu |\n", targets[index].name.c_str(),
                    level, value_text, index == 0 ? "—" : ratio_text(value, base_value).c_str(),
                    index == reference ? "—" : ratio_text(value, ref_value).c_str(),
                    latency.c_str(), cpu_text, r.runs, static_cast<unsigned long long>(r.errors));
      }
    }
  }
  std::fflush(stdout);
  if (!options.plot.empty()) {
    std::vector<chart_group> groups;
    std::vector<std::string> names;
    for (std::size_t index = 1; index < targets.size(); ++index) {
      names.push_back(targets[index].name);
    }
    for (workload_kind workload : options.workloads) {
      for (unsigned level : options.levels) {
        const auto base = rows.find({static_cast<int>(workload), level, 0});
        const double base_value = base == rows.end() ? 0 : median(base->second.value);
        chart_group group;
        group.title = std::string(workload_name(workload)) + " \u00d7" + std::to_string(level);
        for (std::size_t index = 1; index < targets.size(); ++index) {
          const auto found = rows.find({static_cast<int>(workload), level, index});
          if (found != rows.end() && !found->second.value.empty() && base_value > 0) {
            group.bars.push_back({targets[index].name, median(found->second.value) / base_value});
          }
        }
        groups.push_back(std::move(group));
      }
    }
    if (!write_chart(options.plot, groups, names, options.rounds)) {
      std::fprintf(stderr, "sandgate-load compare: cannot write the chart to %s\n",
                   options.plot.c_str());
      return 1;
    }
    std::fprintf(stderr, "sandgate-load compare: chart written to %s\n", options.plot.c_str());
  }
  return some_failed ? 1 : 0;
}

}  // namespace sandgate::load
