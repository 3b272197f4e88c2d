// The summary `sandgate run` prints on standard error when its command has exited: every
// destination the gate refused (or, in report-only mode, would have refused) during the run,
// grouped by destination and reason, with the rule, the count and what would allow it. So a
// failed `npm install` explains itself.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "proxy/budget/ledger.hpp"
#include "proxy/log/denial_tally.hpp"
#include "proxy/log/traffic_tally.hpp"
#include "proxy/settings/settings.hpp"
#include "sandbox-profile/audit/git_audit.hpp"
#include "sandbox-profile/plan/credential_stores.hpp"

namespace sandgate::commands {

// Destinations listed; the rest are "and K more".
inline constexpr std::size_t kSummaryDestinations = 20;

// The summary's text (lines ending in '\n'), or "" when nothing was denied. `settings` are the
// run's (for the files and settings a suggestion names). Pure; thread-safe.
std::string render_run_summary(const log::DenialCounts& counts, const settings::Settings& settings,
                               std::size_t max_listed = kSummaryDestinations);

// What would allow a destination denied for `reason` (a reason code) by `rule` ("file:line
// entry" or empty): a command or setting, or why nothing can. One line, no newline.
std::string how_to_allow(const log::DeniedDestination& denied, const settings::Settings& settings);

// With egress budgets (rules/budgets.hpp): what went to and came from each destination during
// the run, most first (at most kSummaryDestinations, the rest together), and each budget limit's
// spending against its amount, spent ones marked. "" when there are no budgets. Pure apart from
// reading the ledger; thread-safe.
std::string render_budget_summary(const log::TrafficCounts& traffic,
                                  const rules::BudgetRules& budgets, const budget::Ledger& ledger);

// The command's attempts on the hidden credential stores (lines ending in '\n'), or "" when it
// made none that could be seen; `complete` is false when some were lost. At most
// kSummaryDestinations stores are listed. Pure; thread-safe.
std::string render_store_attempts(const std::vector<sandbox::StoreAttempt>& attempts,
                                  bool complete);

// What the check after the run found in the git folders and working folders (lines ending in
// '\n'), or "" when it found nothing: what could not be moved aside (first, loudly), the files
// that tools run or trust that are new or changed,
// index entries hidden from git status, what was moved aside or put back, and the folders that
// could not be checked whole. At most kSummaryDestinations lines per group. Pure; thread-safe.
std::string render_git_audit(const sandbox::GitAudit& audit);

}  // namespace sandgate::commands
