// `sandgate serve`: load the policy, bind, announce, serve, drain.
#include "proxy/commands/serve.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "proxy/admin/admin_server.hpp"
#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "proxy/reload/policy_reloader.hpp"
#include "proxy/server/server.hpp"
#include "proxy/settings/policy_loader.hpp"

namespace sandgate::commands {
namespace {

constexpr int kStartupError = 2;

void report_load(log::DecisionLog& log, const settings::LoadedPolicy& loaded) {
  for (const auto& note : loaded.notes) {
    log.note("info", note);
  }
  for (const auto& issue : loaded.issues) {
    log.note("warning", issue.source + ":" + std::to_string(issue.line) + ": skipped '" +
                            issue.text + "': " + issue.message);
  }
}

// Writes the port through a temporary file and a rename: a reader sees the whole number or
// nothing.
bool write_port_file(const std::string& path, std::uint16_t port, std::string& error) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << port << "\n";
    out.close();
    if (!out) {
      error = "cannot write " + temporary;
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    error = "cannot rename " + temporary + " to " + path + ": " + ec.message();
    return false;
  }
  return true;
}

}  // namespace

std::string render_metrics(const server::Server& server, const reload::PolicyReloader& reloader) {
  metrics::GaugeValues gauges;
  gauges.open_connections = server.open_connections();
  const auto policy = server.current_policy();
  gauges.blocklist_entries = policy->blocklist().size();
  gauges.allowlist_entries =
      policy->allowlist() != nullptr ? static_cast<std::int64_t>(policy->allowlist()->size()) : -1;
  auto copy = [](const reload::PolicyReloader::Counts& counts) {
    return metrics::ReloadCounts{counts.ok.load(), counts.failed.load()};
  };
  gauges.blocklist_reloads = copy(reloader.blocklist_counts());
  gauges.allowlist_reloads = copy(reloader.allowlist_counts());
  gauges.config_reloads = copy(reloader.config_counts());
  gauges.version = SANDGATE_VERSION_STRING;
  return metrics::render_prometheus(server.worker_metrics(), gauges);
}

int run_serve(const settings::Settings& settings, const settings::Sources& sources) {
  // A client that disconnects while we write must cost an error code, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  // A SIGHUP (logrotate, `systemctl reload`) that comes before the server's own handler is
  // installed must not end the gate; the files are read at start anyway.
  std::signal(SIGHUP, SIG_IGN);

  auto opened = log::DecisionLog::open(settings.log_format, settings.log_file, settings.log_level);
  if (!opened) {
    std::cerr << "sandgate: " << opened.error() << "\n";
    return kStartupError;
  }
  log::DecisionLog& log = **opened;

  auto loaded = settings::load_policy(settings, settings::MissingDefaultBlocklist::create);
  if (!loaded) {
    log.note("error", loaded.error());
    return kStartupError;
  }
  report_load(log, *loaded);

  server::Server server(settings, log, loaded->policy);
  auto endpoint = server.bind();
  if (!endpoint) {
    log.note("error", endpoint.error());
    return kStartupError;
  }
  // The LaunchDarkly allowlist, when a client-side ID is given. Made after the server so that it
  // is stopped (its thread joined) before the server and its workers go away.
  std::unique_ptr<launchdarkly::RemoteAllowlist> remote;
  if (!settings.launchdarkly_client_id.empty()) {
    remote = std::make_unique<launchdarkly::RemoteAllowlist>(
        settings, [&log](std::string_view level, std::string_view text) { log.note(level, text); });
    log.note("info", launchdarkly::describe_configuration(settings));
    if (!settings.ld_failover_given) {
      log.note("warning",
               "GOOSE_SANDBOX_LD_FAILOVER is not set: when LaunchDarkly cannot be reached, "
               "connections the local rules allow are allowed (fail open); set it to deny to fail "
               "closed, or to allow or blocklist to say that failing open is intended");
    }
    remote->start();
    server.use_remote_allowlist(remote.get());
  }

  // Files are watched and reloaded as they change; SIGHUP forces a reload of everything and
  // reopens the log file (for logrotate).
  std::unique_ptr<reload::PolicyReloader> reloader;
  try {
    reloader = std::make_unique<reload::PolicyReloader>(
        settings, sources, log, loaded->policy,
        [&server](std::shared_ptr<const rules::Policy> policy) {
          server.publish(std::move(policy));
        });
  } catch (const std::exception& error) {
    log.note("error", error.what());
    return kStartupError;
  }
  reloader->start();
  server.on_hangup = [&log, &reloader] {
    log.reopen();
    reloader->reload_all();
  };


  // The admin endpoint reads the workers' counters and the reloader's; it runs on its own thread.
  std::unique_ptr<admin::AdminServer> admin_server;
  if (!settings.admin.empty()) {
    admin::AdminHandlers handlers;
    handlers.metrics = [&server, &reloader, &remote] {
      std::string text = render_metrics(server, *reloader);
      if (remote) {
        text += remote->render_prometheus();
      }
      return text;
    };
    handlers.denials = [&server] {
      return metrics::render_denials_json(server.worker_metrics());
    };
    handlers.ready = [&server] { return server.accepting(); };
    handlers.note = [&log](std::string_view level, std::string_view text) {
      log.note(level, text);
    };
    admin_server = std::make_unique<admin::AdminServer>(std::move(handlers));
    auto bound = admin_server->start(settings.admin);
    if (!bound) {
      log.note("error", bound.error());
      return kStartupError;
    }
    log.note("info", "admin endpoint on http://" + *bound + "/metrics");
  }


  if (!settings.port_file.empty()) {
    std::string error;
    if (!write_port_file(settings.port_file, endpoint->port(), error)) {
      log.note("error", "port file: " + error);
      return kStartupError;
    }
  }
  log.note("info", "blocklist " + loaded->blocklist_path + ": " +
                       std::to_string(loaded->policy->blocklist().size()) + " entries; " +
                       std::to_string(settings.threads) + " worker thread(s) (" +
                       settings.threads_note + ")");
  // The one line on standard output: scripts wait for it.
  std::cout << "sandgate listening on " << server.listen_text() << std::endl;

  server.run(true);
  return 0;
}

}  // namespace sandgate::commands
