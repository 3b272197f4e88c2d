// The gate. See gate.hpp.
#include "proxy/gate/gate.hpp"

#include <unistd.h>

#include <utility>

#include "proxy/metrics/prometheus.hpp"
#include "proxy/session/parent_dial.hpp"

namespace sandgate::gate {
namespace {

// The one text of the warning that LaunchDarkly's failover was not chosen.
constexpr const char* kFailOpenWarning =
    "GOOSE_SANDBOX_LD_FAILOVER is not set: when LaunchDarkly cannot be reached, connections the "
    "local rules allow are allowed (fail open); set it to deny to fail closed, or to allow or "
    "blocklist to say that failing open is intended";

void report_load(log::DecisionLog& log, const settings::LoadedPolicy& loaded) {
  for (const auto& note : loaded.notes) {
    log.note("info", note);
  }
  for (const auto& issue : loaded.issues) {
    log.note("warning", issue.source + ":" + std::to_string(issue.line) + ": skipped '" +
                            issue.text + "': " + issue.message);
  }
}

}  // namespace

Expected<std::unique_ptr<Gate>, GateError> Gate::open(GateOptions options) {
  auto opened = log::DecisionLog::open(options.settings.log_format, options.settings.log_file,
                                       options.settings.log_level);
  if (!opened) {
    return Unexpected{GateError{opened.error(), false}};
  }
  std::unique_ptr<Gate> gate(new Gate(std::move(options), std::move(*opened)));
  auto loaded = settings::load_policy(gate->settings_, gate->missing_blocklist_);
  if (!loaded) {
    return Unexpected{gate->fail(loaded.error())};
  }
  report_load(*gate->log_, *loaded);
  gate->loaded_ = std::move(*loaded);
  return gate;
}

Gate::Gate(GateOptions options, std::unique_ptr<log::DecisionLog> log)
    : settings_(std::move(options.settings)),
      sources_(std::move(options.sources)),
      missing_blocklist_(options.missing_blocklist),
      without_token_(options.without_token),
      log_(std::move(log)) {
  if (without_token_) {
    settings_.token.clear();
  }
}

Gate::~Gate() { stop(); }

GateError Gate::fail(const std::string& message) {
  log_->note("error", message);
  return GateError{message, true};
}

std::optional<GateError> Gate::start(std::optional<int> listener) {
  started_ = true;
  // The server first: the parts made after it hold pointers into it or publish into it.
  server_ = std::make_unique<server::Server>(settings_, *log_, loaded_.policy);
  auto endpoint = listener ? server_->adopt_listener(*listener) : server_->bind();
  if (!endpoint) {
    return fail(endpoint.error());
  }
  port_ = endpoint->port();
  if (settings_.parent_proxy) {
    log_->note("warning", session::describe_parent(settings_));
  }

  if (!settings_.launchdarkly_client_id.empty()) {
    log::DecisionLog* log = log_.get();
    remote_ = std::make_unique<launchdarkly::RemoteAllowlist>(
        settings_, [log](std::string_view level, std::string_view text) { log->note(level, text); });
    log_->note("info", launchdarkly::describe_configuration(settings_));
    if (!settings_.ld_failover_given) {
      log_->note("warning", kFailOpenWarning);
    }
    remote_->start();
    server_->use_remote_allowlist(remote_.get());
  }

  // Files are watched and reloaded as they change; what a reload builds is applied.
  try {
    reloader_ = std::make_unique<reload::PolicyReloader>(
        settings_, sources_, *log_, loaded_.policy,
        [this](std::shared_ptr<const rules::Policy> policy,
               std::shared_ptr<const settings::Settings> settings) {
          apply(std::move(policy), std::move(settings));
        });
  } catch (const std::exception& error) {
    return fail(error.what());
  }
  reloader_->start();
  server_->on_hangup = [this] { reload(); };

  if (settings_.admin) {
    return start_admin();
  }
  return std::nullopt;
}

// The admin endpoint reads the workers' counters and the reloader's; it runs on its own thread.
std::optional<GateError> Gate::start_admin() {
  admin::AdminHandlers handlers;
  handlers.metrics = [this] { return render_metrics(); };
  handlers.denials = [this] { return metrics::render_denials_json(server_->worker_metrics()); };
  handlers.ready = [this] { return server_->accepting(); };
  log::DecisionLog* log = log_.get();
  handlers.note = [log](std::string_view level, std::string_view text) { log->note(level, text); };
  admin_ = std::make_unique<admin::AdminServer>(std::move(handlers));
  auto bound = admin_->start(*settings_.admin);
  if (!bound) {
    return fail(bound.error());
  }
  admin_address_ = *bound;
  log_->note("info", "admin endpoint on http://" + admin_address_ + "/metrics");
  return std::nullopt;
}

void Gate::serve(bool handle_signals) { server_->run(handle_signals); }

void Gate::start_thread() {
  server::Server* server = server_.get();
  thread_ = std::thread([server] { server->run(false); });
}

void Gate::reload() {
  log_->reopen();
  if (reloader_) {
    reloader_->reload_all();
  }
}

void Gate::apply(std::shared_ptr<const rules::Policy> policy,
                 std::shared_ptr<const settings::Settings> settings) {
  if (without_token_ && !settings->token.empty()) {
    auto copy = std::make_shared<settings::Settings>(*settings);
    copy->token.clear();
    settings = std::move(copy);
  }
  log_->set_level(settings->log_level);
  server_->publish(std::move(policy), std::move(settings));
}

void Gate::drain() {
  if (!server_) {
    return;
  }
  server_->begin_drain();
  if (thread_.joinable()) {
    thread_.join();
  }
  // A server that never ran (start() failed, or serve() was never called) has nothing to drain
  // but LaunchDarkly, which Server::drain_step would have stopped.
  if (remote_) {
    remote_->stop();
  }
}

void Gate::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  drain();
  // The admin endpoint first: its handlers read the reloader's counters.
  admin_.reset();
  reloader_.reset();
}

std::string Gate::render_metrics() const {
  metrics::GaugeValues gauges;
  gauges.open_connections = server_->open_connections();
  const auto policy = server_->current_policy();
  gauges.blocklist_entries = policy->blocklist().size();
  gauges.allowlist_entries =
      policy->allowlist() != nullptr ? static_cast<std::int64_t>(policy->allowlist()->size()) : -1;
  auto copy = [](const reload::PolicyReloader::Counts& counts) {
    return metrics::ReloadCounts{counts.ok.load(), counts.failed.load()};
  };
  gauges.blocklist_reloads = copy(reloader_->blocklist_counts());
  gauges.allowlist_reloads = copy(reloader_->allowlist_counts());
  gauges.config_reloads = copy(reloader_->config_counts());
  gauges.version = SANDGATE_VERSION_STRING;
  std::string text = metrics::render_prometheus(server_->worker_metrics(), gauges);
  if (remote_) {
    text += remote_->render_prometheus();
  }
  return text;
}

}  // namespace sandgate::gate
