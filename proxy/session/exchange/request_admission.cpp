// The admission pipeline on one request (request_admission.hpp).
#include "proxy/session/exchange/request_admission.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>

#include "proxy/secrets/request_secrets.hpp"
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "rules/ascii.hpp"

namespace sandgate::session::exchange {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

// The request's decision line: allowed, or (report-only mode) the first denial let through.
void record_request_decision(SessionContext& context, const DecisionState& decided,
                             const AdmittedRequest& request, const Admission& admission,
                             const OriginReach& origin) {
  log::Record record;
  record.connection_id = context.id;
  record.client = context.client_address;
  record.method = request.method;
  record.host = request.display;
  record.port = request.target.port;
  record.path = request.path;
  const std::string address = origin.address();
  record.address = address;
  const std::string rule = request.rule.empty() ? admission.rule() : request.rule;
  const std::string note = admission.note();
  record.rule = rule;
  record.detail = note;
  if (const auto& why = decided.reported()) {
    record.rule = why->rule;
    record.detail = why->sentence;
    context.record_decision(record, why->reason, false);
  } else {
    context.record_decision(record, rules::Reason::allowed);
  }
  context.worker.metrics.http_requests_total.add();
}

// What the request rules read of a request: its line, its type, and a method override. Names
// are compared as CGI and WSGI servers read them (any case, `_` for `-`), so that no spelling an
// origin takes for an override goes unjudged.
RequestToJudge what_rules_read(const AdmittedRequest& request, const http::request_header<>& head) {
  RequestToJudge judged{request.method, request.target.origin_form, {}, {}, {}};
  if (head.count(http::field::content_type) > 1) {
    judged.problem = "the request has more than one Content-Type field.";
  }
  judged.content_type = head[http::field::content_type];
  for (const auto& field : head) {
    std::string name = rules::ascii_lower(field.name_string());
    std::replace(name.begin(), name.end(), '_', '-');
    if (name != "x-http-method-override" && name != "x-http-method" &&
        name != "x-method-override") {
      continue;
    }
    const std::string_view value = rules::trim_ows(field.value());
    if (!rules::is_method_token(value)) {
      // A list ("DELETE, GET"), a space or a byte outside ASCII: origins read the first item, or
      // trim what they see as space; the gate judges only a single method.
      judged.problem = "a method-override field of the request is not a single method.";
    } else if (judged.method_override.empty()) {
      judged.method_override = value;
    } else if (value != judged.method_override) {
      judged.problem = "the request names different methods in its method-override fields.";
    }
  }
  return judged;
}

// A person's answer to a request's question, carried into a decision made again: it stands for
// exactly the request it was asked about (`asked`, RequestQuestion::request).
struct RequestAnswer {
  std::string asked;
  rules::Decision decision;
};

// A plain request in absolute form to a literal address while request rules are in force: the
// gate cannot tell whose rules it would meet (its Host field is the client's word), as with a
// tunnel to an address that names no host (splice_bar). Refused as not-inspectable, unless an
// entry of the request rules names the address itself.
std::optional<Refusal> refuse_nameless_request(DecisionState& decided, const rules::Host& host,
                                               std::uint16_t port) {
  if (splice_bar(decided.policy(), host, nullptr, port) != SpliceBar::nameless_address) {
    return std::nullopt;
  }
  const std::string sentence =
      host.display() + ":" + std::to_string(port) +
      " is an address: with request rules in force the gate cannot tell whose rules a request "
      "to it would meet (its Host field is only the client's word), and it lets no request "
      "through unjudged. Send it to the host by its name.";
  if (decided.reports(rules::Reason::not_inspectable)) {
    decided.keep_reported(rules::Reason::not_inspectable, {}, sentence);
    return std::nullopt;
  }
  return Refusal(rules::Reason::not_inspectable, sentence);
}

// The decision of admit_target, with the rules it is `decided` with: the destination (a question
// when no rule decides it), the nameless-address rule, the request rules (a question when no
// line decides the request), the request budgets before the dial (a question when one is
// spent; `budgets` false when the request was counted already). Sets `admission` admitted or
// refused; nothing when the request is over (its line written). `destination_answer` and
// `request_answer` carry a person's answers from an earlier round (a reload came during a wait) and
// receive this round's.
asio::awaitable<std::optional<bool>> decide_request(
    SessionContext& context, DecisionState& decided, const http::request_header<>& head,
    const OriginReach& origin, AdmittedRequest& request, Admission& admission,
    std::optional<rules::Decision>& destination_answer,
    std::optional<RequestAnswer>& request_answer, bool budgets = true) {
  const rules::Host& host = request.target.host;
  const std::uint16_t port = request.target.port;
  admission =
      co_await decide_admission(context, decided, request.method, host, port, destination_answer);
  if (admission.status == Admission::Status::over) {
    co_return std::nullopt;
  }
  if (admission.decision.answered) {
    destination_answer = admission.decision;
  }
  if (!admission.admitted()) {
    co_return true;
  }
  std::optional<Refusal> refusal;
  if (origin.inspected() == nullptr) {
    refusal = refuse_nameless_request(decided, host, port);
  }
  RequestJudgement judged;
  if (!refusal) {
    judged = judge_request(decided, host, port, what_rules_read(request, head));
    refusal = std::move(judged.refusal);
  }
  if (refusal && judged.question && decided.policy().options().unknown == rules::UnknownMode::ask) {
    // No line decides it: a person is asked about this request, as about a destination (once:
    // an answer given before a reload stands while the new rules still leave it to a person).
    const ask::RequestQuestion question = std::move(*judged.question);
    if (!request_answer || request_answer->asked != question.request) {
      // While it waits, a reload's rules are asked whether they still leave it to a person.
      const StillAsked still_asked = [&](const std::shared_ptr<const rules::Policy>& policy) {
        DecisionState under_reload = decided.under(policy);
        const RequestJudgement again =
            judge_request(under_reload, host, port, what_rules_read(request, head));
        return again.refusal && again.question && again.question->request == question.request;
      };
      const std::optional<rules::Decision> answered =
          co_await ask_about(context, decided, request.method, host, port, &question, &still_asked);
      if (!answered || !context.still_wanted(request.method, request.display, port)) {
        co_return std::nullopt;
      }
      if (withdrawn(*answered) && !decided.current(context.worker)) {
        co_return true;  // the rules now in force decide it: the caller decides again
      }
      request_answer = RequestAnswer{question.request, *answered};
    }
    const rules::Decision& answer = request_answer->decision;
    if (answer.allowed()) {
      refusal.reset();
      judged.rule = "answered: " + question.request;
    } else {
      const std::string sentence =
          answered_refusal(answer, question.request + " on " + request.where);
      refusal = Refusal(answer.reason, sentence, refusal->rule);
      refusal->path = request.path;
    }
  }
  if (!refusal && budgets) {
    BudgetCheck spent = co_await check_budgets_before_dial(context, decided, request.method,
                                                           rules::BudgetKind::requests, host, port);
    if (spent.over) {
      co_return std::nullopt;
    }
    refusal = std::move(spent.refusal);
  }
  if (refusal) {
    admission.status = Admission::Status::refused;
    admission.refusal = std::move(*refusal);
  }
  request.rule = std::move(judged.rule);
  co_return true;
}

// The refusal the front answers, with the request's path for its line.
RequestAdmission refused(AdmittedRequest request, Refusal refusal) {
  if (refusal.path.empty()) {
    refusal.path = request.path;
  }
  return {RequestAdmission::Status::refused, std::move(request), std::move(refusal)};
}

// What is refused before anything is decided or dialled: framing the proxy and the origin could
// read differently, and a masked secret's sentinel where the gate would not fill it in
// (request_secrets.hpp), logged as the attempt it is.
std::optional<Refusal> refused_before_deciding(const SessionContext& context,
                                               const http::request_header<>& head,
                                               const AdmittedRequest& request,
                                               const OriginReach& origin) {
  if (auto problem = request_framing_problem(head)) {
    return Refusal(rules::Reason::bad_request, *problem);
  }
  if (const secrets::MaskedSecrets* secrets = context.worker.shared.secrets) {
    const ConnectionFacts* facts = origin.inspected();
    const bool may_fill = facts != nullptr && facts->may_fill_secrets();
    if (auto misplaced =
            secrets::misplaced_secret(*secrets, head, request.target.host.name, may_fill)) {
      return Refusal(rules::Reason::secret_refused, *misplaced);
    }
  }
  return std::nullopt;
}

// The origin reached for an admitted request, and the request counted once the address it was
// dialled at is known (an entry for the address counts requests made by name), before any of it
// is sent. False when it is over (nothing to answer).
asio::awaitable<bool> reach_and_count(SessionContext& context, DecisionState& decided,
                                      Admission& admission, const AdmittedRequest& request,
                                      OriginReach& origin) {
  if (admission.admitted()) {
    co_await origin.reach(context, decided, admission, request);
  }
  if (admission.admitted()) {
    BudgetCheck counted = co_await count_against_budgets(
        context, decided, request.method, rules::BudgetKind::requests, request.target.host,
        request.target.port, origin.dialled());
    if (!counted.apply_to(admission) && !admission.refused()) {
      co_return false;
    }
  }
  co_return true;
}

// Where the request's registration leads, for a reload to judge it again. An inspected
// connection registers where its tunnel led (an address the client chose, with the name its
// ClientHello gave), so that a reload holds it to every rule kind its set-up was.
Destination registered_destination(const AdmittedRequest& request, const Admission& admission,
                                   const OriginReach& origin) {
  Destination destination;
  if (const ConnectionFacts* facts = origin.inspected()) {
    destination = facts->destination(origin.dialled());
    // (This request's answer was about the name it named: the tunnel's host only when it was
    // opened to that name.)
    destination.answered = facts->answered || (admission.decision.answered && !facts->by_address());
  } else {
    destination.host = request.target.host;
    destination.port = request.target.port;
    destination.address = origin.dialled();
    destination.answered = admission.decision.answered;
  }
  return destination;
}

}  // namespace

asio::awaitable<RequestAdmission> admit_request(SessionContext& context, DecisionState& decided,
                                                const http::request_header<>& head,
                                                HttpTarget target, OriginReach& origin) {
  AdmittedRequest request;
  request.method = std::string(head.method_string());
  request.target = std::move(target);
  request.display = request.target.host.display();
  request.where = request.display + ":" + std::to_string(request.target.port);
  request.path = std::string(logged_path(request.target.origin_form));
  if (auto refusal = refused_before_deciding(context, head, request, origin)) {
    co_return refused(std::move(request), std::move(*refusal));
  }

  // The admission pipeline: the destination, then the request itself (its method and path),
  // then the origin reached. (Each round that comes back stale waited through a reload; one
  // that waits on nothing, or through none, is the last.)
  std::optional<rules::Decision> destination_answer;
  std::optional<RequestAnswer> request_answer;
  Admission admission;
  for (;;) {
    const std::optional<bool> round = co_await decide_request(
        context, decided, head, origin, request, admission, destination_answer, request_answer);
    if (!round) {
      co_return RequestAdmission{};
    }
    if (decided.current(context.worker)) {
      break;
    }
    decided.take_current_policy(context.worker);  // a reload came during a wait: decide again
  }
  const bool reached = co_await reach_and_count(context, decided, admission, request, origin);
  if (!reached) {
    co_return RequestAdmission{};
  }
  // A reload during the reach or the count: the destination and the request are judged again
  // by its rules (the budgets have counted the request already).
  while (admission.admitted() && !decided.current(context.worker)) {
    decided.take_current_policy(context.worker);
    const Admission dialled = admission;
    const std::optional<bool> round =
        co_await decide_request(context, decided, head, origin, request, admission,
                                destination_answer, request_answer, /*budgets=*/false);
    if (!round) {
      co_return RequestAdmission{};
    }
    if (admission.admitted()) {
      admission.use = dialled.use;
      admission.parent = dialled.parent;
      admission.endpoint = dialled.endpoint;
      admission.dialled = dialled.dialled;
    }
  }
  if (admission.refused()) {
    co_return refused(std::move(request), std::move(admission.refusal));
  }
  if (!admission.admitted()) {
    co_return RequestAdmission{};
  }
  // Registered while the origin connection is open, so that a reload can judge it again.
  if (auto revoked = context.register_destination(
          decided, registered_destination(request, admission, origin))) {
    co_return refused(std::move(request),
                      {revocation_reason(*revoked), revoked->detail, revoked->rule});
  }
  record_request_decision(context, decided, request, admission, origin);
  co_return RequestAdmission{RequestAdmission::Status::admitted, std::move(request), {}};
}

std::string answered_refusal(const rules::Decision& answer, std::string_view asked) {
  const std::string about(asked);
  return answer.reason == rules::Reason::ask_denied
             ? "a person answered the question about " + about + " with deny."
         : answer.reason == rules::Reason::ask_timeout
             ? "nobody answered the question about " + about +
                   " within the ask timeout; the ask default denies it."
             : "nobody can be asked about " + about +
                   " (no one to answer, or too many questions pending).";
}

// An inspected connection opened to an address leads there whatever name its requests give
// (the admission pipeline decided that name): each request holds the address to the rules it is
// decided with too, as they would hold a new tunnel to it. Nothing when it may go on (or
// report-only mode lets it, keeping the denial for the request's line).
std::optional<Refusal> refuse_address(DecisionState& decided, const ConnectionFacts& facts) {
  const rules::Decision decision = decided.policy().decide(facts.requested, facts.port);
  // (A person's answer allowed the address, and still no rule decides it: as judge_again.)
  if (decision.allowed() || (decision.unknown && facts.answered) ||
      decided.report_instead(decision, facts.requested, facts.port)) {
    return std::nullopt;
  }
  return Refusal(decision.reason, decided.policy().explain(decision, facts.requested, facts.port),
                 rules::rule_text(decision));
}

}  // namespace sandgate::session::exchange
