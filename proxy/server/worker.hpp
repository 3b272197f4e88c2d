// A worker: one thread, one io_context, one duplicate of the listening socket, and the
// per-thread state sessions use (session::WorkerContext: policy and settings snapshots,
// resolver, pipes, counters, live connections), owned per thread so that no lock is taken per
// connection. Sessions see only the WorkerContext part: they depend on nothing in server/.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "proxy/session/worker_context.hpp"

namespace sandgate::server {

// The worker's event loop, a base class of its own so that it is made before, and destroyed
// after, the WorkerContext whose resolver and sockets live on it.
struct WorkerLoop {
  boost::asio::io_context io{1};  // run by exactly one thread
};

class Worker : public WorkerLoop, public session::WorkerContext {
 public:
  Worker(session::SharedState& shared, std::shared_ptr<const settings::Settings> settings,
         std::shared_ptr<const rules::Policy> policy)
      : session::WorkerContext(shared, std::move(settings), std::move(policy)) {}

  std::optional<boost::asio::ip::tcp::acceptor> acceptor;  // this worker's listener duplicate
  // Capture (`run` on Linux): this worker's duplicates of the capture listeners, and on the
  // first worker only, the DNS sockets. Closed by the drain like the listener.
  std::vector<boost::asio::ip::tcp::acceptor> capture_acceptors;
  std::vector<boost::asio::ip::udp::socket> dns_udp;
  std::vector<boost::asio::ip::tcp::acceptor> dns_tcp;
};

}  // namespace sandgate::server
