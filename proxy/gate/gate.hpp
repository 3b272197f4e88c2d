// The gate: the one object that assembles the proxy from its settings, and the one owner of its
// start-up and shutdown order. `sandgate serve`, `sandgate run` and the integration tests all
// start a gate through it (as Envoy's InstanceImpl is both the server and what its integration
// tests start), so no other code builds the parts or has to get their order right.
//
// What it owns, in the order it makes them (and destroys them in reverse):
//   1. the decision log;
//   2. the policy (blocklist, allowlist, policy options) loaded from the settings;
//   3. the Server: worker threads, each with its io_context, resolver and listener duplicate;
//   4. the LaunchDarkly remote allowlist, when a client-side ID is set (after the server: it is
//      stopped, its thread joined, while the server's workers still exist);
//   5. the PolicyReloader watching the list and config files (publishes into the server);
//   6. the admin endpoint, when the admin setting names an address.
// and, before the server, the question board of --unknown=ask (proxy/ask/), which the workers'
// sessions wait on and the admin endpoint and `run`'s terminal answer; the drain closes it first,
// so that no request waits on a question past the drain.
//
// Life cycle: open() (log and policy; no thread, no socket, so `run` can still fork) ->
// start() (listener, LaunchDarkly, reloader, admin) -> serve() on the calling thread or
// start_thread() on a thread of its own -> drain() -> stop(). Shutdown has one order, in
// drain() and stop() (see there); the destructor calls stop().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "proxy/admin/admin_server.hpp"
#include "proxy/ask/question_board.hpp"
#include "proxy/budget/ledger.hpp"
#include "proxy/dns/local_addresses.hpp"
#include "proxy/inspect/inspection.hpp"
#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/mcp/call_tally.hpp"
#include "proxy/reload/policy_reloader.hpp"
#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/server/server.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/policy_loader.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"

namespace sandgate::gate {

// `run`'s private admin socket (Gate::start_private_admin): where, what /about says, and who is
// told when `sandgate watch` attaches to answer questions or leaves.
struct PrivateAdmin {
  std::string socket_path;
  std::string about;  // the JSON of GET /about
  std::function<void(std::size_t answering)> answering_changed;
};

// What a gate is made from.
struct GateOptions {
  settings::Settings settings;
  // What `settings` were loaded from: the config file is re-read with them when it changes, so
  // flags and variables keep their precedence over it. Empty: no config file is watched.
  settings::Sources sources;
  // What to do when the default blocklist file is missing: the daemon creates it from the
  // bundled template; tests read the template and write nothing.
  settings::MissingDefaultBlocklist missing_blocklist = settings::MissingDefaultBlocklist::create;
  // Serve without a token whatever the settings and their reloads say (`run`: the only client is
  // the confined command, to which a token would have to be handed, so it would protect nothing).
  bool without_token = false;
  // Refuse a reload that turns `unknown` to ask, saying why (`run` started without asking: the
  // terminal that answers questions is set up at its start, or never). Empty: allowed.
  std::string asking_only_from_start = {};
  // The masked credentials' values and sentinels, loaded by the caller (`run` hands the
  // sentinels to the command). Null: open() loads them from the settings' secrets.
  std::shared_ptr<const secrets::MaskedSecrets> secrets = nullptr;
};

// Why a gate could not be opened or started. `logged`: the message is in the decision log
// already (once the log is open every error goes there); otherwise the caller must say it.
struct GateError {
  std::string message;
  bool logged = false;
};

class Gate {
 public:
  // Opens the decision log and loads the policy, reporting what loading noticed (notes, skipped
  // lines) in the log. Starts no thread and opens no socket.
  static Expected<std::unique_ptr<Gate>, GateError> open(GateOptions options);

  ~Gate();  // stop()
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Makes the server listen, then starts LaunchDarkly (when configured), the file watcher and the
  // admin endpoint (when configured). `listener`: a socket already bound and listening that the
  // gate takes over (`run` makes it inside the command's network namespace; the gate owns it
  // from here on, also on failure); none: the listen setting is bound (port 0 picks a free
  // port, reported by port()). Call once, before serve() or start_thread(). Returns the error,
  // or nothing when the gate is ready to serve.
  std::optional<GateError> start(std::optional<int> listener = std::nullopt);

  // Serves on the calling thread until the drain is over. `handle_signals`: SIGTERM and SIGINT
  // start the drain, SIGHUP calls reload() (`serve`); otherwise only drain() ends it.
  void serve(bool handle_signals);
  // Serves on a thread of its own (`run`, tests); drain() or stop() ends it.
  void start_thread();

  // Reopens the log file (logrotate) and reads every watched file again (SIGHUP). Thread-safe.
  // What a reload changes is applied by apply().
  void reload();
  // Applies what a reload built: the log level at once; the policy and the reloadable settings
  // posted to every worker, where the next request takes them (Server::publish). Restart-only
  // settings in `settings` are ignored (the reloader names them in a warning). Called on the
  // reloader's thread; thread-safe.
  void apply(std::shared_ptr<const rules::Policy> policy,
             std::shared_ptr<const settings::Settings> settings);

  // Stops accepting, lets open connections finish for up to the drain setting, then closes the
  // rest, in Server::drain_step's order: each worker marked stopping, its connections closed and
  // its resolver shut down (cancelling every pending wait on them), then LaunchDarkly stopped
  // (its pending lookups answered on the workers, which find themselves stopping). Returns when
  // the server's threads have ended. The admin endpoint keeps answering (/readyz: 503) until
  // stop(). Idempotent; from any thread but the workers'.
  void drain();
  // drain(), then stops the admin endpoint (its thread joined; its handlers read the reloader)
  // and the file watcher (its thread joined; a reload it finished meanwhile was posted to
  // workers whose loops have ended, and is dropped with them). The server, LaunchDarkly and the
  // log go when the gate is destroyed, in reverse order of making. Idempotent.
  void stop();

  // The bound port (0 for a unix socket). Valid after start().
  std::uint16_t port() const { return port_; }
  // What the gate listens on: "127.0.0.1:9877", "[::1]:9877" or "unix:/path".
  std::string listen_text() const { return server_->listen_text(); }
  // `run`: the admin routes on a unix socket of this user's only (admin_server.hpp,
  // start_private), for `sandgate watch`; no token. After start(). The socket is removed at
  // stop().
  std::optional<GateError> start_private_admin(const PrivateAdmin& private_admin);

  // The admin endpoint's bound ADDR:PORT; empty when there is none.
  const std::string& admin_address() const { return admin_address_; }
  // The policy as loaded at open() (files it came from, entries).
  const settings::LoadedPolicy& loaded() const { return loaded_; }
  const settings::Settings& settings() const { return settings_; }
  // The masked credentials (empty when none are set). Valid after open().
  const secrets::MaskedSecrets& secrets() const { return *secrets_; }
  // What was spent of the egress budgets (rules/budgets.hpp). Thread-safe.
  const budget::Ledger& budgets() const { return budgets_; }
  // The policy in force now (the last good reload's, else open()'s): its budgets are what the
  // ledger's spending is measured against. Valid after start(); thread-safe.
  std::shared_ptr<const rules::Policy> current_policy() const;

  // Capture (`sandgate run` on Linux): the capture listeners and DNS sockets are served too.
  // After start(), before the workers run (start_thread()/serve()); see Server::adopt_capture.
  Expected<bool, std::string> adopt_capture(sandbox::CaptureSockets sockets);

  log::DecisionLog& log() { return *log_; }
  // The server, for tests that look at its workers. Commands use the Gate's own interface.
  server::Server& server() { return *server_; }
  reload::PolicyReloader& reloader() { return *reloader_; }
  launchdarkly::RemoteAllowlist* remote_allowlist() { return remote_.get(); }
  // The question board of --unknown=ask (valid after start()). Thread-safe.
  ask::QuestionBoard& questions() { return *questions_; }

  // The /metrics text: the workers' counters, gauges, the reloads, LaunchDarkly's. Thread-safe.
  std::string render_metrics() const;

 private:
  Gate(GateOptions options, std::unique_ptr<log::DecisionLog> log);
  GateError fail(const std::string& message);
  std::optional<GateError> start_admin();
  admin::AdminHandlers admin_handlers();
  void start_questions();
  std::optional<std::string> record_answer(ask::Answer answer, std::string_view host,
                                           std::uint16_t port, std::string_view by,
                                           const ask::RequestQuestion* request);

  // Declaration order is destruction order in reverse: the admin endpoint goes first, then the
  // reloader, LaunchDarkly, the server, and the log last (everything writes to it).
  settings::Settings settings_;
  settings::Sources sources_;
  settings::MissingDefaultBlocklist missing_blocklist_;
  bool without_token_;
  std::string asking_only_from_start_;  // GateOptions::asking_only_from_start
  std::shared_ptr<const secrets::MaskedSecrets> secrets_;
  std::unique_ptr<log::DecisionLog> log_;
  settings::LoadedPolicy loaded_;
  // This machine's addresses, read before the first decision and kept current (check 1a).
  std::unique_ptr<dns::LocalAddressWatch> local_addresses_;
  // Before the server: the workers' sessions hold waiters on it until their loops end.
  std::unique_ptr<ask::QuestionBoard> questions_;
  // What was spent of the egress budgets, for the gate's life (reloads keep it); before the
  // server, whose connections count into it.
  budget::Ledger budgets_;
  // The MCP calls judged, for the gate's life (reloads keep it); before the server.
  mcp::CallTally mcp_calls_;
  std::unique_ptr<inspect::Inspection> inspection_;  // before the server: it outlives the workers
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<launchdarkly::RemoteAllowlist> remote_;
  std::unique_ptr<reload::PolicyReloader> reloader_;
  std::unique_ptr<admin::AdminServer> admin_;
  std::unique_ptr<admin::AdminServer> private_admin_;  // `run`'s, for `sandgate watch`
  std::thread thread_;  // runs Server::run() when start_thread() was called
  std::uint16_t port_ = 0;
  std::string admin_address_;
  bool started_ = false;
  bool stopped_ = false;
  // The tokens in force (a reload may change them), for the admin endpoint's ask routes.
  mutable std::mutex token_mutex_;
  std::string token_;
  std::string admin_token_;
};

}  // namespace sandgate::gate
