// The gate. See gate.hpp.
#include "proxy/gate/gate.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "proxy/admin/watch_routes.hpp"
#include "proxy/ask/admin_routes.hpp"
#include "proxy/ask/list_append.hpp"
#include "proxy/gate/secret_loading.hpp"
#include "proxy/json/json_writer.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "proxy/settings/parent_route.hpp"

namespace sandgate::gate {
namespace {

// The one text of the warning that LaunchDarkly's failover was not chosen.
constexpr const char* kFailOpenWarning =
    "GOOSE_SANDBOX_LD_FAILOVER is not set: when LaunchDarkly cannot be reached, connections the "
    "local rules allow are allowed (fail open); set it to deny to fail closed, or to allow or "
    "blocklist to say that failing open is intended";

// The one text of the warning that questions can be answered by whoever reaches the endpoint.
constexpr std::string_view kNoAdminTokenWarning =
    "ask mode with the admin endpoint on TCP and no admin token (--admin-token, "
    "--admin-token-file, SANDGATE_ADMIN_TOKEN or SANDGATE_ADMIN_TOKEN_FILE): anything that "
    "reaches the endpoint's address can answer questions, including an agent, which holds the "
    "proxy token; set an admin token the agent does not hold";

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
  if (!gate->secrets_) {
    auto secrets = load_masked_secrets(gate->settings_);
    if (!secrets) {
      return Unexpected{gate->fail(secrets.error())};
    }
    gate->secrets_ = std::move(*secrets);
  }
  for (const auto& secret : gate->secrets_->all()) {
    std::string hosts;
    for (const auto& host : secret.spec.hosts) {
      hosts += (hosts.empty() ? "" : ", ") + host;
    }
    gate->log_->note("info", "secret " + secret.spec.name + ": filled in on requests to " + hosts +
                                 " inside TLS the gate inspects; the sandbox's value (a "
                                 "sentinel) is " +
                                 secret.sentinel);
  }
  return gate;
}

Gate::Gate(GateOptions options, std::unique_ptr<log::DecisionLog> log)
    : settings_(std::move(options.settings)),
      sources_(std::move(options.sources)),
      missing_blocklist_(options.missing_blocklist),
      without_token_(options.without_token),
      asking_only_from_start_(std::move(options.asking_only_from_start)),
      secrets_(std::move(options.secrets)),
      log_(std::move(log)) {
  if (without_token_) {
    settings_.token.clear();
  }
  token_ = settings_.token;
  admin_token_ = settings_.admin_token;
}

Gate::~Gate() { stop(); }

GateError Gate::fail(const std::string& message) {
  log_->note("error", message);
  return GateError{message, true};
}

std::optional<GateError> Gate::start(std::optional<int> listener) {
  started_ = true;
  // The first threads of the process (`run` has cloned its confined process by now).
  log_->start_writer();
  local_addresses_ = std::make_unique<dns::LocalAddressWatch>();
  start_questions();
  // The server first: the parts made after it hold pointers into it or publish into it.
  if (auto made = inspect::Inspection::create(
          settings_.ca_dir.empty() ? inspect::default_ca_folder(settings::home_directory())
                                   : settings_.ca_dir,
          settings_.inspect_extra_ca)) {
    inspection_ = std::move(*made);
  } else {
    return fail(made.error());
  }
  if (!loaded_.policy->requests().empty()) {
    // Inspection is configured: the CA is made (or loaded) now, so that clients can be pointed
    // at it before the first connection, and a broken one stops the start.
    auto authority = inspection_->authority();
    if (!authority) {
      return fail("inspection: " + authority.error());
    }
    log_->note("info", "inspection: certificate authority " + (*authority)->paths().certificate +
                           " (" + (*authority)->subject() + "); clients must trust it");
  }
  server_ = std::make_unique<server::Server>(settings_, *log_, loaded_.policy);
  server_->use_question_board(questions_.get());
  server_->use_inspection(inspection_.get());
  server_->use_secrets(secrets_.get());
  server_->use_budgets(&budgets_);
  server_->use_mcp_calls(&mcp_calls_);
  auto endpoint = listener ? server_->adopt_listener(*listener) : server_->bind();
  if (!endpoint) {
    return fail(endpoint.error());
  }
  port_ = endpoint->port();
  if (settings_.parent_proxy) {
    log_->note("warning", settings::describe_parent(settings_));
  }

  if (!settings_.launchdarkly_client_id.empty()) {
    log::DecisionLog* log = log_.get();
    remote_ = std::make_unique<launchdarkly::RemoteAllowlist>(
        settings_,
        [log](std::string_view level, std::string_view text) { log->note(level, text); });
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
    if (!asking_only_from_start_.empty()) {
      reloader_->forbid_asking(asking_only_from_start_);
    }
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

// The question board, and what the start-up log says about the report-only and ask modes.
void Gate::start_questions() {
  log::DecisionLog* log = log_.get();
  questions_ = std::make_unique<ask::QuestionBoard>(
      [log](std::string_view level, std::string_view text) { log->note(level, text); });
  questions_->set_recorder([this](ask::Answer answer, std::string_view host, std::uint16_t port,
                                  std::string_view by, const ask::RequestQuestion* request) {
    return record_answer(answer, host, port, by, request);
  });
  if (!settings_.enforce) {
    log_->note("warning",
               "report-only mode (SANDGATE_ENFORCE=false): policy denials are logged as "
               "would-deny and the connections proceed; still enforced: loopback (this machine "
               "and the gate's own address), cloud metadata and link-local, reserved addresses, "
               "and every protocol error");
  }
  if (settings_.policy.unknown == rules::UnknownMode::ask) {
    log_->note("info",
               "destinations no rule decides are asked about (SANDGATE_UNKNOWN=ask): a "
               "request waits up to " +
                   std::to_string(settings_.ask_timeout.count()) + " s for an answer, then is " +
                   (settings_.ask_default_allow ? "allowed" : "denied") +
                   " (SANDGATE_ASK_DEFAULT); at most " +
                   std::to_string(ask::QuestionBoard::kMaxQuestions) + " questions at once");
  }
}

// `always` and `never`: the entry goes into the file the reloader watches (as it resolved it),
// whose reload then applies it.
std::optional<std::string> Gate::record_answer(ask::Answer answer, std::string_view host,
                                               std::uint16_t port, std::string_view by,
                                               const ask::RequestQuestion* request) {
  const bool allow = answer == ask::Answer::always;
  if (request != nullptr && request->budget) {
    return std::string(
        "a budget's question is answered once (its amount once more), session (each time it is "
        "spent again while the gate runs) or deny; to make more last, raise the amount in the "
        "budgets file");
  }
  if (request != nullptr) {
    // A request's question: its line goes into the request-rules file, after every line there,
    // in the group the request's host fell in (so it cannot start a narrower group that would
    // take the host's other requests away from the lines that decide them now).
    const std::string& line = allow ? request->allow_line : request->deny_line;
    const std::string path = reloader_ ? reloader_->request_rules_path() : std::string();
    if (line.empty()) {
      return request->no_line_because + "; answer `once`, `session` or `deny`";
    }
    if (path.empty()) {
      return std::string("this gate has no request-rules file to write the answer into");
    }
    if (auto error = ask::append_entry(path, line, by)) {
      log_->note("error", "ask: could not add '" + line + "' to " + path + ": " + *error);
      return error;
    }
    log_->note("info", "ask: added '" + line + "' to " + path + " (" +
                           std::string(ask::to_string(answer)) + ", by " + std::string(by) + ")");
    return std::nullopt;
  }
  const std::string path = reloader_
                               ? (allow ? reloader_->allowlist_path() : reloader_->blocklist_path())
                               : std::string();
  if (path.empty()) {
    if (allow) {
      return std::string(
          "`always` needs an allowlist file to write to, and this gate has none (it runs with a "
          "blocklist only); answer `session` to allow it while the gate runs, or start the gate "
          "with --allowlist FILE");
    }
    return std::string("`never` needs a blocklist file to write to, and this gate has none");
  }
  const std::string entry = ask::list_entry(host, port);
  if (auto error = ask::append_entry(path, entry, by)) {
    log_->note("error", "ask: could not add " + entry + " to " + path + ": " + *error);
    return error;
  }
  log_->note("info", "ask: added " + entry + " to " + path + " (" +
                         std::string(ask::to_string(answer)) + ", by " + std::string(by) + ")");
  return std::nullopt;
}

// What every admin endpoint of the gate answers with. The handlers read the workers' counters,
// the reloader's, the board and the log; they run on the endpoint's own thread.
admin::AdminHandlers Gate::admin_handlers() {
  admin::AdminHandlers handlers;
  handlers.metrics = [this] { return render_metrics(); };
  handlers.denials = [this] { return metrics::render_denials_json(server_->worker_metrics()); };
  handlers.ready = [this] { return server_->accepting(); };
  handlers.pending = [this](bool text) {
    return text ? ask::render_pending_text(*questions_) : ask::render_pending_json(*questions_);
  };
  handlers.decide = [this](std::string_view body, std::string_view peer) {
    return ask::decide_from_form(*questions_, body, peer);
  };
  handlers.budgets = [this] {
    return admin::render_budgets_json(server_->current_policy()->budgets(), budgets_);
  };
  handlers.traffic = [this] { return admin::render_traffic_json(log_->traffic().counts()); };
  handlers.events = &log_->events();
  log::DecisionLog* log = log_.get();
  handlers.note = [log](std::string_view level, std::string_view text) { log->note(level, text); };
  return handlers;
}

std::optional<GateError> Gate::start_admin() {
  admin::AdminHandlers handlers = admin_handlers();
  handlers.token = [this] {
    std::lock_guard lock(token_mutex_);
    return token_;
  };
  handlers.admin_token = [this] {
    std::lock_guard lock(token_mutex_);
    return admin_token_;
  };
  handlers.about = [this] {
    std::string out;
    json_writer::ObjectWriter object(out);
    object.string("name", "serve " + server_->listen_text()).number("pid", ::getpid());
    object.close();
    return out + "\n";
  };
  admin_ = std::make_unique<admin::AdminServer>(std::move(handlers));
  auto bound = admin_->start(*settings_.admin);
  if (!bound) {
    return fail(bound.error());
  }
  admin_address_ = *bound;
  log_->note("info", "admin endpoint on http://" + admin_address_ + "/metrics");
  // Under `serve` an agent may reach loopback (goose's Seatbelt profile lets it), and it holds the
  // proxy token; with no admin token it could answer its own questions. `run` is spared the
  // warning: its command lives in a network namespace of its own, which cannot reach this
  // address. Said at start-up only: a reload that drops the admin token is in the reload log.
  if (settings_.policy.unknown == rules::UnknownMode::ask && settings_.admin_token.empty() &&
      !without_token_) {
    log_->note("warning", std::string(kNoAdminTokenWarning) + " (" + admin_address_ + ")");
  }
  questions_->add_answerer();  // `sandgate pending` and `sandgate decide` can answer
  return std::nullopt;
}

std::optional<GateError> Gate::start_private_admin(const PrivateAdmin& private_admin) {
  admin::AdminHandlers handlers = admin_handlers();
  handlers.about = [about = private_admin.about] { return about; };
  handlers.answering_changed = private_admin.answering_changed;
  private_admin_ = std::make_unique<admin::AdminServer>(std::move(handlers));
  auto bound = private_admin_->start_private(private_admin.socket_path);
  if (!bound) {
    private_admin_.reset();
    return fail(bound.error());
  }
  log_->note("info", "sandgate watch can attach to this run at " + *bound);
  return std::nullopt;
}

Expected<bool, std::string> Gate::adopt_capture(sandbox::CaptureSockets sockets) {
  return server_->adopt_capture(std::move(sockets));
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
  {
    std::lock_guard lock(token_mutex_);
    token_ = settings->token;
    admin_token_ = settings->admin_token;
  }
  server_->publish(std::move(policy), std::move(settings));
}

void Gate::drain() {
  if (!server_) {
    return;
  }
  // First the questions: every request waiting on one ends now (shutting-down), and nothing
  // waits on one again.
  questions_->close();
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
  // The admin endpoints first: their handlers read the reloader's counters.
  admin_.reset();
  private_admin_.reset();
  reloader_.reset();
  log_->flush();  // every line of the drained connections is out when stop() returns
}

std::shared_ptr<const rules::Policy> Gate::current_policy() const {
  return server_->current_policy();
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
  gauges.request_rules_reloads = copy(reloader_->request_rules_counts());
  gauges.budgets_reloads = copy(reloader_->budgets_counts());
  gauges.config_reloads = copy(reloader_->config_counts());
  gauges.version = SANDGATE_VERSION_STRING;
  std::string text = metrics::render_prometheus(server_->worker_metrics(), gauges);
  text += questions_->render_prometheus();
  if (remote_) {
    text += remote_->render_prometheus();
  }
  text += budgets_.render_prometheus(policy->budgets());
  text += mcp_calls_.render_prometheus();
  return text;
}

}  // namespace sandgate::gate
