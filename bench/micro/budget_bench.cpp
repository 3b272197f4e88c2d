// What counting a tunnel's bytes against egress budgets costs (proxy/budget/), per read the relay
// makes (a 64 KiB pipeful): reserving before it and settling after, for a destination one limit
// counts and one three limits count (`*`, its name, its address, as the dev suggestion's lines
// do), against the check a tunnel with no budget makes (the rules are empty) and against one
// 64 KiB memcpy, the least a copying relay would spend on the bytes themselves. Compare the
// ratios in one run: the machine is shared and noisy. The relay end to end, budgets on and off:
// bench/e2e/compare.sh's sandgate-budgets target (bench/README.md).
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "proxy/budget/destination_budgets.hpp"
#include "rules/budgets.hpp"

namespace {

namespace rules = sandgate::rules;
namespace budget = sandgate::budget;

constexpr std::size_t kPipeful = 64 * 1024;

std::shared_ptr<const rules::BudgetRules> parse(std::string_view text) {
  std::vector<rules::LoadIssue> issues;
  return std::make_shared<const rules::BudgetRules>(
      rules::BudgetRules::parse(text, "budgets.txt", issues));
}

void BM_Memcpy64KiB(benchmark::State& state) {
  std::string from(kPipeful, 'x');
  std::string to(kPipeful, ' ');
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), kPipeful);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Memcpy64KiB);

// state.range(0): 0 no budget applies, 1 one limit, 3 three limits.
void BM_ReserveAndSettle(benchmark::State& state) {
  const char* text = state.range(0) == 0   ? "other.test up=1000TB\n"
                     : state.range(0) == 1 ? "* up=1000TB\n"
                                           : "* up=1000TB\ngithub.com up=1000TB/day\n"
                                             "140.82.112.3 up=1000TB/hour\n";
  budget::Ledger ledger;
  const auto rules_in_force = parse(text);
  const rules::Host host = *rules::parse_host("github.com");
  budget::DestinationBudgets budgets(ledger, rules_in_force, host, 443,
                                     rules::parse_host("140.82.112.3")->address);
  for (auto _ : state) {
    // What TunnelSession::reserve and ::settle do per read.
    if (budgets.made_from() != rules_in_force.get() || budgets.empty()) {
      benchmark::DoNotOptimize(budgets);
      continue;
    }
    const std::uint64_t granted = budgets.reserve(rules::BudgetKind::up, kPipeful);
    budgets.settle(rules::BudgetKind::up, granted, granted - 100);
    benchmark::DoNotOptimize(granted);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPipeful));
}
BENCHMARK(BM_ReserveAndSettle)->Arg(0)->Arg(1)->Arg(3);

}  // namespace
