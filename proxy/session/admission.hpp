// The one admission pipeline. Every front end (HTTP CONNECT, plain HTTP, SOCKS5, capture) turns
// its client's bytes into a destination, parsed strictly, and hands it here; what comes back is
// "admitted, with the upstream connected", "refused, with a reason", or "over" (the client left,
// the drain or a reload ended the wait; the line saying so has been written). The stages, in
// order, each decided with the rules the request carries (its DecisionState, decision_state.hpp:
// those of the request's arrival, or of a reload that came during one of its waits, which
// decides it again):
//
//   1. the policy;
//   2. a person's answer, when no rule decides and the gate asks (--unknown=ask);
//   3. LaunchDarkly, when enabled: it can only deny what the local rules allowed;
//   4. the dial: resolve, hold every address to the address rules and connect to exactly what
//      was checked; or, through a parent proxy, the parent.
//
// Report-only mode lets a denial at 1-3 through and keeps it in the request's DecisionState for
// its decision line. A front end only turns a refusal into its protocol's reply (a
// 403/502 with Proxy-Status, a SOCKS5 reply code, a closed connection) after logging it with
// record_refusal(); what happens after admission (the first bytes of a tunnel, the exchange of
// a plain request) belongs to the relay that carries it.
//
// Everything here runs on the session's worker thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/ask/question_board.hpp"
#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "proxy/parent/parent_proxy.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/session_context.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"
#include "rules/policy.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

// What the upstream connection carries, which decides how a parent proxy is used.
enum class UpstreamUse : std::uint8_t {
  tunnel,   // a byte stream to host:port; through a parent, a CONNECT to it
  request,  // plain HTTP requests; through a parent, a connection to the parent itself (the
            // requests then go to it in absolute form)
};

// Why a request was refused, as its front end replies and the log records it.
struct Refusal {
  Refusal() = default;
  Refusal(rules::Reason r, std::string s, std::string why = {}, DeniedAt where = DeniedAt::target)
      : reason(r), sentence(std::move(s)), rule(std::move(why)), at(where) {}

  rules::Reason reason = rules::Reason::internal_error;
  std::string sentence;  // the human sentence of the reply and the log's detail
  std::string rule;      // the rule that decided, `source:line: entry`; empty when none did
  DeniedAt at = DeniedAt::target;
  std::string path;  // the request's path, for the log, when the refusal is of one request
};

struct Admission {
  enum class Status : std::uint8_t { admitted, refused, over };
  Status status = Status::over;
  Refusal refusal;  // when refused

  // When admitted: what decided (the local rules, or a person) and LaunchDarkly's answer.
  rules::Decision decision;
  std::optional<launchdarkly::Answer> remote;
  // After the dial (connect_upstream): the parent proxy the upstream goes through, if any; the
  // address connected to (the parent's, through one); and, for a name dialled directly, the
  // address it resolved to, which a reload judges again.
  UpstreamUse use = UpstreamUse::tunnel;
  const parent::ParentAddress* parent = nullptr;
  boost::asio::ip::tcp::endpoint endpoint;
  std::optional<rules::IpAddress> dialled;

  bool admitted() const { return status == Status::admitted; }
  bool refused() const { return status == Status::refused; }
  // The decision line's rule, and what it should add for the operator (a LaunchDarkly failover,
  // the parent a tunnel goes through); empty when nothing.
  std::string rule() const { return rules::rule_text(decision); }
  std::string note() const;
};

// Stages 1-3: the policy, a question, LaunchDarkly. Admitted (no upstream yet), refused or over.
// A reload while it waits on a question makes `decided` take the new rules and decide again with
// them. `answered`: a person's answer about host:port already given for this request (a
// decision made again after a reload), which stands instead of a new question while the rules
// leave host:port to a person.
boost::asio::awaitable<Admission> decide_admission(
    SessionContext& context, DecisionState& decided, std::string_view method,
    const rules::Host& host, std::uint16_t port,
    std::optional<rules::Decision> answered = std::nullopt);

// Stage 4, for an admission decide_admission() admitted: connects context.upstream for `use`.
// On failure the admission becomes refused (the network failed, or an address rule refused a
// resolved address) or over. For a tunnel through a parent, `from_parent` receives the
// destination's first bytes that came behind the parent's reply head.
boost::asio::awaitable<void> connect_upstream(SessionContext& context, DecisionState& decided,
                                              Admission& admission, std::string_view method,
                                              const rules::Host& host, std::uint16_t port,
                                              UpstreamUse use,
                                              boost::beast::flat_buffer& from_parent);

// Stage 4 when an upstream is already open to host:port, instead of the dial (the one way to get
// an upstream is: keep the client connection's kept-alive one, else take an idle one from the
// worker's pool, else dial): the address it was dialled at (`dialled`, none through a parent or
// for an address) is held to the rules this request is decided with (a reload since it was
// dialled, or report-only mode's would-deny). False, with `admission` refused, when an address
// rule now refuses it.
bool keep_open_upstream(DecisionState& decided, Admission& admission, const rules::Host& host,
                        std::uint16_t port, const std::optional<rules::IpAddress>& dialled);

// Stage 5, for each HTTP request (plain, or inside an inspected connection), after the
// destination was admitted: the request rules it is `decided` with (rules/request_rules.hpp) on
// its method and origin-form target. A path with no normal form is refused as bad-request, a
// request the rules do not permit as request-denied or request-not-allowed, unless report-only
// mode lets it through (then kept in `decided`). `rule` is the line that allowed it, for the log.
struct RequestJudgement {
  std::optional<Refusal> refusal;
  std::string rule;
  // Set with a request-not-allowed refusal (no line of the host's group decides it): what
  // --unknown=ask asks a person about it.
  std::optional<ask::RequestQuestion> question;
};
// What the request rules read of a request, as the front end parsed it.
struct RequestToJudge {
  std::string_view method;
  std::string_view origin_form;
  std::string_view content_type;  // git's fetch is told by it (rules::classify_git)
  // X-HTTP-Method-Override, X-HTTP-Method or X-Method-Override: origins that honour one act on
  // the request as that method, so it is judged as that method too (both must be allowed).
  // Empty when none.
  std::string_view method_override;
  // Why the request cannot be judged (refused 400): overrides that disagree or are not a single
  // method, two Content-Type fields. Empty when none.
  std::string_view problem;
};
RequestJudgement judge_request(DecisionState& decided, const rules::Host& host, std::uint16_t port,
                               const RequestToJudge& request);

// One connection or request to host:port, counted against the egress budgets in force
// (rules/budgets.hpp; those it is `decided` with, the gate's ledger): every limit whose entry
// matches the name the client asked for and, for a name, the address it was dialled at (`dialled`),
// so that an address's entry counts the connections and requests made by name too. It is counted
// once the address is known, after the dial, and before any byte moves; check_budgets_before_dial
// refuses earlier, dialling nothing, what the name's own limits already refuse.
//
// When a limit of `kind` is spent (or an up or down limit of the destination has nothing left):
// under --unknown=ask a person is asked for more (ask_for_more); otherwise, or when they refuse,
// the refusal (budget-exhausted), and nothing is counted. Report-only mode counts it anyway and
// keeps the denial in `decided`. `over`: the request ended while a person was asked (its
// line written).
struct BudgetCheck {
  std::optional<Refusal> refusal;
  bool over = false;

  // Makes `admission` over or refused as this check says; true when it is still admitted.
  bool apply_to(Admission& admission);
};
// `tls_name`: the name a tunnel to an address gave in its ClientHello, learnt after host and
// the address were counted: only the limits it adds count (and may refuse) the connection now.
boost::asio::awaitable<BudgetCheck> count_against_budgets(
    SessionContext& context, DecisionState& decided, std::string_view method,
    rules::BudgetKind kind, const rules::Host& host, std::uint16_t port,
    std::optional<rules::IpAddress> dialled, const rules::Host* tls_name = nullptr);
// Before the dial, when only the name is known: the same refusal (or question) when a limit the
// name matches is spent; nothing is counted (count_against_budgets does, after the dial).
boost::asio::awaitable<BudgetCheck> check_budgets_before_dial(
    SessionContext& context, DecisionState& decided, std::string_view method,
    rules::BudgetKind kind, const rules::Host& host, std::uint16_t port);

// The path a log line names for an origin-form target: the path without its query (a query
// may carry a token), or "*".
std::string_view logged_path(std::string_view origin_form);

// The decision line of a refused request, counted like every decision: `method` is the front
// end's ("CONNECT", "SOCKS5", "GET", ...), host "-" when none is known yet.
void record_refusal(SessionContext& context, std::string_view method, std::string_view host,
                    std::uint16_t port, const Refusal& refusal);

// The rule of a LaunchDarkly answer for the log (`source:line: entry`); empty when it has none.
std::string remote_allowlist_rule(const launchdarkly::Answer& answer);

}  // namespace sandgate::session
