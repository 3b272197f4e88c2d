// An established tunnel or WebSocket connection. See tunnel_session.hpp.
#include "proxy/session/tunnel_session.hpp"

#include "proxy/ask/question_board.hpp"
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/fault_injection.hpp"

namespace sandgate::session {

void TunnelSession::start(SessionContext& context, std::string host, Destination destination,
                          std::uint64_t early_bytes,
                          std::optional<rules::SshIdentificationWatch> ssh_watch,
                          std::string method, std::uint64_t early_down) {
  const auto started = context.started;
  auto* session = new TunnelSession(context, Kind::connect, std::move(method), std::move(host),
                                    std::move(destination), early_bytes, early_down, started);
  if (ssh_watch) {
    session->ssh_watch_ = *ssh_watch;
    session->relay_.watch_first_bytes([session](std::string_view bytes, bool end) {
      return session->judge_first_bytes(bytes, end);
    });
  }
  session->start_relay();
}

void TunnelSession::start_websocket(SessionContext& context, std::string method, std::string host,
                                    Destination destination, std::uint64_t bytes_up,
                                    std::uint64_t bytes_down,
                                    std::chrono::steady_clock::time_point request_started) {
  auto* session = new TunnelSession(context, Kind::websocket, std::move(method), std::move(host),
                                    std::move(destination), bytes_up, bytes_down, request_started);
  session->start_relay();
}

void TunnelSession::start_relay() {
  if (worker_.shared.budgets != nullptr) {
    relay_.limit_bytes(this);
    // What a parent proxy sent behind its reply head went to the client before the relay:
    // counted whatever is left (the relay's first read stops if that spent it). The client's
    // early bytes were taken before they were sent (open_tunnel.cpp), and a WebSocket's by its
    // exchange.
    budget::DestinationBudgets& budgets = this->budgets();
    if (!budgets.empty() && kind_ == Kind::connect) {
      budgets.charge(rules::BudgetKind::down, early_down_);
    }
  }
  relay_.start();
}

budget::DestinationBudgets& TunnelSession::budgets() {
  const auto& rules = worker_.policy->shared_budgets();
  if (budgets_.made_from() != rules.get()) {
    const Destination& destination = *live_.destination;
    budgets_ = budget::DestinationBudgets(*worker_.shared.budgets, rules, destination.host,
                                          destination.port, destination.address,
                                          destination.tls_name.get());
  }
  return budgets_;
}

std::size_t TunnelSession::reserve(bool upward, std::size_t wanted) {
  budget::DestinationBudgets& budgets = this->budgets();
  if (budgets.empty() || !worker_.settings->enforce) {
    return wanted;  // report-only mode counts what moved, in settle()
  }
  const auto kind = upward ? rules::BudgetKind::up : rules::BudgetKind::down;
  const std::uint64_t granted = budgets.reserve(kind, wanted);
  if (granted == 0 && !stop_) {
    stop_ = std::make_unique<const budget::Stop>(budgets.stop(kind));
  }
  return static_cast<std::size_t>(granted);
}

bool TunnelSession::hold(bool upward, std::function<void(bool go_on)> resume) {
  ask::QuestionBoard* board = worker_.shared.questions;
  if (board == nullptr || worker_.policy->options().unknown != rules::UnknownMode::ask || !stop_ ||
      !stop_->account) {
    return false;
  }
  (void)upward;
  ask::RequestQuestion question = budget_question(*stop_);
  // Applied once for the question, however many tunnels wait on it (ask::Grant).
  question.grant = [account = stop_->account, amount = stop_->amount] { account->grant(amount); };
  auto waiter = board->ask(host_, port_, client_.get_executor(), &question);
  asking_ = std::make_unique<boost::asio::steady_timer>(client_.get_executor());
  asking_->expires_after(waiter->result
                             ? std::chrono::steady_clock::duration::zero()
                             : std::chrono::steady_clock::duration(worker_.settings->ask_timeout));
  waiter->wake = asking_.get();
  asking_->async_wait([this, board, waiter,
                       resume = std::move(resume)](boost::system::error_code) mutable {
    waiter->wake = nullptr;
    const bool timed_out = !waiter->result;
    if (timed_out) {
      board->leave(waiter, true);
    }
    // A person's allow, or the ask default of allow when nobody answered in time.
    const bool allowed =
        waiter->result ? waiter->result->outcome == ask::Outcome::allowed
                       : (timed_out && worker_.settings->ask_default_allow && !worker_.stopping);
    if (allowed) {
      if (waiter->grant) {
        waiter->grant->apply_once();
      }
      stop_.reset();  // the next spent limit makes its own
    } else {
      const std::string note = waiter->result && waiter->result->outcome == ask::Outcome::denied
                                   ? " A person refused more."
                                   : " Nobody allowed more in time.";
      stop_ = std::make_unique<const budget::Stop>(budget::Stop{
          stop_->rule, stop_->sentence + note, stop_->question, stop_->account, stop_->amount});
    }
    asking_.reset();  // this handler's own timer: nothing of it is touched after this line
    resume(allowed);
  });
  return true;
}

void TunnelSession::settle(bool upward, std::size_t reserved, std::size_t moved) {
  if (budgets_.empty()) {
    return;
  }
  const auto kind = upward ? rules::BudgetKind::up : rules::BudgetKind::down;
  if (worker_.settings->enforce) {
    budgets_.settle(kind, reserved, moved);
    return;
  }
  auto over = budgets_.charge(kind, moved);
  if (over && !stop_reported_) {
    // Report-only mode: the tunnel goes on; its budget's end is logged once, as would-deny.
    stop_reported_ = true;
    log::Record line = record();
    line.rule = over->rule;
    line.detail = over->sentence;
    record_late_denial(worker_, line, rules::Reason::budget_exhausted, false);
  }
}

TunnelSession::TunnelSession(SessionContext& context, Kind kind, std::string method,
                             std::string host, Destination destination, std::uint64_t early_up,
                             std::uint64_t early_down,
                             std::chrono::steady_clock::time_point started)
    : worker_(context.worker),
      kind_(kind),
      client_(std::move(context.client)),
      upstream_(std::move(context.upstream)),
      id_(context.id),
      client_address_(std::move(context.client_address)),
      method_(std::move(method)),
      host_(std::move(host)),
      port_(destination.port),
      early_up_(early_up),
      early_down_(early_down),
      connection_started_(context.started),
      started_(started),
      relay_(client_, upstream_, context.worker.pipes, context.worker.idle_sweep,
             context.settings().idle_timeout, [this](relay::Result result) { on_done(result); }) {
  context.handed_off = true;  // the connection's count and registration move here
  live_.client = &client_;
  live_.upstream = &upstream_;
  live_.connection_id = id_;
  live_.client_address = client_address_;
  // A connection already reported as one a reload would close is not reported again.
  live_.would_revoke_logged = context.live.would_revoke_logged;
  live_.destination = std::move(destination);
  worker_.attach(live_);
  if (kind_ == Kind::connect) {
    worker_.metrics.tunnels_open_total.add();
  }
}

TunnelSession::~TunnelSession() {
  worker_.detach(live_);
  worker_.shared.open_connections.fetch_sub(1, std::memory_order_relaxed);
}

log::Record TunnelSession::record() const {
  log::Record line;
  line.connection_id = id_;
  line.client = client_address_;
  line.method = method_;
  line.host = host_;
  line.port = port_;
  return line;
}

// The client's bytes, on a port whose tunnels are not inspected for TLS: an SSH client is held
// to the SSH rules wherever its identification appears within what a tolerant server reads
// (rules/ssh_identification.hpp). Decided with the worker's policy now in force.
relay::FirstBytesLook TunnelSession::judge_first_bytes(std::string_view bytes, bool end) {
  fault_point("tunnel-relay");
  using Verdict = rules::SshIdentificationWatch::Verdict;
  Verdict verdict = ssh_watch_.feed(bytes);
  if (verdict == Verdict::undecided && end) {
    verdict = ssh_watch_.finish();
  }
  if (verdict == Verdict::not_ssh) {
    return {relay::FirstBytesVerdict::pass, 0};
  }
  if (verdict == Verdict::undecided) {
    return {relay::FirstBytesVerdict::watch, ssh_watch_.hold()};
  }
  // SSH (or a client that stopped on a prefix of it: the stricter reading).
  const Destination& destination = *live_.destination;
  const rules::Policy& policy = *worker_.policy;
  const rules::Decision decision = policy.decide_ssh(destination.host);
  if (decision.allowed()) {
    live_.destination->ssh = true;  // a reload judges it by the SSH rules from now on
    return {relay::FirstBytesVerdict::pass, 0};
  }
  if (!worker_.settings->enforce && rules::reportable(decision.reason)) {
    // Report-only mode: logged and counted as would-deny, and the bytes pass.
    log::Record line = record();
    const std::string rule = rules::rule_text(decision);
    const std::string detail = policy.explain(decision, destination.host, destination.port);
    line.rule = rule;
    line.detail = detail;
    record_late_denial(worker_, line, decision.reason, false);
    live_.destination->ssh = true;
    return {relay::FirstBytesVerdict::pass, 0};
  }
  refused_ = std::make_unique<const Refusal>(
      Refusal{decision.reason, rules::rule_text(decision),
              policy.explain(decision, destination.host, destination.port)});
  return {relay::FirstBytesVerdict::refuse, 0};
}

void TunnelSession::log_end(std::string_view outcome, const relay::Result& result) {
  log::Record end = record();
  end.event = log::Record::Event::end;
  end.outcome = outcome;
  end.bytes_up = result.bytes_up;
  end.bytes_down = result.bytes_down;
  const auto now = std::chrono::steady_clock::now();
  end.duration_ms = std::chrono::duration<double, std::milli>(now - started_).count();
  const Revocation* why = live_.revoked.get();
  if (why != nullptr) {
    // As any connection a reload closed: its duration is the connection's.
    end.duration_ms = std::chrono::duration<double, std::milli>(now - connection_started_).count();
    end.rule = why->rule;
    end.detail = why->detail;
    record_late_denial(worker_, end, revocation_reason(*why));
    return;
  }
  // An end line repeats the verdict of what decided the tunnel's fate.
  auto set_reason = [&end](rules::Reason reason) {
    end.verdict = rules::verdict_name(rules::reason_info(reason).verdict);
    end.reason = rules::reason_code(reason);
  };
  if (kind_ == Kind::websocket) {
    // A plain request's end line: the request was allowed, as its decision line said.
    end.verdict = rules::verdict_name(rules::Verdict::allow);
  }
  if (refused_) {
    set_reason(refused_->reason);  // after the deny line of the refused first bytes
  }
  if (result.outcome == relay::Outcome::budget_exhausted && stop_) {
    // Cut where a budget ended: the end line is the denial, counted as one.
    end.rule = stop_->rule;
    end.detail = stop_->sentence;
    record_late_denial(worker_, end, rules::Reason::budget_exhausted);
    return;
  }
  if (result.outcome == relay::Outcome::internal_error) {
    constexpr rules::Reason reason = rules::Reason::internal_error;
    set_reason(reason);
    end.detail = "the tunnel was ended by an internal error.";
    worker_.metrics.count_decision(rules::reason_info(reason).verdict, reason);
  }
  worker_.metrics.bytes_up.add(result.bytes_up);
  worker_.metrics.bytes_down.add(result.bytes_down);
  worker_.shared.log.write(end);
}

void TunnelSession::on_done(relay::Result result) {
  boost::system::error_code ignored;
  client_.close(ignored);
  upstream_.close(ignored);
  result.bytes_up += early_up_;
  result.bytes_down += early_down_;
  if (kind_ == Kind::connect) {
    worker_.metrics.tunnels_closed_total.add();
  }

  if (refused_) {
    // The client's first bytes were SSH to a host the SSH rules refuse: a decision of its own.
    log::Record denied = record();
    denied.rule = refused_->rule;
    denied.detail = refused_->detail;
    // Counted and kept in /denials like any denial.
    record_late_denial(worker_, denied, refused_->reason);
  }
  log_end(live_.revoked ? "revoked" : relay::to_string(result.outcome), result);
  delete this;
}

}  // namespace sandgate::session
