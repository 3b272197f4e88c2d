// What a session needs from its worker. See worker_context.hpp.
#include "proxy/session/worker_context.hpp"

#include <chrono>

#include "proxy/session/h2_origin_pool.hpp"
#include "proxy/session/origin_pool.hpp"
#include "proxy/session/wire/byte_stream.hpp"

namespace sandgate::session {

WorkerContext::WorkerContext(SharedState& shared_state,
                             std::shared_ptr<const settings::Settings> initial_settings,
                             std::shared_ptr<const rules::Policy> initial_policy)
    : shared(shared_state),
      settings(std::move(initial_settings)),
      policy(std::move(initial_policy)),
      origins(std::make_unique<OriginPool>()),
      h2_origins(std::make_unique<H2OriginPool>()) {}

WorkerContext::~WorkerContext() = default;

void WorkerContext::forget_idle_origins() {
  origins->forget_all();
  h2_origins->forget_all();
}

void WorkerContext::close_idle_origins() {
  origins->close();
  h2_origins->close();
}

void WorkerContext::attach(LiveConnection& connection) {
  connection.prev = nullptr;
  connection.next = live_;
  if (live_ != nullptr) {
    live_->prev = &connection;
  }
  live_ = &connection;
}

void WorkerContext::detach(LiveConnection& connection) {
  if (connection.prev != nullptr) {
    connection.prev->next = connection.next;
  } else {
    live_ = connection.next;
  }
  if (connection.next != nullptr) {
    connection.next->prev = connection.prev;
  }
  connection.prev = connection.next = nullptr;
}

void WorkerContext::close_all() {
  boost::system::error_code ignored;
  for (LiveConnection* c = live_; c != nullptr; c = c->next) {
    if (c->client != nullptr) {
      c->client->close(ignored);
    }
    if (c->upstream != nullptr) {
      c->upstream->close(ignored);
    }
  }
}

std::size_t WorkerContext::apply_policy(std::shared_ptr<const rules::Policy> next, bool revoke) {
  policy = std::move(next);
  for (boost::asio::steady_timer* waiting : asking) {
    waiting->cancel();
  }
  if (!revoke) {
    return 0;
  }
  std::size_t closed = 0;
  for (LiveConnection* c = live_; c != nullptr; c = c->next) {
    if (!c->destination || c->revoked) {
      continue;
    }
    if (auto revocation = judge_again(*policy, *c->destination)) {
      const rules::Reason reason = revocation_reason(*revocation);
      if (!settings->enforce && rules::reportable(reason)) {
        report_would_revoke(*c, *revocation, reason);
        continue;
      }
      c->revoked = std::make_unique<Revocation>(std::move(*revocation));
      // Closing on this thread completes the session's pending waits as aborted; the session
      // then finds `revoked` set and logs its end as such.
      boost::system::error_code ignored;
      for (auto* socket : {c->client, c->upstream}) {
        if (socket != nullptr && socket->is_open()) {
          socket->set_option(boost::asio::socket_base::linger(true, 0), ignored);
          socket->close(ignored);
        }
      }
      if (c->upstream_stream != nullptr) {
        c->upstream_stream->cancel();  // (an exchange waiting on an HTTP/2 origin's stream)
      }
      ++closed;
    }
  }
  return closed;
}

void WorkerContext::report_would_revoke(LiveConnection& connection, const Revocation& revocation,
                                        rules::Reason reason) {
  if (connection.would_revoke_logged) {
    return;
  }
  connection.would_revoke_logged = true;
  const Destination& destination = *connection.destination;
  const std::string host = destination.host.display();
  log::Record line;
  line.connection_id = connection.connection_id;
  line.client = connection.client_address;
  line.method = "-";
  line.host = host;
  line.port = destination.port;
  line.rule = revocation.rule;
  line.detail = revocation.detail;
  record_late_denial(*this, line, reason, false);
}

SpliceBar splice_bar(const rules::Policy& policy, const rules::Host& requested,
                     const rules::Host* tls_name, std::uint16_t port) {
  const rules::RequestRules& requests = policy.requests();
  if (requests.guards(tls_name != nullptr ? *tls_name : requested, port)) {
    return SpliceBar::request_rules;
  }
  if (requested.is_ip() && tls_name == nullptr && requests.size() > 0) {
    return SpliceBar::nameless_address;
  }
  return SpliceBar::none;
}

std::string splice_bar_sentence(SpliceBar bar, const rules::Host& requested,
                                const rules::Host* tls_name, std::uint16_t port) {
  const std::string where = requested.display() + ":" + std::to_string(port);
  if (bar == SpliceBar::nameless_address) {
    return where +
           " is an address and this tunnel names no host (no TLS server name): with request "
           "rules in force the gate cannot tell whose rules its requests would meet, and it "
           "lets no tunnel carry requests unjudged. Connect to the host by its name.";
  }
  const std::string served =
      tls_name != nullptr ? tls_name->display() + ":" + std::to_string(port) : where;
  return served +
         " has request rules, and this tunnel cannot be inspected (only TLS on a TLS port is; "
         "SSH and other protocols or ports would carry requests no rule could judge): use "
         "https:// on a TLS port, or plain http:// through the proxy.";
}

std::optional<Revocation> judge_again(const rules::Policy& policy, const Destination& destination) {
  rules::Decision decision = policy.decide(destination.host, destination.port);
  if (!decision.allowed() && decision.unknown && destination.answered) {
    decision = rules::Decision{};  // a person allowed it, and still no rule decides it
  }
  if (decision.allowed() && destination.ssh) {
    decision = policy.decide_ssh(destination.host);
  }
  if (decision.allowed() && destination.address && !destination.host.is_ip()) {
    decision = policy.decide_resolved(*destination.address, destination.port);
  }
  if (decision.allowed() && destination.tls_name) {
    decision = policy.decide(*destination.tls_name, destination.port);
    if (!decision.allowed() && decision.unknown && destination.tls_name_answered) {
      decision = rules::Decision{};  // a person allowed the name, and still no rule decides it
    }
    if (!decision.allowed()) {
      Revocation revocation;
      revocation.reason = std::string(rules::reason_code(decision.reason));
      revocation.rule = rules::rule_text(decision);
      revocation.detail = "the rules in force since the last reload deny this: the TLS name " +
                          policy.explain(decision, *destination.tls_name, destination.port);
      return revocation;
    }
  }
  if (decision.allowed() && destination.spliced) {
    // Request rules are judged on requests; a tunnel the gate does not read has none to judge,
    // so one whose host has come to need them is closed, as its set-up would now refuse it.
    const rules::Host* tls_name = destination.tls_name.get();
    const SpliceBar bar = splice_bar(policy, destination.host, tls_name, destination.port);
    if (bar != SpliceBar::none) {
      Revocation revocation;
      revocation.reason = std::string(rules::reason_code(rules::Reason::not_inspectable));
      revocation.detail = "the rules in force since the last reload judge this host's requests: " +
                          splice_bar_sentence(bar, destination.host, tls_name, destination.port);
      return revocation;
    }
  }
  if (decision.allowed()) {
    return std::nullopt;
  }
  Revocation revocation;
  revocation.reason = std::string(rules::reason_code(decision.reason));
  revocation.rule = rules::rule_text(decision);
  revocation.detail = "the rules in force since the last reload deny this: " +
                      policy.explain(decision, destination.host, destination.port);
  return revocation;
}

void remember_denial(metrics::WorkerMetrics& metrics, const log::Record& record) {
  // (The verdict says whether it was enforced: `deny`, `would-deny`, `error`.)
  metrics::Denial denial;
  denial.unix_millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  denial.connection_id = record.connection_id;
  denial.client = std::string(record.client);
  denial.method = std::string(record.method);
  denial.host = std::string(record.host);
  denial.port = record.port;
  denial.verdict = std::string(record.verdict);
  denial.reason = std::string(record.reason);
  denial.rule = std::string(record.rule);
  denial.detail = std::string(record.detail);
  metrics.record_denial(std::move(denial));
}

void record_late_denial(WorkerContext& worker, log::Record line, rules::Reason reason,
                        bool enforced) {
  const rules::ReasonInfo& row = rules::reason_info(reason);
  const bool would = !enforced && row.verdict == rules::Verdict::deny;
  line.verdict = would ? rules::kWouldDeny : rules::verdict_name(row.verdict);
  line.reason = row.code;
  worker.shared.log.write(line);
  auto& metrics = worker.metrics;
  metrics.bytes_up.add(line.bytes_up);
  metrics.bytes_down.add(line.bytes_down);
  metrics.count_decision(row.verdict, reason, !would);
  remember_denial(metrics, line);
}

rules::Reason revocation_reason(const Revocation& revocation) {
  return rules::find_reason(revocation.reason).value_or(rules::Reason::internal_error);
}

}  // namespace sandgate::session
