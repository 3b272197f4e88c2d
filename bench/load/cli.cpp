// CLI11 wiring and validation for sandgate-load (see cli.hpp).
#include "bench/load/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <string>
#include <thread>

#include "bench/load/loopback_endpoint.hpp"

namespace sandgate::load {

namespace {

// Turns a HOST:PORT option into an endpoint, or a CLI11 error that names the option.
boost::asio::ip::tcp::endpoint endpoint_option(const std::string& option, const std::string& text,
                                               bool allow_port_zero) {
  std::string error;
  const auto endpoint = parse_loopback_endpoint(text, allow_port_zero, error);
  if (!endpoint) {
    throw CLI::ValidationError(option, error);
  }
  return *endpoint;
}

}  // namespace

std::optional<command_line> parse_command_line(int argc, char** argv, int& exit_code) {
  CLI::App app{
      "sandgate-load: end-to-end load for CONNECT proxies on loopback.\n"
      "  sandgate-load origin --listen 127.0.0.1:0 --port-file F\n"
      "  sandgate-load run --proxy HOST:PORT|none --origin HOST:PORT "
      "--workload setups|download|upload|idle|http|https-setups|https|h2|h2-setups|h2-hold|"
      "https-hold "
      "--concurrency N [--streams M] --duration S [--ca-file F]\n"
      "  sandgate-load compare NAME=HOST:PORT [NAME=socks5://HOST:PORT ...] "
      "[--workload setups,download] [--concurrency 16] [--rounds 3]"};
  app.require_subcommand(1);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

  command_line line;
  std::string origin_listen = "127.0.0.1:0";
  auto* origin =
      app.add_subcommand("origin", "serve echo ('e'), source ('d'), sink ('u') and HTTP ('GET')");
  origin->add_option("--listen", origin_listen, "loopback HOST:PORT to listen on (port 0: any)")
      ->capture_default_str();
  origin->add_option("--port-file", line.origin.port_file, "write the bound HOST:PORT here");
  origin->add_option("--lifetime", line.origin.lifetime_s, "exit after this many seconds")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  origin->add_option("--chunk", line.origin.chunk_bytes, "source write / sink read size, bytes")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{16} << 20))
      ->capture_default_str();
  origin->add_flag("--dns", line.origin.dns,
                   "also answer DNS on UDP at the same port: every name is 127.0.0.1");
  auto* tls_cert = origin->add_option("--tls-cert", line.origin.tls_certificate_file,
                                      "serve HTTP over TLS too (sessions starting with a TLS "
                                      "record) with this PEM certificate chain, leaf first");
  auto* tls_key = origin->add_option("--tls-key", line.origin.tls_key_file,
                                     "the PEM private key of --tls-cert");
  tls_cert->check(CLI::ExistingFile)->needs(tls_key);
  tls_key->check(CLI::ExistingFile)->needs(tls_cert);

  std::string proxy_text;
  std::string origin_text;
  auto& r = line.run;
  const std::map<std::string, workload_kind> workloads{
      {"setups", workload_kind::setups},      {"download", workload_kind::download},
      {"upload", workload_kind::upload},      {"idle", workload_kind::idle},
      {"http", workload_kind::http},          {"https-setups", workload_kind::https_setups},
      {"https", workload_kind::https},        {"h2", workload_kind::h2},
      {"h2-hold", workload_kind::h2_hold},    {"https-hold", workload_kind::https_hold},
      {"h2-setups", workload_kind::h2_setups}};
  auto* run = app.add_subcommand("run", "drive one workload and print its result");
  run->add_option("--proxy", proxy_text, "CONNECT proxy HOST:PORT, or none (straight to origin)")
      ->required();
  run->add_option("--origin", origin_text, "the sandgate-load origin's HOST:PORT")->required();
  run->add_option(
         "--workload", r.workload,
         "setups | download | upload | idle | http | https-setups | https | h2 | h2-setups | "
         "h2-hold | https-hold")
      ->required()
      ->transform(CLI::CheckedTransformer(workloads, CLI::ignore_case));
  run->add_option("--concurrency", r.concurrency,
                  "clients (setups, http, https-setups, h2-setups) or tunnels (download, upload, "
                  "idle) or connections (https, h2, h2-hold, https-hold)")
      ->check(CLI::Range(1u, 60000u))
      ->capture_default_str();
  auto* streams = run->add_option("--streams", r.streams,
                                  "h2: GETs in flight per connection; h2-hold, https-hold: "
                                  "requests held open per connection (0: idle connections only)")
                      ->check(CLI::Range(0u, 1000u))
                      ->capture_default_str();
  run->add_option("--duration", r.duration_s, "seconds to run (idle: seconds to hold)")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  run->add_option("--warmup", r.warmup_s, "seconds excluded from rates (default 10%, max 1 s)")
      ->check(CLI::Range(0.0, 3600.0));
  run->add_option("--timeout", r.timeout_s, "bound on each connect/handshake/echo/stall, s")
      ->check(CLI::Range(0.01, 600.0))
      ->capture_default_str();
  run->add_option("--threads", r.threads, "event-loop threads (never more than cores)")
      ->check(CLI::Range(1u, cores))
      ->capture_default_str();
  run->add_option("--proxy-pid", r.proxy_pid,
                  "the proxy's PID: idle, *-hold sample its memory, the others its CPU time")
      ->check(CLI::Range(1, 1 << 30));
  run->add_option("--label", r.label, "name copied into the report (e.g. the target)");
  run->add_option("--connect-host", r.connect_host,
                  "CONNECT to (and put in HTTP URLs) this name instead of the origin's address; "
                  "the proxy must resolve it to the origin (see origin --dns)")
      ->check([](const std::string& name) -> std::string {
        // Letters, digits, '-' and '.': a DNS name, nothing a request line could be broken with.
        const bool ok = !name.empty() && name.size() <= 253 &&
                        name.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyz"
                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") == std::string::npos;
        return ok ? std::string() : "a DNS name (letters, digits, '-' and '.') is required";
      });
  run->add_option("--ca-file", r.ca_file,
                  "https workloads: the PEM bundle of CAs the origin's (or an inspecting "
                  "proxy's) certificate is verified against")
      ->check(CLI::ExistingFile);
  run->add_flag("--socks5", r.socks5,
                "ask the proxy for each tunnel with SOCKS5 (no authentication) instead of CONNECT");
  run->add_option("--max-errors", r.max_errors, "stop the run early past this many errors")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
      ->capture_default_str();
  run->add_option("--payload", r.payload_bytes,
                  "echo size (setups, idle) or response body size (http), bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}))
      ->capture_default_str();
  run->add_option("--chunk", r.chunk_bytes, "download read / upload write size, bytes")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{16} << 20))
      ->capture_default_str();
  run->add_option("--open-parallelism", r.open_parallelism,
                  "idle, *-hold: tunnels (connections) opened at once")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  run->add_option("--settle", r.settle_s,
                  "idle, *-hold: seconds between last open and each memory sample")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();

  // compare: NAME=HOST:PORT targets, every one measured against direct (no proxy).
  auto& c = line.compare;
  std::vector<std::string> target_texts;
  std::vector<std::string> pid_texts;
  std::vector<std::string> compare_workloads;
  std::string compare_origin;
  auto* compare = app.add_subcommand(
      "compare",
      "benchmark HTTP CONNECT and SOCKS5 proxies on loopback side by side, in rounds, against "
      "no proxy; prints a table of medians and ratios");
  compare
      ->add_option("targets", target_texts,
                   "NAME=HOST:PORT (HTTP CONNECT) or NAME=socks5://HOST:PORT; the first is the "
                   "reference the others are also compared with")
      ->required();
  compare->add_option("--workload", compare_workloads, "setups, download, upload, http")
      ->delimiter(',')
      ->check(CLI::IsMember({"setups", "download", "upload", "http"}));
  compare->add_option("--concurrency", c.levels, "clients or tunnels (a list: 1,16,256)")
      ->delimiter(',')
      ->check(CLI::Range(1u, 60000u));
  compare->add_option("--rounds", c.rounds, "rounds (targets rotated each round)")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  compare->add_option("--duration", c.duration_s, "seconds per run")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  compare->add_option("--timeout", c.timeout_s, "bound on each connect/handshake/echo/stall, s")
      ->check(CLI::Range(0.01, 600.0))
      ->capture_default_str();
  compare->add_option("--threads", c.threads, "event-loop threads (never more than cores)")
      ->check(CLI::Range(1u, cores))
      ->capture_default_str();
  compare->add_option("--pid", pid_texts,
                      "NAME=PID: sample that proxy's CPU time (proxy CPU per operation)");
  compare->add_option("--origin", compare_origin,
                      "a running `sandgate-load origin` (default: start one)");
  compare->add_flag("--json", c.json, "JSON lines: every run, then one summary line per row");
  compare->add_option("--plot", c.plot, "also draw the ratios to direct as an SVG chart (FILE)");

  try {
    app.parse(argc, argv);
    if (*origin) {
      line.which = command_line::command::origin;
      line.origin.listen = endpoint_option("--listen", origin_listen, true);
    } else if (*compare) {
      line.which = command_line::command::compare;
      c.targets.push_back(compare_target{"direct", std::nullopt, false, 0});
      for (const auto& text : target_texts) {
        const std::size_t equals = text.find('=');
        if (equals == std::string::npos || equals == 0) {
          throw CLI::ValidationError("targets", "'" + text + "' is not NAME=HOST:PORT");
        }
        compare_target target;
        target.name = text.substr(0, equals);
        std::string address = text.substr(equals + 1);
        if (address.starts_with("socks5://")) {
          target.socks5 = true;
          address = address.substr(9);
        } else if (address.starts_with("http://")) {
          address = address.substr(7);
        }
        for (const auto& known : c.targets) {
          if (known.name == target.name) {
            throw CLI::ValidationError("targets", "the name '" + target.name + "' is used twice");
          }
        }
        target.proxy = endpoint_option(target.name, address, false);
        c.targets.push_back(target);
      }
      for (const auto& text : pid_texts) {
        const std::size_t equals = text.find('=');
        auto named = std::find_if(c.targets.begin(), c.targets.end(), [&](const auto& t) {
          return equals != std::string::npos && t.name == text.substr(0, equals);
        });
        if (named == c.targets.end() || named == c.targets.begin()) {
          throw CLI::ValidationError("--pid", "'" + text + "' names no proxy target (NAME=PID)");
        }
        try {
          named->pid = std::stoi(text.substr(equals + 1));
        } catch (const std::exception&) {
          throw CLI::ValidationError("--pid", "'" + text + "': the PID is not a number");
        }
      }
      if (!compare_workloads.empty()) {
        c.workloads.clear();
        for (const auto& name : compare_workloads) {
          c.workloads.push_back(workloads.at(name));
        }
      }
      if (!compare_origin.empty()) {
        c.origin = endpoint_option("--origin", compare_origin, false);
      }
    } else {
      line.which = command_line::command::run;
      if (proxy_text != "none") {
        r.proxy = endpoint_option("--proxy", proxy_text, false);
      }
      r.origin = endpoint_option("--origin", origin_text, false);
      const bool hold =
          r.workload == workload_kind::h2_hold || r.workload == workload_kind::https_hold;
      const bool streamed = r.workload == workload_kind::h2 || hold;
      const bool tls = streamed || r.workload == workload_kind::https_setups ||
                       r.workload == workload_kind::https || r.workload == workload_kind::h2_setups;
      if (tls && r.ca_file.empty()) {
        throw CLI::ValidationError(
            "--ca-file", "the https and h2 workloads verify certificates: name the CA bundle");
      }
      if (streams->count() > 0 && !streamed) {
        throw CLI::ValidationError("--streams",
                                   "only the h2, h2-hold and https-hold workloads have streams");
      }
      if (r.workload == workload_kind::https_hold && r.streams > 1) {
        throw CLI::ValidationError("--streams",
                                   "HTTP/1.1 holds at most 1 request per connection (https-hold)");
      }
      if (r.workload == workload_kind::h2 && r.streams == 0) {
        throw CLI::ValidationError("--streams", "the h2 workload needs at least 1 stream");
      }
    }
  } catch (const CLI::ParseError& error) {
    exit_code = app.exit(error);
    if (exit_code == 0) {
      return std::nullopt;
    }
    exit_code = 2;
    return std::nullopt;
  }
  return line;
}

}  // namespace sandgate::load
