// Per-connection state. See session_context.hpp.
#include "proxy/session/session_context.hpp"

namespace sandgate::session {

SessionContext::SessionContext(server::Worker& w, boost::asio::ip::tcp::socket socket)
    : worker(w),
      client(std::move(socket)),
      upstream(client.get_executor()),
      id(w.shared.next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      policy(w.policy) {
  boost::system::error_code ec;
  auto peer = client.remote_endpoint(ec);
  client_address = ec ? std::string("unknown") : to_text(peer);
  live.client = &client;
  live.upstream = &upstream;
  worker.attach(live);
}

SessionContext::~SessionContext() {
  worker.detach(live);
  worker.shared.open_connections.fetch_sub(1, std::memory_order_relaxed);
}

double SessionContext::elapsed_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
      .count();
}

std::string to_text(const boost::asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string text = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return text + ":" + std::to_string(endpoint.port());
}

}  // namespace sandgate::session
