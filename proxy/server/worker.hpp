// A worker: one thread, one io_context, one listener (SO_REUSEPORT), and everything a session
// needs on its path, owned per thread so that no lock is taken per connection.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <optional>

#include "proxy/dns/resolver.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/metrics/metrics.hpp"
#include "proxy/relay/relay.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/policy.hpp"

namespace sandgate::launchdarkly {
class RemoteAllowlist;
}

namespace sandgate::server {

// What all workers share: immutable settings, the log, the LaunchDarkly client, two counters.
struct SharedState {
  const settings::Settings& settings;
  log::DecisionLog& log;
  // Set before the workers start when LAUNCHDARKLY_CLIENT_ID is given; outlives them.
  launchdarkly::RemoteAllowlist* remote_allowlist = nullptr;
  std::atomic<std::uint32_t> open_connections{0};
  std::atomic<std::uint64_t> next_connection_id{1};
};

// A connection the worker can reach from outside its coroutine, to close it at the drain
// deadline. Registered for the lifetime of a session; the list is touched only on the worker's
// own thread.
struct LiveConnection {
  boost::asio::ip::tcp::socket* client = nullptr;
  boost::asio::ip::tcp::socket* upstream = nullptr;
  LiveConnection* prev = nullptr;
  LiveConnection* next = nullptr;
};

class Worker {
 public:
  Worker(SharedState& shared, std::shared_ptr<const rules::Policy> policy);

  boost::asio::io_context io{1};  // run by exactly one thread
  SharedState& shared;
  // The policy snapshot this worker decides with. Replaced (on this thread) by a posted
  // update on reload; sessions copy the pointer once, so a decision never sees two snapshots.
  std::shared_ptr<const rules::Policy> policy;
  std::unique_ptr<dns::Resolver> resolver;
  relay::PipePool pipes;
  metrics::WorkerMetrics metrics;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;

  void attach(LiveConnection& connection);
  void detach(LiveConnection& connection);
  // Closes every live connection's sockets (drain deadline). Worker thread only.
  void close_all();
  std::size_t live_count() const { return live_count_; }

 private:
  LiveConnection* live_ = nullptr;
  std::size_t live_count_ = 0;
};

}  // namespace sandgate::server
