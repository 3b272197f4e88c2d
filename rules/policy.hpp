// The decision: may a connection to host:port leave the machine, and if not, why.
//
// Checks run in goose's order, first match wins, with sandgate's additions in between:
//   1. loopback destination (when blocked)                  -> loopback
//      one of this machine's other addresses (when blocked) -> local-address
//      (rules/local_addresses.hpp)
//   2. IP literal (unless allowed)                          -> ip-address
//      an allowed IP literal is still classified:           -> metadata-address, private-address,
//                                                              reserved-address
//   3. blocklist                                            -> blocklist
//   4. port policy (SANDGATE_ALLOWED_PORTS)                 -> port-not-allowed
//   5. SSH ports: SSH disabled, or host not a git host      -> ssh-disabled, ssh-non-git-host
//   6. allowlist mode (SANDGATE_ALLOWLIST)                  -> not-allowlisted
//   7. allow (a remote allowlist, LaunchDarkly, may still deny later: it runs in the proxy)
//
// Checks 6 and 7 are where no rule decided: the destination is *unknown* (Decision::unknown).
// What an unknown destination gets is PolicyOptions::unknown: today's behaviour (allowed with a
// blocklist only, not-allowlisted in allowlist mode), always denied (unknown-destination), always
// allowed, or asked about (Decision::ask: the proxy holds the request on a question, proxy/ask/).
// Address rules and the blocklist always win over it: they come first.
//
// A Policy is immutable once built, so one snapshot can be shared by every worker thread and
// swapped whole on reload; decide() is thread-safe, allocation-free, and costs O(labels).
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/budgets.hpp"
#include "rules/domain_set.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"
#include "rules/reason.hpp"
#include "rules/request_rules.hpp"

namespace sandgate::rules {

// Verdict and Reason, and their table (codes, replies, verdicts): rules/reason.hpp. A decision of
// the policy is always `allow` with Reason::allowed or `deny` with one of the policy's reasons.

struct Decision {
  Verdict verdict = Verdict::allow;
  Reason reason = Reason::allowed;
  std::optional<RuleMatch> rule;  // the list entry that decided, if a list decided
  AddressClass address_class = AddressClass::public_address;  // for address-based reasons
  // No rule decided (checks 6 and 7 of policy.hpp): the verdict is PolicyOptions::unknown's.
  bool unknown = false;
  // Unknown, and --unknown=ask: a person is to be asked. The verdict is then deny with
  // Reason::unknown_destination, which is what a reader that asks nobody (`sandgate check`, a
  // reload's re-judging) takes it for.
  bool ask = false;
  // Allowed by a person's answer to that question (set by the proxy, proxy/ask/), not a rule: a
  // reload that still finds no rule for it does not revoke it.
  bool answered = false;

  bool allowed() const { return verdict == Verdict::allow; }
};

// What a destination no rule decides gets (SANDGATE_UNKNOWN).
enum class UnknownMode : std::uint8_t {
  usual,  // the default: allowed with a blocklist only; not-allowlisted in allowlist mode
  deny,   // denied (not-allowlisted in allowlist mode, unknown-destination otherwise)
  ask,    // held on a question to a person (proxy/ask/)
  allow,  // allowed, also in allowlist mode
};
std::string_view to_string(UnknownMode mode);  // "default", "deny", "ask", "allow"

// The rule that decided, as the log and /denials show it: "file:line entry"; empty when no list
// entry decided.
std::string rule_text(const Decision& decision);
std::string rule_text(const RuleMatch& rule);

struct PolicyOptions {
  bool block_loopback = true;  // GOOSE_SANDBOX_BLOCK_LOOPBACK (goose's default was false)
  bool allow_ip = false;       // GOOSE_SANDBOX_ALLOW_IP
  bool allow_ssh = true;       // GOOSE_SANDBOX_ALLOW_SSH
  bool ssh_all_hosts = false;  // GOOSE_SANDBOX_SSH_ALL_HOSTS
  // GOOSE_SANDBOX_GIT_HOSTS: normalised names; a host matches if equal or a subdomain.
  std::vector<std::string> git_hosts = {"github.com", "gitlab.com", "bitbucket.org",
                                        "ssh.dev.azure.com"};
  std::vector<std::uint16_t> ssh_ports = {22, 2222, 7999};  // SANDGATE_SSH_PORTS
  std::vector<std::uint16_t> allowed_ports;  // SANDGATE_ALLOWED_PORTS; empty = every port
  bool block_private = false;                // SANDGATE_BLOCK_PRIVATE
  bool allow_metadata = false;  // SANDGATE_ALLOW_METADATA: the opt-out for metadata/link-local
  UnknownMode unknown = UnknownMode::usual;  // SANDGATE_UNKNOWN
};

class Policy {
 public:
  Policy(PolicyOptions options, DomainSet blocklist, std::optional<DomainSet> allowlist);
  // Shares already-built sets, so a reload that changes one file need not rebuild the other.
  // `allowlist` null: no allowlist mode. `blocklist` must not be null. `requests` null: no
  // request rules and nothing inspected. `budgets` null: nothing limited (rules/budgets.hpp).
  Policy(PolicyOptions options, std::shared_ptr<const DomainSet> blocklist,
         std::shared_ptr<const DomainSet> allowlist,
         std::shared_ptr<const RequestRules> requests = nullptr,
         std::shared_ptr<const BudgetRules> budgets = nullptr);

  // The decision for a parsed destination.
  Decision decide(const Host& host, std::uint16_t port) const;

  // The decision for a tunnel whose client speaks SSH (whatever the port): the SSH rules of
  // check 5 apply. `host` was already allowed by decide().
  Decision decide_ssh(const Host& host) const;

  // The decision for an address a permitted name resolved to, before the proxy dials it:
  // loopback answers when loopback is blocked, metadata and link-local answers unless allowed,
  // private answers when private networks are blocked, reserved answers always, and addresses
  // the blocklist names (on `port`).
  Decision decide_resolved(const IpAddress& address, std::uint16_t port = 0) const;

  // The denial of host:port that report-only mode does not lift (rules/reason.hpp,
  // kReportableReasons): an invalid port, this machine (when loopback is blocked), cloud metadata
  // and link-local (unless allowed), never-routable IP literals. Nothing when none applies. Used
  // when decide() gave a reportable denial, which may have hidden one of these (an IP literal is
  // refused as `ip-address` before its class is looked at).
  std::optional<Decision> enforced_anyway(const Host& host, std::uint16_t port) const;

  // One human sentence for a decision, e.g. "api.evil.com is blocked by the blocklist entry
  // 'evil.com' (blocked.txt line 3)." Allocates; meant for deny replies and logs.
  std::string explain(const Decision& decision, const Host& host, std::uint16_t port) const;

  const PolicyOptions& options() const { return options_; }
  const DomainSet& blocklist() const { return *blocklist_; }
  const DomainSet* allowlist() const { return allowlist_.get(); }  // null: no allowlist mode
  const std::shared_ptr<const DomainSet>& shared_blocklist() const { return blocklist_; }
  const std::shared_ptr<const DomainSet>& shared_allowlist() const { return allowlist_; }
  // The request rules and inspection patterns (rules/request_rules.hpp); never null.
  const RequestRules& requests() const { return *requests_; }
  const std::shared_ptr<const RequestRules>& shared_requests() const { return requests_; }
  // The budgets (rules/budgets.hpp); never null. What was spent is the gate's (proxy/budget/).
  const BudgetRules& budgets() const { return *budgets_; }
  const std::shared_ptr<const BudgetRules>& shared_budgets() const { return budgets_; }

 private:
  bool is_git_host(std::string_view name) const;
  std::string ssh_reason(std::uint16_t port) const;
  std::optional<Decision> check_address_class(AddressClass cls) const;
  // Check 7: what PolicyOptions::unknown gives a destination no rule decided.
  Decision decide_unknown(AddressClass cls) const;

  PolicyOptions options_;
  std::shared_ptr<const DomainSet> blocklist_;
  std::shared_ptr<const DomainSet> allowlist_;
  std::shared_ptr<const RequestRules> requests_;
  std::shared_ptr<const BudgetRules> budgets_;
  std::bitset<65536> ssh_ports_;
  std::bitset<65536> allowed_ports_;
};

// Names that are loopback by definition (RFC 6761): `localhost` and `*.localhost`.
bool is_localhost_name(std::string_view normalised_name);

}  // namespace sandgate::rules
