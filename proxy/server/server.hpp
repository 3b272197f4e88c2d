// The daemon's skeleton: the listening socket, one worker thread per core each running its own
// io_context, policy snapshots published to every worker, signals, and the drain on shutdown.
#pragma once

#include <sys/types.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proxy/capture/dns_server.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/server/worker.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"
#include "rules/policy.hpp"
#include "sandbox-profile/process/capture_sockets.hpp"

namespace sandgate::server {

class Server {
 public:
  Server(const settings::Settings& settings, log::DecisionLog& log,
         std::shared_ptr<const rules::Policy> policy);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening address and prepares the workers. The error names the address and why.
  // For `unix:PATH` (see bind_unix_socket) the endpoint returned is the unspecified 0.0.0.0:0;
  // listen_text() names what is listened on either way.
  Expected<boost::asio::ip::tcp::endpoint, std::string> bind();

  // Like bind(), but serves on a socket that is already bound and listening (for instance one
  // created inside another network namespace and handed over). Takes ownership of `fd`.
  Expected<boost::asio::ip::tcp::endpoint, std::string> adopt_listener(int fd);

  // Capture (`sandgate run` on Linux): also serves the capture listeners (every worker accepts
  // on a duplicate; session/fronts/capture_session.hpp) and the DNS sockets (on the first worker),
  // with one synthetic address book for the run. Call after bind() or adopt_listener(), before
  // run(). Takes the descriptors over, also on failure; the error names what could not be used.
  Expected<bool, std::string> adopt_capture(sandbox::CaptureSockets sockets);

  // Serves until begin_drain() (or SIGTERM/SIGINT when `handle_signals`), then lets open
  // connections finish until the drain deadline, closes what is left, and returns.
  void run(bool handle_signals);

  // Stops accepting and starts the drain. Thread-safe; may be called before run().
  void begin_drain();

  // Makes every worker decide with `policy`, and serve with `settings` when given, from its next
  // request on (posted to each worker: a request in flight keeps what it started with). When the
  // policy is new, open connections it denies are closed if the settings say revoke_on_reload.
  // Only the reloadable settings are read from `settings` (reload/policy_reloader.cpp's table);
  // the rest were read at start. Thread-safe.
  void publish(std::shared_ptr<const rules::Policy> policy,
               std::shared_ptr<const settings::Settings> settings = nullptr);

  // The LaunchDarkly allowlist every worker consults (nullptr: off). Call before run(); the
  // allowlist must outlive run().
  void use_remote_allowlist(launchdarkly::RemoteAllowlist* remote) {
    shared_.remote_allowlist = remote;
  }
  // The gate's question board (--unknown=ask), which outlives the workers. Before run().
  void use_question_board(ask::QuestionBoard* board) { shared_.questions = board; }
  // Inspection's contexts and CA, which outlive the workers. Before run().
  void use_inspection(inspect::Inspection* inspection) { shared_.inspection = inspection; }
  // The masked credentials (proxy/secrets/); before start(), outlives the workers.
  void use_secrets(const secrets::MaskedSecrets* secrets) { shared_.secrets = secrets; }
  // The ledger of egress budgets (proxy/budget/); before start(), outlives the workers.
  void use_budgets(budget::Ledger* budgets) { shared_.budgets = budgets; }
  // The gate's tally of MCP calls (for /metrics); before start().
  void use_mcp_calls(mcp::CallTally* calls) { shared_.mcp_calls = calls; }

  // Called on SIGHUP, on the control thread: reload the files and reopen the log.
  std::function<void()> on_hangup;

  // What the gate listens on, once bound: "127.0.0.1:9877", "[::1]:9877" or "unix:/path".
  std::string listen_text() const;

  std::uint32_t open_connections() const;
  // Every worker's counters, for the admin endpoint (read-only from other threads).
  std::vector<const metrics::WorkerMetrics*> worker_metrics() const;
  // True once bind() or adopt_listener() succeeded and until the drain starts. Thread-safe.
  bool accepting() const { return accepting_.load(); }
  // The policy most recently published (or the initial one). Thread-safe.
  std::shared_ptr<const rules::Policy> current_policy() const;

 private:
  void drain_step();
  Expected<boost::asio::ip::tcp::endpoint, std::string> prepare_workers(int listening_fd);
  Expected<boost::asio::ip::tcp::endpoint, std::string> hand_to_workers(
      boost::asio::ip::tcp::acceptor& listener);
  Expected<int, std::string> bind_unix_socket(const std::string& path);

  const settings::Settings& settings_;
  log::DecisionLog& log_;
  session::SharedState shared_;
  // The settings the workers start with (a reload posts newer ones to each).
  std::shared_ptr<const settings::Settings> worker_settings_;
  boost::asio::io_context control_{1};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  boost::asio::ip::tcp::endpoint endpoint_;
  // A unix socket listener: its path, and its inode, so that only our own socket is removed
  // when the server is destroyed. Empty path: listening on TCP.
  bool unix_listener_ = false;  // the listening socket is AF_UNIX (bound here or handed over)
  std::string unix_path_;
  dev_t unix_device_ = 0;
  ino_t unix_inode_ = 0;
  bool draining_ = false;
  std::atomic<bool> accepting_{false};
  std::chrono::steady_clock::time_point drain_deadline_;
  bool force_closed_ = false;
  std::unique_ptr<boost::asio::steady_timer> drain_timer_;
  // Guards latest_policy_ and worker_settings_; taken on publish, not per connection.
  mutable std::mutex policy_mutex_;
  std::shared_ptr<const rules::Policy> latest_policy_;
  // The run's synthetic addresses, when capture is served; outlives the workers' sessions.
  std::unique_ptr<capture::AddressBook> capture_book_;
};

}  // namespace sandgate::server
