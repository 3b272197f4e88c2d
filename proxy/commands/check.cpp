// `sandgate check`: the operator's debugging tool, and the basis of the decision tables in tests.
#include "proxy/commands/check.hpp"

#include <algorithm>

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

}  // namespace

int run_check(const settings::Settings& settings, std::string_view target, std::ostream& out,
              std::ostream& err, bool resolve) {
  auto loaded = settings::load_policy(settings, settings::MissingDefaultBlocklist::use_template);
  if (!loaded) {
    err << "sandgate: " << loaded.error() << "\n";
    return kCheckUsageError;
  }
  for (const auto& note : loaded->notes) {
    err << "sandgate: note: " << note << "\n";
  }
  for (const auto& issue : loaded->issues) {
    err << "sandgate: warning: " << issue.source << ":" << issue.line << ": skipped '" << issue.text
        << "': " << issue.message << "\n";
  }

  auto authority = parse_target(target);
  if (!authority) {
    constexpr rules::Reason reason = rules::Reason::invalid_host;
    out << rules::verdict_name(rules::reason_info(reason).verdict) << " " << target << "\n"
        << "reason: " << rules::reason_code(reason) << "\n"
        << "rule: (none)\n"
        << "why: '" << target
        << "' is not a valid destination: " << rules::to_string(authority.error()) << ".\n";
    return kCheckDenied;
  }
  // Every address of this machine, as the gate reads them (check 1a of the README).
  rules::this_machine().replace(dns::read_local_addresses());
  const auto& policy = *loaded->policy;
  const auto decision = policy.decide(authority->host, authority->port);

  // LaunchDarkly, asked last as the daemon does (one real request; nothing is cached between
  // runs of `check`).
  std::optional<launchdarkly::Answer> remote;
  if (decision.allowed() && !settings.launchdarkly_client_id.empty()) {
    err << "sandgate: " << launchdarkly::describe_configuration(settings) << "\n";
    launchdarkly::RemoteAllowlist client(settings,
                                         [&err](std::string_view level, std::string_view text) {
                                           err << "sandgate: " << level << ": " << text << "\n";
                                         });
    client.start();
    remote = client.check_blocking(authority->host, authority->port);
    client.stop();
  }
  const bool allowed = decision.allowed() && (!remote || remote->allowed);
  // What decided: LaunchDarkly when it said no, the local rules otherwise. The verdict printed
  // is that reason's row's, as the daemon logs it.
  const rules::Reason reason = remote && !remote->allowed ? remote->reason : decision.reason;

  out << rules::verdict_name(rules::reason_info(reason).verdict) << " " << authority->host.display()
      << ":" << authority->port << "\n";
  if (remote && !remote->allowed) {
    out << "reason: " << rules::reason_code(reason) << "\n";
    out << "rule: ";
    if (remote->rule) {
      out << remote->rule->source << ":" << remote->rule->line << " " << remote->rule->entry;
    } else {
      out << "(none)";
    }
    out << "\n";
    out << "why: " << remote->detail << ".\n";
  } else {
    out << "reason: " << rules::reason_code(reason) << "\n";
    out << "rule: ";
    if (decision.rule) {
      out << decision.rule->source << ":" << decision.rule->line << " " << decision.rule->entry;
    } else {
      out << "(none)";
    }
    out << "\n";
    out << "why: " << policy.explain(decision, authority->host, authority->port) << "\n";
  }
  if (remote) {
    out << "launchdarkly: " << (remote->allowed ? "allow" : "deny") << " (from "
        << launchdarkly::to_string(remote->source) << ")";
    if (!remote->detail.empty()) {
      out << ": " << remote->detail;
    }
    out << "\n";
  }
  if (settings.parent_proxy) {
    // Through a parent the gate does not resolve the name, so what it resolves to is not
    // checked (and --resolve would check what the gate never looks up).
    const auto* parent = settings::parent_for(settings, authority->host, authority->port);
    if (parent == nullptr) {
      out << "parent: none (excluded by the parent proxy exclusions: dialled directly)\n";
    } else {
      out << "parent: " << parent->display() << "\n";
      if (allowed && !authority->host.is_ip()) {
        out << "note: through the parent proxy the gate does not resolve " << authority->host.name
            << "; the parent does, so the address rules cannot check what it resolves to.\n";
      }
      return allowed ? kCheckAllowed : kCheckDenied;
    }
  }
  if (allowed && !authority->host.is_ip() && resolve) {
    const bool addresses_allowed =
        dns::print_resolution(settings, policy, authority->host.name, authority->port, out);
    return addresses_allowed ? kCheckAllowed : kCheckDenied;
  }
  if (allowed && !authority->host.is_ip()) {
    out << "note: the daemon also checks the addresses " << authority->host.name
        << " resolves to before it connects.\n";
  }
  return allowed ? kCheckAllowed : kCheckDenied;
}

}  // namespace sandgate::commands
