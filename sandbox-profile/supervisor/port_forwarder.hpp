// Linux `run`: the localhost ports that --allow-localhost-port and --allow-inbound-port open
// through the network namespace. Inside it, loopback is the namespace's own, so the host's
// services and the command's servers cannot see each other; the forwarder joins them port by
// port and nothing else:
//   outbound N: the confined child listens on its 127.0.0.1:N and hands the socket over; each
//               connection is relayed to the host's 127.0.0.1:N (a local database, say);
//   inbound N:  the host's 127.0.0.1:N is listened on here; each connection is relayed to the
//               command's server on 127.0.0.1:N inside, through a socket that a small connector
//               process left in the namespace makes on request (a process outside cannot create
//               sockets in that namespace without privileges).
//
// Plain blocking sockets, one thread per listener and per connection: a handful of local
// connections, not the gate's data plane. Thread-safe; stop() ends everything.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// The child's side of an inbound connection: connects to 127.0.0.1:`port` in the child's network
// namespace when asked over `channel`, and sends the connected socket back. Runs until the
// channel closes; for a process forked inside the namespace.
[[noreturn]] void run_connector(int channel);

class PortForwarder {
 public:
  PortForwarder();
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

  // Closes the listeners and every relayed connection, and joins the threads. Idempotent.
  void stop();

 private:
  void accept_loop(int listener, std::uint16_t port, bool inbound);
  void relay(int a, int b);
  int connect_inside(std::uint16_t port);
  void spawn(std::thread thread);

  int stop_pipe_[2] = {-1, -1};  // readable once stop() begins
  std::mutex mutex_;             // guards threads_, sockets_ and the connector
  std::vector<std::thread> threads_;
  std::vector<int> sockets_;  // listeners and relayed sockets, closed by stop()
  int connector_ = -1;
  bool stopped_ = false;
};

}  // namespace sandgate::sandbox
