// The admission pipeline's stages (admission.hpp).
#include "proxy/session/admission.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/fault_injection.hpp"
#include "proxy/session/parent_dial.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "proxy/settings/parent_route.hpp"

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

asio::awaitable<Admission> decide_admission(SessionContext& context, std::string_view method,
                                            const rules::Host& host, std::uint16_t port) {
  const std::string display = host.display();

  // 1 and 2. The policy; a destination no rule decides may wait on a question.
  context.reported.reset();
  Admission admission;
  admission.decision = context.policy->decide(host, port);
  if (admission.decision.ask && !context.reports(admission.decision.reason)) {
    auto answered = co_await ask_about(context, method, host, port);
    if (!answered || !context.still_wanted(method, display, port)) {
      co_return over();
    }
    admission.decision = *answered;
  }
  if (!admission.decision.allowed() && !context.report_instead(admission.decision, host, port)) {
    co_return refused({admission.decision.reason,
                       context.policy->explain(admission.decision, host, port),
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
      if (!context.reports(remote.reason)) {
        co_return refused({remote.reason, remote.detail + ".", remote_allowlist_rule(remote)});
      }
      context.keep_reported(remote.reason, remote_allowlist_rule(remote), remote.detail + ".");
    }
  }
  admission.status = Admission::Status::admitted;
  co_return admission;
}

asio::awaitable<void> connect_upstream(SessionContext& context, Admission& admission,
                                       std::string_view method, const rules::Host& host,
                                       std::uint16_t port, UpstreamUse use,
                                       boost::beast::flat_buffer& from_parent) {
  // Through a parent the parent resolves the name: the address rules on it cannot run here.
  admission.use = use;
  admission.parent = settings::parent_for(context.settings(), host, port);
  DialResult dial;
  if (admission.parent == nullptr) {
    dial = co_await dial_upstream(context, host, port);
  } else if (use == UpstreamUse::tunnel) {
    dial = co_await connect_through_parent(context, *admission.parent, host, port, from_parent);
  } else {
    dial = co_await dial_parent(context, *admission.parent);
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

asio::awaitable<Admission> admit(SessionContext& context, std::string_view method,
                                 const rules::Host& host, std::uint16_t port, UpstreamUse use,
                                 boost::beast::flat_buffer& from_parent) {
  Admission admission = co_await decide_admission(context, method, host, port);
  if (admission.admitted()) {
    co_await connect_upstream(context, admission, method, host, port, use, from_parent);
  }
  co_return admission;
}

asio::awaitable<BudgetCheck> count_against_budgets(SessionContext& context, std::string_view method,
                                                   rules::BudgetKind kind, const rules::Host& host,
                                                   std::uint16_t port) {
  BudgetCheck check;
  budget::Ledger* ledger = context.worker.shared.budgets;
  if (ledger == nullptr || context.policy->budgets().empty()) {
    co_return check;
  }
  budget::DestinationBudgets budgets(*ledger, context.policy->shared_budgets(), host, port);
  const bool enforce = !context.reports(rules::Reason::budget_exhausted);
  // Bytes first: a destination whose upload or download budget is spent takes no new connection
  // or request (what a client sends with its request would leave before a relay counted it).
  std::optional<budget::Stop> stop = budgets.spent(rules::BudgetKind::up);
  if (!stop) {
    stop = budgets.spent(rules::BudgetKind::down);
  }
  if (stop && enforce) {
    const AskedForMore asked = co_await ask_for_more(context, method, host, port, *stop);
    if (asked == AskedForMore::over) {
      check.over = true;
      co_return check;
    }
    if (asked != AskedForMore::granted) {
      if (asked == AskedForMore::refused) {
        stop->sentence += " More was asked for and not allowed.";
      }
      check.refusal = Refusal(rules::Reason::budget_exhausted, std::move(stop->sentence),
                              std::move(stop->rule));
      co_return check;
    }
  }
  const std::optional<budget::Stop> spent_bytes = enforce ? std::nullopt : stop;
  stop = budgets.count_one(kind, enforce);
  if (!stop) {
    stop = spent_bytes;
  }
  if (!stop) {
    co_return check;
  }
  if (!enforce) {
    context.keep_reported(rules::Reason::budget_exhausted, stop->rule, stop->sentence);
    co_return check;
  }
  const AskedForMore asked = co_await ask_for_more(context, method, host, port, *stop);
  if (asked == AskedForMore::over) {
    check.over = true;
    co_return check;
  }
  if (asked == AskedForMore::granted) {
    stop = budgets.count_one(kind, true);
    if (!stop) {
      co_return check;
    }
  } else if (asked == AskedForMore::refused) {
    stop->sentence += " More was asked for and not allowed.";
  }
  check.refusal =
      Refusal(rules::Reason::budget_exhausted, std::move(stop->sentence), std::move(stop->rule));
  co_return check;
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

// What a person is asked about a request no line of its host's group decides, and the lines an
// `always` or `never` would add to that group (none when its path cannot be written as one).
ask::RequestQuestion question_about(const rules::RequestVerdict& verdict,
                                    const rules::RequestFacts& facts) {
  ask::RequestQuestion question;
  const rules::GitRequest git = rules::classify_git(facts);
  std::string methods;
  std::string path;
  if (git.service != rules::GitService::none) {
    question.request =
        std::string(git.service == rules::GitService::push ? "git push " : "git fetch ") +
        git.repository;
    methods = std::string(rules::to_string(git.service));
    path = git.repository;
  } else {
    for (const char c : facts.method) {
      methods += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    path = std::string(facts.path);
    question.request = methods + " " + path;
  }
  const bool writable =
      !path.empty() && path.find_first_of(" \t#*") == std::string::npos && !verdict.group.empty();
  if (writable) {
    const std::string rest = std::string(verdict.group) + " " + methods + " " + path;
    question.allow_line = "allow " + rest;
    question.deny_line = "deny " + rest;
  }
  return question;
}

}  // namespace

RequestJudgement judge_request(SessionContext& context, const rules::Host& host, std::uint16_t port,
                               const RequestToJudge& request) {
  RequestJudgement judgement;
  const rules::RequestRules& rules = context.policy->requests();
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
  // Every method an origin may act on: the request's, and those an override names.
  const std::vector<std::string> from_query = rules::query_method_overrides(normal.value().query);
  std::vector<std::string_view> methods{request.method};
  const auto add = [&methods](std::string_view method) {
    if (!method.empty() && std::find(methods.begin(), methods.end(), method) == methods.end()) {
      methods.push_back(method);
    }
  };
  add(request.method_override);
  for (const std::string& method : from_query) {
    if (!rules::is_method_token(method)) {
      return refuse(rules::Reason::bad_request,
                    "a _method parameter of the request is not a single method.", {},
                    DeniedAt::target);
    }
    add(method);
  }
  for (const std::string_view method : methods) {
    const rules::RequestFacts facts{method, normal.value().path, normal.value().query,
                                    request.content_type};
    const rules::RequestVerdict verdict = rules.decide(host, port, facts);
    if (verdict.permits()) {
      if (judgement.rule.empty()) {
        judgement.rule = rules::request_rule_text(verdict);
      }
      continue;
    }
    const rules::Reason reason = verdict.kind == rules::RequestVerdict::Kind::denied
                                     ? rules::Reason::request_denied
                                     : rules::Reason::request_not_allowed;
    std::string sentence = rules.explain(verdict, host.display(), facts);
    if (method != request.method) {
      sentence =
          "the request asks for " + std::string(method) + " through " +
          (method == request.method_override ? "a method-override header" : "a _method parameter") +
          ": " + sentence;
    }
    std::string rule = rules::request_rule_text(verdict);
    if (verdict.kind == rules::RequestVerdict::Kind::not_allowed && method == request.method) {
      judgement.question = question_about(verdict, facts);
    }
    if (context.reports(reason)) {
      context.keep_reported(reason, std::move(rule), std::move(sentence));
      judgement.rule.clear();
      return judgement;
    }
    judgement.rule.clear();
    return refuse(reason, std::move(sentence), std::move(rule), DeniedAt::target);
  }
  return judgement;
}

std::string remote_allowlist_rule(const launchdarkly::Answer& answer) {
  if (!answer.rule) {
    return {};
  }
  return std::string(answer.rule->source) + ":" + std::to_string(answer.rule->line) + ": " +
         std::string(answer.rule->entry);
}

}  // namespace sandgate::session
