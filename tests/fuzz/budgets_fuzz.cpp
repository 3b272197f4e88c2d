// Fuzz target: the budgets file (rules/budgets.hpp) on arbitrary text of up to 64 KiB, and the
// ledger's accounting of what it loaded (proxy/budget/).
//
// Invariants, beyond "no crash, no out-of-bounds access, no undefined behaviour":
//   - every issue names a line that exists, and every line with an entry is loaded or reported;
//   - at most kMaxBudgetLines lines load; each has at least one limit, and limit keys are
//     distinct across the file (one account per entry, kind and window);
//   - a limit's text read back (KIND=AMOUNT in bytes or a count) parses to the same limit;
//   - a destination's reservation never takes more than any of its limits has left, and what is
//     reserved and not used is given back exactly (spent returns to what it was).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "proxy/budget/destination_budgets.hpp"
#include "rules/budgets.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

namespace rules = sandgate::rules;
namespace budget = sandgate::budget;
using sandgate::fuzz::escaped;

constexpr std::size_t kMaxInput = 64 * 1024;

// (for_each_line skips a leading byte order mark, as the parser does: once.)
std::size_t lines_with_entries(std::string_view text) {
  std::size_t count = 0;
  rules::for_each_line(text, [&](std::string_view line, std::uint32_t) {
    count += rules::entry_text(line).empty() ? 0 : 1;
  });
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > kMaxInput) {
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<rules::LoadIssue> issues;
  auto parsed = std::make_shared<const rules::BudgetRules>(
      rules::BudgetRules::parse(text, "fuzz.txt", issues));
  const rules::BudgetRules& loaded = *parsed;

  const std::size_t entries = lines_with_entries(text);
  FUZZ_CHECK(loaded.lines().size() + issues.size() == entries,
             "loaded " + std::to_string(loaded.lines().size()) + " + issues " +
                 std::to_string(issues.size()) + " != lines " + std::to_string(entries) + " in " +
                 escaped(text));
  FUZZ_CHECK(loaded.lines().size() <= rules::kMaxBudgetLines, "too many lines loaded");
  std::set<std::string> keys;
  for (const rules::BudgetLine& line : loaded.lines()) {
    FUZZ_CHECK(!line.limits.empty(), "a line without a limit: " + escaped(line.entry));
    for (const rules::BudgetLimit& limit : line.limits) {
      FUZZ_CHECK(keys.insert(limit.key).second, "two limits share the key " + escaped(limit.key));
      const bool bytes =
          limit.kind == rules::BudgetKind::up || limit.kind == rules::BudgetKind::down;
      const std::string again = std::string(rules::to_string(limit.kind)) + "=" +
                                std::to_string(limit.amount) + (bytes ? "B" : "") + "/" +
                                std::string(rules::to_string(limit.window));
      auto reread = rules::parse_budget_limit(again);
      FUZZ_CHECK(reread && reread->amount == limit.amount && reread->kind == limit.kind &&
                     reread->window == limit.window,
                 "the limit does not read back: " + again);
      FUZZ_CHECK(!rules::describe_limit(limit).empty(), "no description");
    }
  }
  for (const rules::LoadIssue& issue : issues) {
    FUZZ_CHECK(issue.line >= 1 && !issue.message.empty(), "an issue without line or message");
  }

  // The accounting, for a few destinations every line may match.
  budget::Ledger ledger;
  for (const std::string_view name : {"example.com", "a.b.example.org", "10.0.0.1"}) {
    const rules::Host host = *rules::parse_host(name);
    budget::DestinationBudgets destination(ledger, parsed, host, 443);
    for (const rules::BudgetKind kind : {rules::BudgetKind::up, rules::BudgetKind::down}) {
      const std::uint64_t wanted = 1 + size * 37;
      const std::uint64_t got = destination.reserve(kind, wanted);
      FUZZ_CHECK(got <= wanted, "reserved more than wanted");
      destination.settle(kind, got, got / 2);
      const std::uint64_t again = destination.reserve(kind, wanted);
      FUZZ_CHECK(again <= wanted, "reserved more than wanted");
      destination.settle(kind, again, 0);
      (void)destination.count_one(rules::BudgetKind::connections, true);
      (void)destination.count_one(rules::BudgetKind::requests, false);
    }
  }
  (void)ledger.render_prometheus(loaded);
  return 0;
}
