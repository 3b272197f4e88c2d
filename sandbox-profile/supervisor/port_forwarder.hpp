// Linux `run`: the localhost ports that --allow-localhost-port and --allow-inbound-port open
// through the network namespace. Inside it, loopback is the namespace's own, so the host's
// services and the command's servers cannot see each other; the forwarder joins them port by
// port and nothing else:
//   outbound N: the confined child listens on its 127.0.0.1:N and hands the socket over; each
//               connection is relayed to the host's 127.0.0.1:N (a local database, say);
//   inbound N:  the host's 127.0.0.1:N is listened on here; each connection is relayed to the
//               command's server on 127.0.0.1:N inside, through a socket that a small connector
//               process left in the namespace makes on request (a process outside cannot create
//               sockets in that namespace without privileges: linux/inbound_connector.hpp).
//
// The relay keeps the gate's contract for a tunnel: bytes pass unchanged and in order; an end of
// stream is passed on as a half-close (the other direction goes on); a reset, or an error on
// either side, is passed on as a reset to the other side, never as a clean end; when nothing
// listens on the far side the client is reset, as a direct connection would be. Each direction
// holds at most 64 KiB: a side that does not read stops the other from being read. One thread
// serves every listener and connection (non-blocking sockets, one poll loop: a connect under
// way, or a connector the command stops, waits without holding anyone else, and gives up after
// kConnectTimeout with a reset), at most kMaxConnections at once (beyond, a new client is
// reset). Thread-safe; stop() ends everything.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

class PortForwarder {
 public:
  static constexpr std::size_t kMaxConnections = 1024;
  static constexpr std::size_t kMaxWaiting = 64;  // inbound clients waiting for the connector
  static constexpr std::size_t kDirectionBuffer = 64 * 1024;
  static constexpr std::chrono::seconds kConnectTimeout{10};

  // `connect_timeout`: how long a connect (or the connector's answer) may take.
  explicit PortForwarder(std::chrono::milliseconds connect_timeout = kConnectTimeout);
  ~PortForwarder();  // stop()s
  PortForwarder(const PortForwarder&) = delete;
  PortForwarder& operator=(const PortForwarder&) = delete;

  // Relays connections accepted on `listener` (inside the namespace, port `port`) to the host's
  // 127.0.0.1:`port`. Takes ownership of `listener`.
  void forward_outbound(int listener, std::uint16_t port);

  // Listens on the host's 127.0.0.1:`port` and relays each connection to the command's
  // 127.0.0.1:`port` through the connector at the other end of `connector` (shared by all
  // inbound ports; taken ownership of on first use). The error says why the port cannot be used.
  Expected<bool, std::string> forward_inbound(std::uint16_t port, int connector);

  // Closes the listeners and every relayed connection, and joins the thread. Idempotent.
  void stop();

  // Connections being relayed now (for tests and the summary).
  std::size_t open_connections() const { return open_.load(std::memory_order_relaxed); }

 private:
  struct Listener {
    int fd;
    std::uint16_t port;
    bool inbound;
    std::chrono::steady_clock::time_point paused_until;  // out of descriptors: accept later
  };
  struct Connection;
  struct Waiting;
  struct Loop;  // what the loop's thread serves: listeners, connections, waiting clients

  void add(Listener listener);
  void run();
  // One turn of the loop, in order: takes the listeners added since (false once stopped), fills
  // the poll set and returns the wait (to the next deadline; -1: none), drains the wake pipe,
  // serves what poll() reported, and closes everything when stopped.
  bool take_pending(Loop& loop);
  int fill_poll_set(Loop& loop);
  void drain_wake_pipe(const Loop& loop);
  void serve_ready(Loop& loop);
  void close_all(Loop& loop);
  void accept_all(Listener& listener, std::vector<Connection>& connections,
                  std::vector<Waiting>& waiting);
  void start_outbound(int client, std::uint16_t port, std::vector<Connection>& connections);
  void start_inbound(int client, std::uint16_t port, std::vector<Waiting>& waiting);
  // The connector's answers that have arrived: each waiting client gets its socket or a reset.
  void take_answers(std::vector<Connection>& connections, std::vector<Waiting>& waiting);
  int connector();

  int wake_pipe_[2] = {-1, -1};  // written by add() and stop()
  std::mutex mutex_;             // guards pending_, connector_ and stopped_
  std::vector<Listener> pending_;
  int connector_ = -1;
  bool stopped_ = false;
  std::thread thread_;         // started by the first add()
  std::uint64_t next_id_ = 1;  // the connector's requests, on the loop's thread
  std::chrono::milliseconds connect_timeout_;
  std::atomic<std::size_t> open_{0};
};

}  // namespace sandgate::sandbox
