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
  if (!handed_off) {
    worker.shared.open_connections.fetch_sub(1, std::memory_order_relaxed);
  }
}

double SessionContext::elapsed_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
      .count();
}

void SessionContext::record(const log::Record& record) {
  log().write(record);
  auto& metrics = worker.metrics;
  if (record.event == log::Record::Event::end) {
    metrics.bytes_up.add(record.bytes_up);
    metrics.bytes_down.add(record.bytes_down);
    return;
  }
  metrics.count_decision(record.verdict, record.reason);
  if (record.verdict != "allow") {
    metrics::Denial denial;
    denial.unix_millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    denial.connection_id = record.connection_id;
    denial.client = std::string(record.client);
    denial.method = std::string(record.method);
    denial.host = std::string(record.host);
    denial.port = record.port;
    denial.reason = std::string(record.reason);
    denial.rule = std::string(record.rule);
    denial.detail = std::string(record.detail);
    metrics.record_denial(std::move(denial));
  }
}

std::string to_text(const boost::asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string text = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return text + ":" + std::to_string(endpoint.port());
}

}  // namespace sandgate::session
