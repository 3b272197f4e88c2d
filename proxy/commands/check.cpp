// `sandgate check`: the operator's debugging tool, and the basis of the decision tables in tests.
#include "proxy/commands/check.hpp"

#include <algorithm>
#include <optional>
#include <tuple>

#include "proxy/dns/local_addresses.hpp"
#include "proxy/dns/resolve_report.hpp"
#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "proxy/settings/parent_route.hpp"
#include "proxy/settings/policy_loader.hpp"
#include "rules/host.hpp"
#include "rules/local_addresses.hpp"
#include "rules/reason.hpp"

namespace sandgate::commands {
namespace {

constexpr std::uint16_t kDefaultCheckPort = 443;

// `HOST`, `HOST:PORT`, `[V6]`, `[V6]:PORT`, or a bare IPv6 address (two or more colons).
Expected<rules::Authority, rules::HostError> parse_target(std::string_view target) {
  const bool bracketed = target.starts_with('[');
  const auto colons = std::count(target.begin(), target.end(), ':');
  const bool has_port = bracketed ? target.find("]:") != std::string_view::npos : colons == 1;
  if (has_port) {
    return rules::parse_authority(target);
  }
  auto host = rules::parse_host(target);
  if (!host) {
    return Unexpected{host.error()};
  }
  return rules::Authority{std::move(*host), kDefaultCheckPort};
}

// A URL's parts: the destination and the origin-form target ("/" when the URL has no path).
struct CheckedUrl {
  std::string authority;
  std::string origin_form;
  std::uint16_t default_port = 443;
};

std::optional<CheckedUrl> split_url(std::string_view target) {
  CheckedUrl url;
  if (target.starts_with("https://")) {
    target.remove_prefix(8);
  } else if (target.starts_with("http://")) {
    target.remove_prefix(7);
    url.default_port = 80;
  } else {
    return std::nullopt;
  }
  const std::size_t end = target.find_first_of("/?");
  url.authority = std::string(target.substr(0, end));
  url.origin_form = end == std::string_view::npos ? "/" : std::string(target.substr(end));
  if (url.origin_form.front() == '?') {
    url.origin_form.insert(0, "/");
  }
  return url;
}

// The requests a git clone or push of `repository` makes, as `--method git-fetch|git-push`
// stands for them: the one that moves the objects decides.
std::pair<std::string, std::string> git_request(std::string_view method, std::string path) {
  if (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  return {"POST", path + (method == "git-push" ? "/git-receive-pack" : "/git-upload-pack")};
}

// The request part of a check: the request rules' verdict on `method` `origin_form`.
struct RequestCheck {
  rules::Reason reason = rules::Reason::allowed;
  std::string rule;
  std::string why;
  std::string request;  // as people read it
  bool judged = false;  // the host has request rules
  bool inspected = false;
};

RequestCheck check_request(const rules::Policy& policy, const rules::Authority& authority,
                           std::string_view method, std::string_view origin_form) {
  const rules::RequestRules& requests = policy.requests();
  RequestCheck check;
  check.inspected = requests.inspects(authority.host, authority.port);
  std::string request_method(method);
  std::string target(origin_form);
  if (method == "git-fetch" || method == "git-push") {
    std::tie(request_method, target) = git_request(method, std::string(origin_form));
  }
  auto normal = rules::normalise_path(target);
  if (!normal) {
    check.request = request_method + " " + authority.host.display() + target;
    check.reason = rules::Reason::bad_request;
    check.why = normal.error() + ".";
    check.judged = true;
    return check;
  }
  // A fetch is a fetch with the type git sends (classify_git).
  const std::string_view content_type =
      method == "git-fetch" ? "application/x-git-upload-pack-request" : "";
  const rules::RequestFacts facts{request_method, normal.value().path, normal.value().query,
                                  content_type};
  const rules::RequestVerdict verdict = requests.decide(authority.host, authority.port, facts);
  check.request = rules::describe_request(authority.host.display(), facts);
  check.judged = verdict.kind != rules::RequestVerdict::Kind::unruled;
  check.rule = rules::request_rule_text(verdict);
  if (!verdict.permits()) {
    check.reason = verdict.kind == rules::RequestVerdict::Kind::denied
                       ? rules::Reason::request_denied
                       : rules::Reason::request_not_allowed;
  }
  check.why = check.judged ? requests.explain(verdict, authority.host.display(), facts)
                           : check.request + " is allowed: no request rules for " +
                                 authority.host.display() + ".";
  return check;
}

void print_request_check(const RequestCheck& check, const rules::Authority& authority,
                         std::string_view host_why, std::ostream& out) {
  out << rules::verdict_name(rules::reason_info(check.reason).verdict) << " " << check.request
      << "\n";
  out << "reason: " << rules::reason_code(check.reason) << "\n";
  out << "rule: " << (check.rule.empty() ? "(none)" : check.rule) << "\n";
  out << "why: " << check.why << "\n";
  out << "destination: allow " << authority.host.display() << ":" << authority.port << " ("
      << host_why << ")\n";
  out << "inspected: "
      << (check.inspected ? "yes (the gate terminates its TLS connections to see each request; "
                            "with request rules, a tunnel it cannot inspect is refused)"
                          : "no (its TLS connections are tunnelled unopened; request rules apply "
                            "to its plain HTTP only)")
      << "\n";
}

// An MCP call's part of a check: the MCP lines' verdict on it, as the stage decides it.
RequestCheck check_mcp_call(const rules::Policy& policy, const rules::Authority& authority,
                            const McpCall& call, rules::UnknownMode unknown) {
  const rules::McpRules& mcp = policy.requests().mcp();
  RequestCheck check;
  check.inspected = policy.requests().inspects(authority.host, authority.port);
  const std::string host = authority.host.display();
  check.request = std::string(rules::mcp_noun(call.kind)) + " " +
                  rules::shown_name(call.kind, call.name) + " on " + host;
  const rules::McpVerdict verdict =
      mcp.decide(authority.host, authority.port, call.kind, call.name);
  check.judged = verdict.kind != rules::McpVerdict::Kind::unruled;
  check.rule = rules::mcp_rule_text(verdict);
  check.why = mcp.explain(verdict, host, call.name);
  if (!verdict.permits()) {
    check.reason = verdict.kind == rules::McpVerdict::Kind::denied
                       ? rules::Reason::request_denied
                       : rules::Reason::request_not_allowed;
    if (verdict.kind == rules::McpVerdict::Kind::not_allowed &&
        unknown == rules::UnknownMode::ask && rules::plain_name(call.kind, call.name)) {
      check.why += " Under --unknown=ask a person is asked (allow " + check.request + "?).";
    }
  }
  if (verdict.kind == rules::McpVerdict::Kind::unruled &&
      !mcp.judges(authority.host, authority.port)) {
    check.why = check.request + " is allowed: " + host +
                " has no MCP rules (its POST bodies are not read as MCP).";
  }
  return check;
}

// The policy's notes and skipped lines, said on `err` before the verdict.
void print_load_notes(const settings::LoadedPolicy& loaded, std::ostream& err) {
  for (const auto& note : loaded.notes) {
    err << "sandgate: note: " << note << "\n";
  }
  for (const auto& issue : loaded.issues) {
    err << "sandgate: warning: " << issue.source << ":" << issue.line << ": skipped '" << issue.text
        << "': " << issue.message << "\n";
  }
}

// The destination `target` names (a URL's authority, with the scheme's port when it names
// none); when it names none, prints the invalid_host verdict and returns nullopt.
std::optional<rules::Authority> checked_authority(std::string_view target,
                                                  const std::optional<CheckedUrl>& url,
                                                  std::ostream& out) {
  if (url) {
    target = url->authority;
  }
  auto authority = parse_target(target);
  if (authority && url && target.find(':') == std::string_view::npos) {
    authority->port = url->default_port;
  }
  if (!authority) {
    constexpr rules::Reason reason = rules::Reason::invalid_host;
    out << rules::verdict_name(rules::reason_info(reason).verdict) << " " << target << "\n"
        << "reason: " << rules::reason_code(reason) << "\n"
        << "rule: (none)\n"
        << "why: '" << target
        << "' is not a valid destination: " << rules::to_string(authority.error()) << ".\n";
    return std::nullopt;
  }
  return std::move(*authority);
}

// LaunchDarkly's answer for an allowed destination, asked last as the daemon does (one real
// request; nothing is cached between runs of `check`); nullopt when it is not configured.
std::optional<launchdarkly::Answer> ask_launchdarkly(const settings::Settings& settings,
                                                     const rules::Authority& authority,
                                                     std::ostream& err) {
  if (settings.launchdarkly_client_id.empty()) {
    return std::nullopt;
  }
  err << "sandgate: " << launchdarkly::describe_configuration(settings) << "\n";
  launchdarkly::RemoteAllowlist client(settings,
                                       [&err](std::string_view level, std::string_view text) {
                                         err << "sandgate: " << level << ": " << text << "\n";
                                       });
  client.start();
  auto answer = client.check_blocking(authority.host, authority.port);
  client.stop();
  return answer;
}

// A destination's verdict: what decided it, the list entry when one did, and why.
void print_destination_verdict(const rules::Authority& authority, rules::Reason reason,
                               const std::optional<rules::RuleMatch>& rule, std::string_view why,
                               std::ostream& out) {
  out << rules::verdict_name(rules::reason_info(reason).verdict) << " " << authority.host.display()
      << ":" << authority.port << "\n";
  out << "reason: " << rules::reason_code(reason) << "\n";
  out << "rule: " << (rule ? rules::rule_text(*rule) : std::string("(none)")) << "\n";
  out << "why: " << why << "\n";
}

// The masked credentials the gate fills in on requests to `host` (never their values).
void print_bound_secrets(const settings::Settings& settings, const rules::Host& host,
                         std::ostream& out) {
  std::string bound;
  for (const auto& spec : settings.secrets) {
    if (secrets::secret_bound_to(spec, host.name)) {
      bound += (bound.empty() ? "" : ", ") + spec.name;
    }
  }
  if (!bound.empty()) {
    out << "secrets: " << bound
        << " filled in here (credential fields, inside inspected TLS; see --secret)\n";
  }
}

void print_launchdarkly(const launchdarkly::Answer& remote, std::ostream& out) {
  out << "launchdarkly: " << (remote.allowed ? "allow" : "deny") << " (from "
      << launchdarkly::to_string(remote.source) << ")";
  if (!remote.detail.empty()) {
    out << ": " << remote.detail;
  }
  out << "\n";
}

// The egress budgets that count this destination (what was spent is the running gate's: its
// /metrics).
void print_budgets(const rules::Policy& policy, const rules::Authority& authority,
                   std::ostream& out) {
  for (const rules::BudgetLine* line : policy.budgets().match(authority.host, authority.port)) {
    out << "budget: " << line->rule() << ":";
    for (std::size_t i = 0; i < line->limits.size(); ++i) {
      const rules::BudgetLimit& limit = line->limits[i];
      const bool bytes =
          limit.kind == rules::BudgetKind::up || limit.kind == rules::BudgetKind::down;
      out << (i == 0 ? " " : ", ") << (bytes ? std::string(rules::to_string(limit.kind)) + " " : "")
          << rules::describe_limit(limit);
    }
    out << "\n";
  }
}

// The last word on a destination the rules decided: which parent proxy it goes through, and
// what its name resolves to (with --resolve, each address checked as the gate would; through a
// parent the gate does not resolve the name, so that is not checked). The exit status.
int check_route(const settings::Settings& settings, const rules::Policy& policy,
                const rules::Authority& authority, bool allowed, bool resolve, std::ostream& out) {
  if (settings.parent_proxy) {
    const auto* parent = settings::parent_for(settings, authority.host, authority.port);
    if (parent == nullptr) {
      out << "parent: none (excluded by the parent proxy exclusions: dialled directly)\n";
    } else {
      out << "parent: " << parent->display() << "\n";
      if (allowed && !authority.host.is_ip()) {
        out << "note: through the parent proxy the gate does not resolve " << authority.host.name
            << "; the parent does, so the address rules cannot check what it resolves to.\n";
      }
      return allowed ? kCheckAllowed : kCheckDenied;
    }
  }
  if (allowed && !authority.host.is_ip() && resolve) {
    const bool addresses_allowed =
        dns::print_resolution(settings, policy, authority.host.name, authority.port, out);
    return addresses_allowed ? kCheckAllowed : kCheckDenied;
  }
  if (allowed && !authority.host.is_ip()) {
    out << "note: the daemon also checks the addresses " << authority.host.name
        << " resolves to before it connects.\n";
  }
  return allowed ? kCheckAllowed : kCheckDenied;
}

}  // namespace

int run_check(const settings::Settings& settings, std::string_view target, std::ostream& out,
              std::ostream& err, bool resolve, std::string_view method, const McpCall* mcp) {
  auto loaded = settings::load_policy(settings, settings::MissingDefaultBlocklist::use_template);
  if (!loaded) {
    err << "sandgate: " << loaded.error() << "\n";
    return kCheckUsageError;
  }
  print_load_notes(*loaded, err);

  const std::optional<CheckedUrl> url = split_url(target);
  const std::optional<rules::Authority> authority = checked_authority(target, url, out);
  if (!authority) {
    return kCheckDenied;
  }
  // Every address of this machine, as the gate reads them (check 1a of the README).
  rules::this_machine().replace(dns::read_local_addresses());
  const auto& policy = *loaded->policy;
  const auto decision = policy.decide(authority->host, authority->port);
  std::optional<launchdarkly::Answer> remote;
  if (decision.allowed()) {
    remote = ask_launchdarkly(settings, *authority, err);
  }
  bool allowed = decision.allowed() && (!remote || remote->allowed);

  if (url && allowed) {
    // The destination is allowed: the request decides, and for an MCP call then the call.
    RequestCheck request =
        check_request(policy, *authority, mcp != nullptr ? "POST" : method, url->origin_form);
    if (mcp != nullptr && request.reason == rules::Reason::allowed) {
      request = check_mcp_call(policy, *authority, *mcp, policy.options().unknown);
    }
    print_request_check(request, *authority,
                        policy.explain(decision, authority->host, authority->port), out);
    print_bound_secrets(settings, authority->host, out);
    allowed = request.reason == rules::Reason::allowed;
  } else if (remote && !remote->allowed) {
    // What decided: LaunchDarkly when it said no, the local rules otherwise. The verdict printed
    // is that reason's row's, as the daemon logs it.
    print_destination_verdict(*authority, remote->reason, remote->rule, remote->detail + ".", out);
  } else {
    print_destination_verdict(*authority, decision.reason, decision.rule,
                              policy.explain(decision, authority->host, authority->port), out);
  }
  if (remote) {
    print_launchdarkly(*remote, out);
  }
  if (allowed) {
    print_budgets(policy, *authority, out);
  }
  return check_route(settings, policy, *authority, allowed, resolve, out);
}

}  // namespace sandgate::commands
