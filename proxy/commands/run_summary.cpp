// The run's summary of refused destinations. See run_summary.hpp.
#include "proxy/commands/run_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "config/embedded_defaults.hpp"
#include "rules/reason.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::commands {
namespace {

// The host as an allowlist entry names it: an IPv6 literal keeps its brackets.
std::string destination(const log::DeniedDestination& d) {
  return d.port == 0 ? d.host : d.host + ":" + std::to_string(d.port);
}

// "file:line entry" -> "file:line".
std::string rule_place(const std::string& rule) { return rule.substr(0, rule.find(' ')); }

std::string plural(std::uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string how_to_allow(const log::DeniedDestination& d, const settings::Settings& settings) {
  using rules::Reason;
  const auto reason = rules::find_reason(d.reason);
  if (!reason) {
    return "see the gate's log for this reason";
  }
  const std::string quoted = "\"" + d.host + "\"";
  switch (*reason) {
    case Reason::not_allowlisted:
      if (!settings.allowlist_path.empty()) {
        return "add " + quoted + " to " + settings.allowlist_path;
      }
      return "add " + quoted + " to an allowlist file of your own and give it beside the " +
             "preset: --allowlist " +
             (settings.allowlist_presets.empty()
                  ? std::string("FILE")
                  : defaults::preset_source(settings.allowlist_presets.front()) + ",FILE");
    case Reason::blocklist:
      if (d.rule.rfind("preset:", 0) == 0) {
        return "the entry at " + rule_place(d.rule) + " blocks it";
      }
      return "remove or narrow the blocklist entry at " + rule_place(d.rule);
    case Reason::port_not_allowed:
      return "add port " + std::to_string(d.port) + " to --allowed-ports (SANDGATE_ALLOWED_PORTS)";
    case Reason::ssh_disabled:
      return "--allow-ssh=true (GOOSE_SANDBOX_ALLOW_SSH) allows SSH to git hosts";
    case Reason::ssh_non_git_host:
      return "add " + quoted + " to --git-hosts (GOOSE_SANDBOX_GIT_HOSTS)";
    case Reason::ip_address:
      return "connect by name, or --allow-ip=true (GOOSE_SANDBOX_ALLOW_IP) for IP literals";
    case Reason::private_address:
      return "an address rule: only --block-private=false (SANDGATE_BLOCK_PRIVATE) lifts it";
    case Reason::loopback:
    case Reason::local_address:
    case Reason::metadata_address:
    case Reason::reserved_address:
      return "cannot be allowed: an address rule, not a list entry";
    case Reason::launchdarkly:
    case Reason::launchdarkly_unreachable:
      return "decided by the LaunchDarkly flag \"" + settings.ld_flag + "\": change it there";
    case Reason::sni_mismatch:
    case Reason::sni_missing:
    case Reason::protocol_mismatch:
      return "cannot be allowed: the client's first bytes did not match what it asked for";
    case Reason::secret_refused:
      return "not a destination rule: the command sent a masked secret's sentinel where the gate "
             "does not fill it in (another host, the URL, a field other than a credential's); "
             "bind the secret to the host with --secret NAME=HOST if it belongs there";
    case Reason::budget_exhausted:
      return "a budget in " +
             (settings.budgets_path.empty() ? std::string("the budgets file")
                                            : settings.budgets_path) +
             " is spent: raise its amount (the reload keeps what was spent)";
    default:
      return "not a destination rule: the request itself was refused (" +
             std::string(rules::reason_info(*reason).description) + ")";
  }
}

std::string render_run_summary(const log::DenialCounts& counts, const settings::Settings& settings,
                               std::size_t max_listed) {
  if (counts.total == 0) {
    return {};
  }
  const auto would = std::count_if(counts.destinations.begin(), counts.destinations.end(),
                                   [](const auto& d) { return d.verdict == "would-deny"; });
  std::string out = "sandgate run: the gate ";
  out += would == 0 ? "refused"
         : static_cast<std::size_t>(would) == counts.destinations.size()
             ? "would have refused (report-only)"
             : "refused, or would have refused,";
  out += " " + plural(counts.total, "connection", "connections") + " during the run:\n";
  const std::size_t listed = std::min(max_listed, counts.destinations.size());
  for (std::size_t i = 0; i < listed; ++i) {
    const auto& d = counts.destinations[i];
    out +=
        "  " + d.verdict + " " + destination(d) + " (" + d.reason + ") x" + std::to_string(d.count);
    out += d.rule.empty() ? ", no rule matched" : ", rule " + d.rule;
    out += "\n    to allow: " + how_to_allow(d, settings) + "\n";
  }
  std::uint64_t rest = counts.untracked;
  for (std::size_t i = listed; i < counts.destinations.size(); ++i) {
    rest += counts.destinations[i].count;
  }
  if (rest > 0) {
    const std::size_t more = counts.destinations.size() - listed;
    out += "  and ";
    out += more > 0 ? plural(more, "more destination", "more destinations") +
                          (counts.untracked > 0 ? " and others" : "")
                    : std::string("other destinations");
    out += " (" + plural(rest, "connection", "connections") + "); the gate's log has every one\n";
  }
  return out;
}

namespace {

// "1.2 MB", "830 kB", "12 bytes": bytes rounded for a person (the log has them exactly).
std::string rounded_bytes(std::uint64_t bytes) {
  if (bytes < 1000) {
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  }
  const char* units[] = {"kB", "MB", "GB", "TB", "PB"};
  double value = static_cast<double>(bytes) / 1000;
  std::size_t unit = 0;
  while (value >= 1000 && unit + 1 < std::size(units)) {
    value /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, value < 10 ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return text;
}

std::string amount_text(rules::BudgetKind kind, std::uint64_t amount) {
  return kind == rules::BudgetKind::up || kind == rules::BudgetKind::down ? rounded_bytes(amount)
                                                                          : std::to_string(amount);
}

}  // namespace

std::string render_budget_summary(const log::TrafficCounts& traffic,
                                  const rules::BudgetRules& budgets, const budget::Ledger& ledger) {
  if (budgets.empty()) {
    return {};
  }
  std::string out = "sandgate run: sent / received per destination during the run:\n";
  const std::size_t listed = std::min(kSummaryDestinations, traffic.destinations.size());
  for (std::size_t i = 0; i < listed; ++i) {
    const auto& d = traffic.destinations[i];
    const std::string host = d.host + ":" + std::to_string(d.port);
    out += "  " + host + "  " + rounded_bytes(d.sent) + " / " + rounded_bytes(d.received) + "\n";
  }
  log::DestinationTraffic rest = traffic.others;
  std::size_t more = 0;
  for (std::size_t i = listed; i < traffic.destinations.size(); ++i) {
    rest.sent += traffic.destinations[i].sent;
    rest.received += traffic.destinations[i].received;
    ++more;
  }
  if (rest.sent + rest.received > 0 || more > 0) {
    out += "  and " +
           (more > 0 ? plural(more, "more destination", "more destinations")
                     : std::string("other destinations")) +
           "  " + rounded_bytes(rest.sent) + " / " + rounded_bytes(rest.received) + "\n";
  }
  if (traffic.destinations.empty() && rest.sent + rest.received == 0) {
    out += "  (nothing)\n";
  }
  out += "sandgate run: budgets (spent of amount):\n";
  for (const rules::BudgetLine& line : budgets.lines()) {
    out += "  " + line.rule() + ":";
    for (std::size_t i = 0; i < line.limits.size(); ++i) {
      const rules::BudgetLimit& limit = line.limits[i];
      const auto account = ledger.find(limit.key);
      const std::uint64_t spent = account ? account->state().spent : 0;
      out += std::string(i == 0 ? " " : ", ") + std::string(rules::to_string(limit.kind)) + " " +
             amount_text(limit.kind, spent) + " of " + amount_text(limit.kind, limit.amount) +
             " per " + std::string(rules::to_string(limit.window)) +
             (spent >= limit.amount ? " (SPENT)" : "");
    }
    out += "\n";
  }
  return out;
}

std::string render_store_attempts(const std::vector<sandbox::StoreAttempt>& attempts,
                                  bool complete) {
  if (attempts.empty()) {
    return complete ? std::string()
                    : "sandgate run: the command's attempts on hidden credential "
                      "stores were too many to count\n";
  }
  std::string out = "sandgate run: the command tried to read hidden credential stores:\n";
  const std::size_t listed = std::min(kSummaryDestinations, attempts.size());
  for (std::size_t i = 0; i < listed; ++i) {
    const auto& attempt = attempts[i];
    out += "  " + std::string(attempt.listed ? "listed " : "read ") + attempt.path + " x" +
           std::to_string(attempt.count) + "\n";
  }
  if (attempts.size() > listed) {
    out += "  and " + plural(attempts.size() - listed, "more store", "more stores") + "\n";
  }
  if (!complete) {
    out += "  (and more: too many attempts to count them all)\n";
  }
  out +=
      "    to allow one: --allow-read PATH (or --secret NAME=HOST to let the command use a "
      "credential without reading it)\n";
  return out;
}

namespace {

// One group of the audit's lines under `title`, with what to do about them.
void render_group(const std::vector<std::string>& lines, const std::string& title,
                  const std::string& advice, std::string& out) {
  if (lines.empty()) {
    return;
  }
  out += "sandgate run: " + title + ":\n";
  const std::size_t listed = std::min(kSummaryDestinations, lines.size());
  for (std::size_t i = 0; i < listed; ++i) {
    out += "  " + sandbox::terminal_safe(lines[i]) + "\n";  // paths the command named
  }
  if (lines.size() > listed) {
    out += "  and " + plural(lines.size() - listed, "more", "more") + "\n";
  }
  out += "    " + advice + "\n";
}

}  // namespace

std::string render_git_audit(const sandbox::GitAudit& audit) {
  std::string out;
  render_group(audit.unmoved,
               "WARNING: could NOT be moved aside, and git, an editor or a shell would obey them",
               "do not run git, an editor or a shell in their folders until you have removed them "
               "(a hard link: remove that name alone; its file's other names may be yours)",
               out);
  render_group(audit.auto_run,
               "files that editors, shells, package managers and agents run or trust, or links "
               "at their names, written by the command (at any depth)",
               "review them, and what a link leads to, before you open or enter their folders in "
               "an editor, a shell with direnv or mise, a package manager or an agent "
               "(--allow-write PATH lets the command write one at the top)",
               out);
  render_group(audit.hidden, "index entries the command hid from git status and git diff",
               "git update-index --no-skip-worktree / --no-assume-unchanged -- PATH shows their "
               "changes again",
               out);
  render_group(audit.actions, "moved aside or put back, as git would have obeyed them",
               "look at the moved files before you use them", out);
  render_group(audit.incomplete, "NOT checked whole after the run (treat as suspect)",
               "look for new .git entries, links in git folders and hooks there before running "
               "git",
               out);
  return out;
}

}  // namespace sandgate::commands
