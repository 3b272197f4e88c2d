// What one request is decided with, and what deciding it keeps: made when the request arrives
// (an HTTP/1.1 request, a CONNECT or SOCKS5 tunnel, a captured connection, one HTTP/2 stream)
// and handed to every stage that decides it (admission.hpp, exchange/request_admission.hpp, the
// budget and MCP stages, a wait on a question). Never kept on the connection: the streams of one
// HTTP/2 connection are decided at once, each with its own, and a stage never reads another
// request's rules or report-only denial back from state the connection shares.
//
// Worker thread only, as the session that owns it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "proxy/session/worker_context.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/host.hpp"
#include "rules/policy.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

// Report-only mode (SANDGATE_ENFORCE=false): a policy denial that was logged and let through.
// A request keeps the first one it met; its decision line is then `would-deny` with it.
struct Reported {
  rules::Reason reason = rules::Reason::allowed;
  std::string rule;
  std::string sentence;
};

// How a wait learns that its request's client is gone when the client is one stream of a
// connection (HTTP/2): the connection's socket carries the other streams too, so the front says
// so (gone()) when the client resets the stream or the connection ends, which wakes the wait in
// progress. A request with a connection of its own has none: its waits watch the socket.
class StreamDeparture {
 public:
  StreamDeparture() = default;
  StreamDeparture(const StreamDeparture&) = delete;
  StreamDeparture& operator=(const StreamDeparture&) = delete;

  bool left() const { return left_; }
  // Whether the client reset the stream (else its connection ended).
  bool reset() const { return reset_; }
  // The stream is over for the client (`reset`: by its RST_STREAM): the wait in progress (if
  // any) wakes and sees left().
  void gone(bool reset) {
    if (!left_) {
      reset_ = reset;
    }
    left_ = true;
    if (waiting_ != nullptr) {
      waiting_->cancel();
    }
  }
  // The timer a wait sleeps on while it runs; null when it ends (ask_wait.cpp).
  void watch(boost::asio::steady_timer* waiting) { waiting_ = waiting; }

 private:
  bool left_ = false;
  bool reset_ = false;
  boost::asio::steady_timer* waiting_ = nullptr;
};

class DecisionState {
 public:
  // A request arriving now: the worker's current policy, and `settings`, those its head was
  // read and admitted under (the connection's for a request with a connection of its own, which
  // took them when the head arrived: the token that admitted it and the settings its steps are
  // decided with are the same; the worker's current ones for an HTTP/2 stream, whose head
  // arrives now).
  DecisionState(const WorkerContext& worker, std::shared_ptr<const settings::Settings> settings);

  // The rules the request is decided with.
  const rules::Policy& policy() const { return *policy_; }
  const std::shared_ptr<const rules::Policy>& policy_snapshot() const { return policy_; }
  // The settings the request is decided with (report-only mode, the ask timeout and default,
  // the dial's timeouts, the parent proxy, revocation on reload, ...).
  const settings::Settings& settings() const { return *settings_; }
  // Whether the worker still serves with the rules (and the settings) it is decided with: no
  // reload came since it arrived, or since it was last decided again.
  bool current(const WorkerContext& worker) const { return policy_ == worker.policy; }
  bool settings_current(const WorkerContext& worker) const { return settings_ == worker.settings; }
  // A reload came during one of its waits: it is decided again, from the start, with the rules
  // now in force; what report-only mode kept under the old ones is forgotten with them.
  void take_current_policy(const WorkerContext& worker);
  // The same request judged under other rules (a reload's, asked whether they still leave a
  // question to a person), keeping nothing of what this one reported.
  DecisionState under(std::shared_ptr<const rules::Policy> policy) const;

  // Report-only mode: true when a denial for `reason` is to be logged as would-deny and the
  // request let through (the request's settings say enforce=false and the reason is one of
  // rules::kReportableReasons).
  bool reports(rules::Reason reason) const {
    return !settings_->enforce && rules::reportable(reason);
  }
  // Report-only mode, for a denial of the policy: true when it is reported, not enforced, which
  // also needs that no rule report-only mode keeps denies host:port (Policy::enforced_anyway).
  // Then the first such denial of the request is kept (reported()).
  bool report_instead(const rules::Decision& decision, const rules::Host& host, std::uint16_t port);
  // Keeps the first reported denial of the request (report-only mode).
  void keep_reported(rules::Reason reason, std::string rule, std::string sentence);
  // The request's report-only denial, if any: its decision line is `would-deny` with it.
  const std::optional<Reported>& reported() const { return reported_; }
  // Deciding starts again (decide_admission): nothing reported yet.
  void forget_reported() { reported_.reset(); }

  // Set by the HTTP/2 front for a stream (see StreamDeparture); null for a request with a
  // connection of its own.
  StreamDeparture* stream = nullptr;
  // When the request arrived, for the duration its lines give.
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();

 private:
  std::shared_ptr<const rules::Policy> policy_;
  std::shared_ptr<const settings::Settings> settings_;
  std::optional<Reported> reported_;
};

}  // namespace sandgate::session
