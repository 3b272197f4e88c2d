// The admission pipeline's stages (admission.hpp).
#include "proxy/session/admission.hpp"

#include <algorithm>
#include <vector>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/fault_injection.hpp"
#include "proxy/session/parent_dial.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "proxy/settings/parent_route.hpp"
#include "rules/ascii.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;

Admission refused(Refusal refusal) {
  Admission admission;
  admission.status = Admission::Status::refused;
  admission.refusal = std::move(refusal);
  return admission;
}

Admission over() { return Admission{}; }

// What a LaunchDarkly failover or an expired answer should add to an allow line; nothing for a
// plain answer.
std::string remote_allowlist_note(const std::optional<launchdarkly::Answer>& answer) {
  if (!answer || answer->source == launchdarkly::Source::network ||
      answer->source == launchdarkly::Source::cache ||
      answer->source == launchdarkly::Source::list) {
    return {};
  }
  return answer->detail;
}

}  // namespace

std::string Admission::note() const {
  std::string note = remote_allowlist_note(remote);
  if (parent != nullptr && use == UpstreamUse::tunnel) {
    const std::string via = "through the parent proxy " + parent->display();
    note = note.empty() ? via : note + "; " + via;
  }
  return note;
}

asio::awaitable<Admission> decide_admission(SessionContext& context, DecisionState& decided,
                                            std::string_view method, const rules::Host& host,
                                            std::uint16_t port,
                                            std::optional<rules::Decision> answered) {
  const std::string display = host.display();

  // 1 and 2. The policy; a destination no rule decides may wait on a question. A reload during
  // the wait decides it again with the new rules: they may decide it now (a person's answer
  // then decides nothing); while they still leave it to a person, the answer stands.
  Admission admission;
  for (;;) {
    decided.forget_reported();
    admission.decision = decided.policy().decide(host, port);
    if (!admission.decision.ask || decided.reports(admission.decision.reason)) {
      break;
    }
    if (answered) {
      admission.decision = *answered;
      break;
    }
    answered = co_await ask_about(context, decided, method, host, port);
    if (!answered || !context.still_wanted(method, display, port)) {
      co_return over();
    }
    if (decided.current(context.worker)) {
      admission.decision = *answered;
      break;
    }
    decided.take_current_policy(context.worker);
    if (withdrawn(*answered)) {
      answered.reset();  // nobody answered: the new rules decided it
    }
  }
  if (!admission.decision.allowed() && !decided.report_instead(admission.decision, host, port)) {
    co_return refused({admission.decision.reason,
                       decided.policy().explain(admission.decision, host, port),
                       rules::rule_text(admission.decision)});
  }
  fault_point("admission-decided");

  // 3. LaunchDarkly. Its answer may come after the drain closed the connection.
  if (launchdarkly::RemoteAllowlist* allowlist = context.worker.shared.remote_allowlist) {
    admission.remote = co_await allowlist->check(host, port);
    if (!context.still_wanted(method, display, port)) {
      co_return over();
    }
    const launchdarkly::Answer& remote = *admission.remote;
    if (!remote.allowed) {
      if (!decided.reports(remote.reason)) {
        co_return refused({remote.reason, remote.detail + ".", remote_allowlist_rule(remote)});
      }
      decided.keep_reported(remote.reason, remote_allowlist_rule(remote), remote.detail + ".");
    }
  }
  admission.status = Admission::Status::admitted;
  co_return admission;
}

asio::awaitable<void> connect_upstream(SessionContext& context, DecisionState& decided,
                                       Admission& admission, std::string_view method,
                                       const rules::Host& host, std::uint16_t port, UpstreamUse use,
                                       boost::beast::flat_buffer& from_parent) {
  // Through a parent the parent resolves the name: the address rules on it cannot run here.
  admission.use = use;
  admission.parent = settings::parent_for(decided.settings(), host, port);
  DialResult dial;
  if (admission.parent == nullptr) {
    dial = co_await dial_upstream(context, decided, host, port);
  } else if (use == UpstreamUse::tunnel) {
    dial = co_await connect_through_parent(context, decided, *admission.parent, host, port,
                                           from_parent);
  } else {
    dial = co_await dial_parent(context, decided, *admission.parent);
  }
  if (!context.still_wanted(method, host.display(), port)) {
    admission = over();
    co_return;
  }
  if (!dial.connected) {
    admission = refused({dial.reason, dial.sentence, {}, dial.denied_at()});
    co_return;
  }
  admission.endpoint = dial.endpoint;
  if (!host.is_ip() && admission.parent == nullptr) {
    admission.dialled = to_rules_address(dial.endpoint.address());
  }
}

bool keep_open_upstream(DecisionState& decided, Admission& admission, const rules::Host& host,
                        std::uint16_t port, const std::optional<rules::IpAddress>& dialled) {
  if (!dialled) {
    return true;
  }
  auto refused_now = refuse_resolved(decided, host.name, port, {*dialled});
  if (!refused_now) {
    return true;
  }
  admission.status = Admission::Status::refused;
  admission.refusal = {refused_now->reason, refused_now->sentence, {}, refused_now->denied_at()};
  return false;
}

namespace {

// A spent budget's refusal, saying when a person was asked for more and refused it.
BudgetCheck budget_refusal(budget::Stop stop, AskedForMore asked) {
  if (asked == AskedForMore::refused) {
    stop.sentence += " More was asked for and not allowed.";
  }
  BudgetCheck check;
  check.refusal =
      Refusal(rules::Reason::budget_exhausted, std::move(stop.sentence), std::move(stop.rule));
  return check;
}

// Asks a person for more past `stop` (ask_for_more). Nothing when more was granted; otherwise
// the check: over (the request ended while a person was asked) or the budget's refusal.
asio::awaitable<std::optional<BudgetCheck>> ask_past(SessionContext& context,
                                                     DecisionState& decided,
                                                     std::string_view method,
                                                     const rules::Host& host, std::uint16_t port,
                                                     budget::Stop stop) {
  const AskedForMore asked = co_await ask_for_more(context, decided, method, host, port, stop);
  if (asked == AskedForMore::granted) {
    co_return std::nullopt;
  }
  if (asked == AskedForMore::over) {
    BudgetCheck check;
    check.over = true;
    co_return check;
  }
  co_return budget_refusal(std::move(stop), asked);
}

// After the dial: every limit of the name and of the address dialled counts the connection or
// request of `kind`. `spent_bytes`: a spent up or down limit that report-only mode let through.
asio::awaitable<BudgetCheck> count_after_dial(SessionContext& context, DecisionState& decided,
                                              std::string_view method, rules::BudgetKind kind,
                                              const rules::Host& host, std::uint16_t port,
                                              budget::DestinationBudgets& budgets, bool enforce,
                                              std::optional<budget::Stop> spent_bytes) {
  std::optional<budget::Stop> stop = budgets.count_one(kind, enforce);
  if (!stop) {
    stop = std::move(spent_bytes);
  }
  if (!stop) {
    co_return BudgetCheck{};
  }
  if (!enforce) {
    decided.keep_reported(rules::Reason::budget_exhausted, stop->rule, stop->sentence);
    co_return BudgetCheck{};
  }
  if (auto settled = co_await ask_past(context, decided, method, host, port, *stop)) {
    co_return std::move(*settled);
  }
  stop = budgets.count_one(kind, true);
  if (!stop) {
    co_return BudgetCheck{};
  }
  co_return budget_refusal(std::move(*stop), AskedForMore::granted);
}

// count_against_budgets and check_budgets_before_dial in one place. Before the dial (`dialled`
// unknown, `count` false) the limits the destination's name matches are only looked at, so
// that a spent one refuses (or asks) before anything is dialled; after it (`count` true) every
// limit of the name and of the address dialled counts the connection or request.
asio::awaitable<BudgetCheck> settle_budgets(SessionContext& context, DecisionState& decided,
                                            std::string_view method, rules::BudgetKind kind,
                                            const rules::Host& host, std::uint16_t port,
                                            std::optional<rules::IpAddress> dialled, bool count,
                                            const rules::Host* tls_name = nullptr) {
  budget::Ledger* ledger = context.worker.shared.budgets;
  if (ledger == nullptr || decided.policy().budgets().empty()) {
    co_return BudgetCheck{};
  }
  const bool enforce = !decided.reports(rules::Reason::budget_exhausted);
  if (!count && !enforce) {
    co_return BudgetCheck{};  // report-only mode counts, and reports, after the dial
  }
  budget::DestinationBudgets budgets(*ledger, decided.policy().shared_budgets(), host, port,
                                     dialled, tls_name);
  if (tls_name != nullptr) {
    // Only what the name adds: host and the address dialled were counted before it was known.
    budgets.drop_limits_of(budget::DestinationBudgets(*ledger, decided.policy().shared_budgets(),
                                                      host, port, dialled));
  }
  // Bytes first: a destination whose upload or download budget is spent takes no new connection
  // or request (what a client sends with its request would leave before a relay counted it).
  std::optional<budget::Stop> stop = budgets.spent(rules::BudgetKind::up);
  if (!stop) {
    stop = budgets.spent(rules::BudgetKind::down);
  }
  if (stop && enforce) {
    if (auto settled = co_await ask_past(context, decided, method, host, port, *stop)) {
      co_return std::move(*settled);
    }
  }
  if (count) {
    co_return co_await count_after_dial(context, decided, method, kind, host, port, budgets,
                                        enforce, enforce ? std::nullopt : stop);
  }
  // A spent count refuses now, counting nothing: the count itself waits for the address.
  if (std::optional<budget::Stop> spent = budgets.spent(kind)) {
    if (auto settled = co_await ask_past(context, decided, method, host, port, *spent)) {
      co_return std::move(*settled);
    }
  }
  co_return BudgetCheck{};
}

}  // namespace

asio::awaitable<BudgetCheck> check_budgets_before_dial(
    SessionContext& context, DecisionState& decided, std::string_view method,
    rules::BudgetKind kind, const rules::Host& host, std::uint16_t port) {
  return settle_budgets(context, decided, method, kind, host, port, std::nullopt, false);
}

asio::awaitable<BudgetCheck> count_against_budgets(SessionContext& context, DecisionState& decided,
                                                   std::string_view method, rules::BudgetKind kind,
                                                   const rules::Host& host, std::uint16_t port,
                                                   std::optional<rules::IpAddress> dialled,
                                                   const rules::Host* tls_name) {
  return settle_budgets(context, decided, method, kind, host, port, dialled, true, tls_name);
}

bool BudgetCheck::apply_to(Admission& admission) {
  if (over) {
    admission.status = Admission::Status::over;
  } else if (refusal) {
    admission.status = Admission::Status::refused;
    admission.refusal = std::move(*refusal);
  }
  return admission.admitted();
}

void record_refusal(SessionContext& context, std::string_view method, std::string_view host,
                    std::uint16_t port, const Refusal& refusal) {
  log::Record record;
  record.connection_id = context.id;
  record.client = context.client_address;
  record.method = method;
  record.host = host;
  record.port = port;
  record.rule = refusal.rule;
  record.detail = refusal.sentence;
  record.path = refusal.path;
  context.record_decision(record, refusal.reason);
}

std::string_view logged_path(std::string_view origin_form) {
  return origin_form.substr(0, origin_form.find('?'));
}

namespace {

// The methods a request may act as, as a question names them: its own method, then each other
// one an override names, in upper case (methods match in any case), once each and in order, so
// that one set is always spelled one way ("GET", "GET as DELETE", "POST as DELETE or PUT").
std::string effective_methods(std::string_view method,
                              const std::vector<std::string_view>& overrides) {
  std::vector<std::string> others;
  const std::string own = rules::ascii_upper(method);
  for (const std::string_view named : overrides) {
    std::string other = rules::ascii_upper(named);
    if (other != own && std::find(others.begin(), others.end(), other) == others.end()) {
      others.push_back(std::move(other));
    }
  }
  std::sort(others.begin(), others.end());
  std::string text = own;
  for (std::size_t i = 0; i < others.size(); ++i) {
    text += (i == 0 ? " as " : " or ") + others[i];
  }
  return text;
}

// What a person is asked about a request no line of its host's group decides, and the lines an
// `always` or `never` would add to that group. The question is about the effective request:
// every method it may act as (`methods`: its own first, then what overrides name), so that an
// answer stands for exactly that set. A request that may act as several methods, or whose path
// a line cannot hold, gets no lines: `allow HOST GET,DELETE /p` would allow a DELETE without
// the GET, a wider set than the one a person was asked about.
ask::RequestQuestion question_about(const rules::RequestVerdict& verdict,
                                    const rules::RequestFacts& facts,
                                    const std::vector<std::string_view>& methods) {
  ask::RequestQuestion question;
  const std::vector<std::string_view> overrides(methods.begin() + 1, methods.end());
  const std::string acts_as = effective_methods(facts.method, overrides);
  const bool one_method = acts_as.find(' ') == std::string::npos;
  const rules::GitRequest git = one_method ? rules::classify_git(facts) : rules::GitRequest{};
  std::string written_methods;
  std::string path;
  if (git.service != rules::GitService::none) {
    question.request =
        std::string(git.service == rules::GitService::push ? "git push " : "git fetch ") +
        git.repository;
    written_methods = std::string(rules::to_string(git.service));
    path = git.repository;
  } else {
    written_methods = acts_as;
    path = std::string(facts.path);
    question.request = acts_as + " " + path;
  }
  if (!one_method) {
    question.no_line_because =
        "this request may act as several methods (" + acts_as +
        "), and a rule line for them all would also allow or deny each one alone";
  } else if (path.empty() || path.find_first_of(" \t#*") != std::string::npos ||
             verdict.group.empty()) {
    question.no_line_because =
        "this request's path cannot be written as a rule line (it holds a space, `#` or `*`)";
  } else {
    const std::string rest = std::string(verdict.group) + " " + written_methods + " " + path;
    question.allow_line = "allow " + rest;
    question.deny_line = "deny " + rest;
  }
  return question;
}

}  // namespace

namespace {

// Every method an origin may act on for `request`: its own, then the one its override header
// names and those the query's _method parameters name (`from_query`), once each. The error: a
// _method that is not a single method.
Expected<std::vector<std::string_view>, std::string> methods_acted_as(
    const RequestToJudge& request, const std::vector<std::string>& from_query) {
  std::vector<std::string_view> methods{request.method};
  const auto add = [&methods](std::string_view method) {
    if (!method.empty() && std::find(methods.begin(), methods.end(), method) == methods.end()) {
      methods.push_back(method);
    }
  };
  add(request.method_override);
  for (const std::string& method : from_query) {
    if (!rules::is_method_token(method)) {
      return Unexpected{std::string("a _method parameter of the request is not a single method.")};
    }
    add(method);
  }
  return methods;
}

// A method the request rules did not permit, and their verdict on it.
struct Unsettled {
  std::string_view method;
  rules::RequestVerdict verdict;
  bool denied = false;  // a line denies it (else no line allows it)
};

// Each of `methods` judged: a line that denies any one decides, before any question (a person
// is never asked to let through what a line denies); then one that no line allows. Nothing when
// every one is permitted; `rule` then names the line that permitted the first.
template <class FactsFor>
std::optional<Unsettled> unsettled_method(const rules::RequestRules& rules, const rules::Host& host,
                                          std::uint16_t port,
                                          const std::vector<std::string_view>& methods,
                                          const FactsFor& facts_for, std::string& rule) {
  std::optional<Unsettled> not_allowed;
  for (const std::string_view method : methods) {
    const rules::RequestVerdict verdict = rules.decide(host, port, facts_for(method));
    if (verdict.permits()) {
      if (rule.empty()) {
        rule = rules::request_rule_text(verdict);
      }
    } else if (verdict.kind == rules::RequestVerdict::Kind::denied) {
      return Unsettled{method, verdict, true};
    } else if (!not_allowed) {
      not_allowed = Unsettled{method, verdict, false};
    }
  }
  return not_allowed;
}

}  // namespace

RequestJudgement judge_request(DecisionState& decided, const rules::Host& host, std::uint16_t port,
                               const RequestToJudge& request) {
  RequestJudgement judgement;
  const rules::RequestRules& rules = decided.policy().requests();
  if (!rules.judges(host, port)) {
    return judgement;
  }
  const std::string path(logged_path(request.origin_form));
  const auto refuse = [&](rules::Reason reason, std::string sentence, std::string rule,
                          DeniedAt at) {
    judgement.refusal = Refusal(reason, std::move(sentence), std::move(rule), at);
    judgement.refusal->path = path;
    return judgement;
  };
  auto normal = rules::normalise_path(request.origin_form);
  if (!normal) {
    return refuse(rules::Reason::bad_request, normal.error() + ".", {}, DeniedAt::target);
  }
  if (!request.problem.empty()) {
    return refuse(rules::Reason::bad_request, std::string(request.problem), {}, DeniedAt::target);
  }
  const std::vector<std::string> from_query = rules::query_method_overrides(normal.value().query);
  auto methods = methods_acted_as(request, from_query);
  if (!methods) {
    return refuse(rules::Reason::bad_request, methods.error(), {}, DeniedAt::target);
  }
  const auto facts_for = [&](std::string_view method) {
    return rules::RequestFacts{method, normal.value().path, normal.value().query,
                               request.content_type};
  };
  const std::optional<Unsettled> decisive =
      unsettled_method(rules, host, port, *methods, facts_for, judgement.rule);
  if (!decisive) {
    return judgement;
  }
  judgement.rule.clear();
  const rules::Reason reason =
      decisive->denied ? rules::Reason::request_denied : rules::Reason::request_not_allowed;
  std::string sentence =
      rules.explain(decisive->verdict, host.display(), facts_for(decisive->method));
  if (decisive->method != request.method) {
    sentence = "the request asks for " + std::string(decisive->method) + " through " +
               (decisive->method == request.method_override ? "a method-override header"
                                                            : "a _method parameter") +
               ": " + sentence;
  }
  std::string rule = rules::request_rule_text(decisive->verdict);
  if (!decisive->denied) {
    judgement.question = question_about(decisive->verdict, facts_for(request.method), *methods);
  }
  if (decided.reports(reason)) {
    decided.keep_reported(reason, std::move(rule), std::move(sentence));
    return judgement;
  }
  return refuse(reason, std::move(sentence), std::move(rule), DeniedAt::target);
}

std::string remote_allowlist_rule(const launchdarkly::Answer& answer) {
  if (!answer.rule) {
    return {};
  }
  return std::string(answer.rule->source) + ":" + std::to_string(answer.rule->line) + ": " +
         std::string(answer.rule->entry);
}

}  // namespace sandgate::session
