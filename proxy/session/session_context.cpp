// Per-connection state. See session_context.hpp.
#include "proxy/session/session_context.hpp"

#include "proxy/session/h2_origin.hpp"
#include "proxy/session/origin_pool.hpp"

namespace sandgate::session {
SessionContext::SessionContext(WorkerContext& w, boost::asio::ip::tcp::socket socket,
                               std::string address)
    : worker(w),
      client(std::move(socket)),
      upstream(client.get_executor()),
      id(w.shared.next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      client_address(std::move(address)),
      settings_snapshot(w.settings) {
  if (client_address.empty()) {
    boost::system::error_code ec;
    auto peer = client.remote_endpoint(ec);
    client_address = ec ? std::string("unknown") : to_text(peer);
  }
  live.client = &client;
  live.upstream = &upstream;
  live.upstream_stream = &upstream_stream;
  live.connection_id = id;
  live.client_address = client_address;
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

void SessionContext::record_decision(log::Record record, rules::Reason reason, bool enforced) {
  const rules::ReasonInfo& row = rules::reason_info(reason);
  const bool would = !enforced && row.verdict == rules::Verdict::deny;
  record.event = log::Record::Event::decision;
  record.verdict = would ? rules::kWouldDeny : rules::verdict_name(row.verdict);
  record.reason = row.code;
  log().write(record);
  auto& metrics = worker.metrics;
  metrics.count_decision(row.verdict, reason, !would);
  if (row.verdict != rules::Verdict::allow) {
    remember_denial(metrics, record);
  }
}

void SessionContext::record_end(const log::Record& end) {
  log().write(end);
  worker.metrics.bytes_up.add(end.bytes_up);
  worker.metrics.bytes_down.add(end.bytes_down);
}

void SessionContext::record_internal_error(std::string_view what) {
  boost::system::error_code ignored;
  client.close(ignored);
  upstream.close(ignored);
  const std::string detail = "the connection was ended by an internal error: " +
                             std::string(what.empty() ? "unknown" : what) + ".";
  record_end_without_request(rules::Reason::internal_error, "error", detail);
}

std::optional<Revocation> SessionContext::register_destination(DecisionState& decided,
                                                               Destination destination) {
  if (decided.settings().revoke_on_reload && !decided.current(worker)) {
    if (auto revocation = judge_again(*worker.policy, destination)) {
      const rules::Reason reason = revocation_reason(*revocation);
      if (!decided.reports(reason)) {
        return revocation;
      }
      // Report-only mode: the request goes on, its decision line says would-deny.
      decided.keep_reported(reason, std::move(revocation->rule), std::move(revocation->detail));
    }
  }
  live.destination = std::move(destination);
  return std::nullopt;
}

bool SessionContext::still_wanted(std::string_view method, std::string_view host,
                                  std::uint16_t port) {
  if (stopping()) {
    record_shutting_down(method, host, port);
    return false;
  }
  if (live.revoked) {
    boost::system::error_code ignored;
    client.close(ignored);
    upstream.close(ignored);
    record_revoked(method, 0, 0);
    return false;
  }
  return true;
}

void SessionContext::record_no_request(bool partial) {
  rules::Reason reason = partial ? rules::Reason::client_closed : rules::Reason::no_request;
  std::string_view detail =
      partial ? "the client closed the connection in the middle of a request head."
              : "the client closed the connection without sending a request.";
  if (stopping()) {
    reason = rules::Reason::shutting_down;
    detail = "the gate is shutting down; the connection was closed before a request arrived.";
  }
  record_end_without_request(reason, "closed", detail);
}

void SessionContext::record_end_without_request(rules::Reason reason, std::string_view outcome,
                                                std::string_view detail) {
  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = id;
  end.client = client_address;
  end.method = "-";
  end.host = "-";
  end.verdict = rules::verdict_name(rules::reason_info(reason).verdict);
  end.reason = rules::reason_code(reason);
  end.outcome = outcome;
  end.detail = detail;
  end.duration_ms = elapsed_ms();
  log().write(end);
  worker.metrics.count_decision(rules::reason_info(reason).verdict, reason);
}

void SessionContext::record_shutting_down(std::string_view method, std::string_view host,
                                          std::uint16_t port, bool close) {
  if (close) {
    boost::system::error_code ignored;
    client.close(ignored);
    upstream.close(ignored);
  }
  log::Record record;
  record.connection_id = id;
  record.client = client_address;
  record.method = method;
  record.host = host;
  record.port = port;
  record.detail = "the gate is shutting down; the connection was closed before it was set up.";
  record_decision(record, rules::Reason::shutting_down);
}

void SessionContext::record_revoked(std::string_view method, std::uint64_t bytes_up,
                                    std::uint64_t bytes_down) {
  const Revocation& why = *live.revoked;
  const std::string host = live.destination ? live.destination->host.display() : "-";
  const std::uint16_t port = live.destination ? live.destination->port : 0;
  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = id;
  end.client = client_address;
  end.method = method;
  end.host = host;
  end.port = port;
  end.rule = why.rule;
  end.detail = why.detail;
  end.outcome = "revoked";
  end.bytes_up = bytes_up;
  end.bytes_down = bytes_down;
  end.duration_ms = elapsed_ms();
  record_late_denial(worker, end, revocation_reason(why));
}

std::string to_text(const boost::asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string text = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return text + ":" + std::to_string(endpoint.port());
}

}  // namespace sandgate::session
