// The decision engine. See policy.hpp for the order of checks and why it is that order.
#include "rules/policy.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "rules/local_addresses.hpp"

namespace sandgate::rules {
namespace {

// Host names of cloud metadata services. Their addresses are caught when the proxy classifies
// what a name resolved to; naming them here also lets `sandgate check` (which does not resolve)
// give the right answer, and stops them before any DNS query leaves the machine.
constexpr std::array<std::string_view, 6> kMetadataNames = {
    "metadata.google.internal",   "metadata.goog",           "metadata", "instance-data",
    "instance-data.ec2.internal", "metadata.tencentyun.com",
};

// True if `name` equals `parent` or is a subdomain of it (a label boundary, not a suffix).
bool equals_or_subdomain(std::string_view name, std::string_view parent) {
  if (name.size() == parent.size()) {
    return name == parent;
  }
  return name.size() > parent.size() && name.ends_with(parent) &&
         name[name.size() - parent.size() - 1] == '.';
}

// Matches an IP destination against a list in every spelling that reaches the same machine: an
// IPv6 address that carries an IPv4 one (mapped, NAT64, ...) also matches the IPv4 entry.
std::optional<RuleMatch> match_list(const DomainSet& list, const Host& host, std::uint16_t port) {
  if (auto match = list.match(host, port)) {
    return match;
  }
  if (host.kind == HostKind::ipv6) {
    if (auto embedded = embedded_ipv4(host.address)) {
      const Host v4{HostKind::ipv4, embedded->address.to_string(), embedded->address};
      return list.match(v4, port);
    }
  }
  return std::nullopt;
}

Decision deny(Reason reason, AddressClass cls = AddressClass::public_address) {
  return Decision{Verdict::deny, reason, std::nullopt, cls};
}

}  // namespace

std::string rule_text(const RuleMatch& rule) {
  return std::string(rule.source) + ":" + std::to_string(rule.line) + " " + std::string(rule.entry);
}

std::string rule_text(const Decision& decision) {
  return decision.rule ? rule_text(*decision.rule) : std::string();
}

bool is_localhost_name(std::string_view name) { return equals_or_subdomain(name, "localhost"); }

Policy::Policy(PolicyOptions options, DomainSet blocklist, std::optional<DomainSet> allowlist)
    : Policy(std::move(options), std::make_shared<const DomainSet>(std::move(blocklist)),
             allowlist ? std::make_shared<const DomainSet>(std::move(*allowlist)) : nullptr) {}

Policy::Policy(PolicyOptions options, std::shared_ptr<const DomainSet> blocklist,
               std::shared_ptr<const DomainSet> allowlist,
               std::shared_ptr<const RequestRules> requests,
               std::shared_ptr<const BudgetRules> budgets)
    : options_(std::move(options)),
      blocklist_(std::move(blocklist)),
      allowlist_(std::move(allowlist)),
      requests_(requests ? std::move(requests) : std::make_shared<const RequestRules>()),
      budgets_(budgets ? std::move(budgets) : std::make_shared<const BudgetRules>()) {
  for (auto port : options_.ssh_ports) {
    ssh_ports_.set(port);
  }
  for (auto port : options_.allowed_ports) {
    allowed_ports_.set(port);
  }
}

bool Policy::is_git_host(std::string_view name) const {
  return std::any_of(options_.git_hosts.begin(), options_.git_hosts.end(),
                     [name](const std::string& git) { return equals_or_subdomain(name, git); });
}

// What an address's class means under the options: nothing (allowed), or a denial.
// Loopback is not handled here: it has its own switch and comes first.
std::optional<Decision> Policy::check_address_class(AddressClass cls) const {
  switch (cls) {
    case AddressClass::loopback:
    case AddressClass::unspecified:
      if (options_.block_loopback) {
        return deny(Reason::loopback, cls);
      }
      return std::nullopt;
    case AddressClass::metadata:
    case AddressClass::link_local:
      if (!options_.allow_metadata) {
        return deny(Reason::metadata_address, cls);
      }
      return std::nullopt;
    case AddressClass::private_network:
    case AddressClass::carrier_nat:
    case AddressClass::unique_local:
      if (options_.block_private) {
        return deny(Reason::private_address, cls);
      }
      return std::nullopt;
    case AddressClass::multicast:
    case AddressClass::reserved:
      return deny(Reason::reserved_address, cls);
    case AddressClass::public_address:
      return std::nullopt;
  }
  return std::nullopt;
}

Decision Policy::decide(const Host& host, std::uint16_t port) const {
  if (port == 0) {
    return deny(Reason::invalid_host);
  }
  const AddressClass cls = host.is_ip() ? classify(host.address) : AddressClass::public_address;
  const bool loopback = host.is_ip()
                            ? (cls == AddressClass::loopback || cls == AddressClass::unspecified)
                            : is_localhost_name(host.name);

  // 1. Loopback: the proxy must not be a relay back into this machine.
  if (loopback && options_.block_loopback) {
    return deny(Reason::loopback, host.is_ip() ? cls : AddressClass::loopback);
  }
  // 1a. Nor through any other address of it: a service bound to 0.0.0.0 answers on the LAN
  // and docker0 addresses as on 127.0.0.1.
  if (host.is_ip() && options_.block_loopback && this_machine().contains(host.address)) {
    return deny(Reason::local_address, cls);
  }
  if (host.is_ip()) {
    // 2. Raw IP literals skip every name-based rule, so they are refused unless allowed; an
    // allowed literal is still held to the address rules that a resolved name would meet.
    if (!options_.allow_ip) {
      return deny(Reason::ip_address, cls);
    }
    if (!loopback) {
      if (auto denied = check_address_class(cls)) {
        return *denied;
      }
    }
  } else if (std::find(kMetadataNames.begin(), kMetadataNames.end(), host.name) !=
             kMetadataNames.end()) {
    if (!options_.allow_metadata) {
      return deny(Reason::metadata_address, AddressClass::metadata);
    }
  }

  // 3. Blocklist: an entry always wins, also over the allowlist.
  if (auto match = match_list(*blocklist_, host, port)) {
    Decision decision = deny(Reason::blocklist, cls);
    decision.rule = match;
    return decision;
  }

  // 4. Port policy.
  if (!options_.allowed_ports.empty() && !allowed_ports_.test(port)) {
    return deny(Reason::port_not_allowed, cls);
  }

  // 5. SSH ports reach only git hosts (unless lifted), and nothing when SSH is off.
  if (ssh_ports_.test(port)) {
    if (!options_.allow_ssh) {
      return deny(Reason::ssh_disabled, cls);
    }
    if (!options_.ssh_all_hosts && (host.is_ip() || !is_git_host(host.name))) {
      return deny(Reason::ssh_non_git_host, cls);
    }
  }

  // 6. Allowlist mode: only what it names.
  if (allowlist_) {
    if (auto match = match_list(*allowlist_, host, port)) {
      return Decision{Verdict::allow, Reason::allowed, match, cls};
    }
  }
  // 7. No rule decided: the unknown-destination mode says.
  return decide_unknown(cls);
}

Decision Policy::decide_unknown(AddressClass cls) const {
  Decision decision{Verdict::allow, Reason::allowed, std::nullopt, cls};
  decision.unknown = true;
  const Reason denied = allowlist_ ? Reason::not_allowlisted : Reason::unknown_destination;
  switch (options_.unknown) {
    case UnknownMode::usual:
      if (allowlist_) {
        decision.verdict = Verdict::deny;
        decision.reason = Reason::not_allowlisted;
      }
      break;
    case UnknownMode::deny:
      decision.verdict = Verdict::deny;
      decision.reason = denied;
      break;
    case UnknownMode::ask:
      decision.verdict = Verdict::deny;
      decision.reason = Reason::unknown_destination;
      decision.ask = true;
      break;
    case UnknownMode::allow:
      break;
  }
  return decision;
}

std::optional<Decision> Policy::enforced_anyway(const Host& host, std::uint16_t port) const {
  if (port == 0) {
    return deny(Reason::invalid_host);
  }
  if (!host.is_ip()) {
    if (is_localhost_name(host.name) && options_.block_loopback) {
      return deny(Reason::loopback, AddressClass::loopback);
    }
    if (!options_.allow_metadata && std::find(kMetadataNames.begin(), kMetadataNames.end(),
                                              host.name) != kMetadataNames.end()) {
      return deny(Reason::metadata_address, AddressClass::metadata);
    }
    return std::nullopt;
  }
  if (options_.block_loopback && this_machine().contains(host.address) &&
      classify(host.address) != AddressClass::loopback) {
    return deny(Reason::local_address, classify(host.address));
  }
  if (auto denied = check_address_class(classify(host.address))) {
    if (!reportable(denied->reason)) {
      return denied;
    }
  }
  return std::nullopt;
}

std::string_view to_string(UnknownMode mode) {
  switch (mode) {
    case UnknownMode::usual:
      return "default";
    case UnknownMode::deny:
      return "deny";
    case UnknownMode::ask:
      return "ask";
    case UnknownMode::allow:
      return "allow";
  }
  return "default";
}

Decision Policy::decide_ssh(const Host& host) const {
  if (!options_.allow_ssh) {
    return deny(Reason::ssh_disabled);
  }
  if (!options_.ssh_all_hosts && (host.is_ip() || !is_git_host(host.name))) {
    return deny(Reason::ssh_non_git_host);
  }
  return Decision{};
}

Decision Policy::decide_resolved(const IpAddress& address, std::uint16_t port) const {
  const AddressClass cls = classify(address);
  if (cls != AddressClass::loopback && cls != AddressClass::unspecified &&
      options_.block_loopback && this_machine().contains(address)) {
    return deny(Reason::local_address, cls);
  }
  if (auto denied = check_address_class(cls)) {
    return *denied;
  }
  // An address on the blocklist is blocked whatever name led to it.
  const Host as_host{address.is_v4() ? HostKind::ipv4 : HostKind::ipv6, address.to_string(),
                     address};
  if (auto match = match_list(*blocklist_, as_host, port)) {
    Decision decision = deny(Reason::blocklist, cls);
    decision.rule = match;
    return decision;
  }
  return Decision{Verdict::allow, Reason::allowed, std::nullopt, cls};
}

// Why the SSH rules applied: the port is an SSH port, or the client spoke SSH on another port.
std::string Policy::ssh_reason(std::uint16_t port) const {
  if (ssh_ports_.test(port)) {
    return "port " + std::to_string(port) + " is an SSH port";
  }
  return "the client speaks SSH on port " + std::to_string(port);
}

std::string Policy::explain(const Decision& decision, const Host& host, std::uint16_t port) const {
  if (decision.rule && !decision.rule->message.empty()) {
    // The entry's own message (its `#!` comment) follows the gate's sentence: the agent reads
    // why, then what to do instead.
    Decision plain = decision;
    plain.rule->message = {};
    std::string message(decision.rule->message);
    if (!message.ends_with('.') && !message.ends_with('!') && !message.ends_with('?')) {
      message += '.';
    }
    return explain(plain, host, port) + " " + message;
  }
  const std::string target = host.display() + ":" + std::to_string(port);
  auto rule_text = [&decision]() {
    if (!decision.rule) {
      return std::string();
    }
    return " '" + std::string(decision.rule->entry) + "' (" + std::string(decision.rule->source) +
           " line " + std::to_string(decision.rule->line) + ")";
  };
  const std::string cls(to_string(decision.address_class));
  switch (decision.reason) {
    case Reason::allowed:
      if (decision.rule) {
        return target + " is allowed by the allowlist entry" + rule_text() + ".";
      }
      return target + " is allowed: no rule denies it.";
    case Reason::invalid_host:
      return target + " is not a valid destination.";
    case Reason::loopback:
      return target + " is this machine (" + cls +
             "), and connections back into this machine are blocked.";
    case Reason::local_address:
      return target + " is one of this machine's own addresses (" + cls +
             "), and connections back into this machine are blocked.";
    case Reason::ip_address:
      return target + " is a raw IP address; only host names are allowed (GOOSE_SANDBOX_ALLOW_IP).";
    case Reason::metadata_address:
      return target + " is a cloud metadata or link-local address (" + cls +
             "), which is always blocked (SANDGATE_ALLOW_METADATA).";
    case Reason::private_address:
      return target + " is on a private network (" + cls +
             "), and private networks are blocked (SANDGATE_BLOCK_PRIVATE).";
    case Reason::reserved_address:
      return target + " is a reserved or multicast address (" + cls + ") that is never dialled.";
    case Reason::blocklist:
      return host.name + " is blocked by the blocklist entry" + rule_text() + ".";
    case Reason::port_not_allowed:
      return "port " + std::to_string(port) + " is not an allowed port (SANDGATE_ALLOWED_PORTS).";
    case Reason::ssh_disabled:
      return ssh_reason(port) + ", and SSH is disabled (GOOSE_SANDBOX_ALLOW_SSH).";
    case Reason::ssh_non_git_host:
      return ssh_reason(port) + ", and " + host.display() +
             " is not a git host (GOOSE_SANDBOX_GIT_HOSTS).";
    case Reason::not_allowlisted:
      return host.display() + " is not on the allowlist (SANDGATE_ALLOWLIST).";
    case Reason::unknown_destination:
      if (decision.ask) {
        return "no rule decides " + target + ", and it is to be asked about (SANDGATE_UNKNOWN).";
      }
      return "no rule decides " + target +
             ", and destinations no rule decides are denied (SANDGATE_UNKNOWN).";
    case Reason::ask_denied:
      return "a person answered the question about " + target + " with deny.";
    case Reason::ask_timeout:
      return "nobody answered the question about " + target +
             " in time, and the ask default is deny (SANDGATE_ASK_TIMEOUT, SANDGATE_ASK_DEFAULT).";
    case Reason::ask_unavailable:
      return "nobody can be asked about " + target +
             " now, and the ask default is deny (SANDGATE_ASK_DEFAULT).";
    case Reason::launchdarkly:
      return host.display() + " is not allowed by the LaunchDarkly allowlist.";
    case Reason::launchdarkly_unreachable:
      return "LaunchDarkly gave no answer for " + host.display() +
             ", and its failover mode is deny (GOOSE_SANDBOX_LD_FAILOVER).";
    case Reason::sni_mismatch:
      return "the TLS ClientHello for " + target +
             " names a different server (SANDGATE_SNI_CHECK).";
    case Reason::sni_missing:
      return "the TLS ClientHello for " + target +
             " names no server (no SNI), so the server it reaches cannot be checked against " +
             host.display() + " (SANDGATE_SNI_CHECK).";
    case Reason::protocol_mismatch:
      return "the client did not start TLS on " + target +
             ", a TLS port (SANDGATE_TLS_PORTS, SANDGATE_SNI_CHECK).";
    default:
      // The proxy's own reasons (the request, DNS, connect, the gate) are never a policy
      // decision; the sessions write their own sentences for them. The table's line serves.
      return target + ": " + std::string(reason_info(decision.reason).description) + ".";
  }
}

}  // namespace sandgate::rules
