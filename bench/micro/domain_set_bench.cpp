// Micro-benchmarks for DomainSet: loading a 1,000,000-line rules file, and matching hosts of 2 and
// 6 labels that hit and miss. Hosts rotate through an array so that lookups touch many parts of
// the table rather than one entry that stays in cache. The argument is the array's size: 1024
// distinct hosts (a busy agent session; the set's lines it needs mostly stay in cache) and 65536
// (nearly every lookup goes to memory). Results and how to rerun them: bench/rules.md.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rules/domain_set.hpp"
#include "rules/host.hpp"

namespace sandgate::rules {
namespace {

constexpr std::size_t kEntries = 1'000'000;

// SplitMix64: a deterministic stream, so every run loads the same file.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr const char* kTlds[] = {"com", "net", "org", "io", "de", "info", "dev", "co"};
constexpr const char* kWords[] = {"example-domain", "cdn-edge",   "tracker", "adserver",
                                  "mail-relay",     "shop-front", "static",  "api-gateway"};

std::string tld_of(std::size_t i) { return kTlds[mix(i) % std::size(kTlds)]; }
std::string word_of(std::size_t i) { return kWords[mix(i + kEntries) % std::size(kWords)]; }

// Entry i of the synthetic file, as a bare name: a third each of 2, 3 and 4 labels,
// e.g. `site12.org`, `host13.cdn-edge.net`, `api.host14.static.com`.
std::string name_of(std::size_t i) {
  const std::string n = std::to_string(i);
  switch (i % 3) {
    case 0:
      return "site" + n + "." + tld_of(i);
    case 1:
      return "host" + n + "." + word_of(i) + "." + tld_of(i);
    default:
      return "api.host" + n + "." + word_of(i) + "." + tld_of(i);
  }
}

// The whole file. About 1% of lines carry a wildcard, a port or a comment, like a real list.
std::string make_text() {
  std::string text;
  text.reserve(kEntries * 32);
  text += "# synthetic blocklist, " + std::to_string(kEntries) + " entries\n";
  for (std::size_t i = 0; i < kEntries; ++i) {
    const std::uint64_t r = mix(i * 7 + 3) % 300;
    if (r == 0) {
      text += "*.";
    }
    text += name_of(i);
    if (r == 1) {
      text += ":443";
    } else if (r == 2) {
      text += "  # added by hand";
    }
    text += '\n';
  }
  return text;
}

enum class Lookup { hit_2_labels, miss_2_labels, hit_6_labels, miss_6_labels };

// Entry i for a 2-label host must be a 2-label name without `*.` (see make_text()).
std::size_t plain_entry(std::uint64_t seed, std::size_t residue) {
  for (std::size_t i = (mix(seed) % (kEntries / 3)) * 3 + residue;; i = (i + 3) % kEntries) {
    if (mix(i * 7 + 3) % 300 > 1) {
      return i;
    }
  }
}

std::string host_text(Lookup kind, std::size_t k) {
  switch (kind) {
    case Lookup::hit_2_labels:
      return name_of(plain_entry(k, 0));
    case Lookup::miss_2_labels:
      return "nosuch" + std::to_string(k) + "." + tld_of(k);
    case Lookup::hit_6_labels:
      // Half hit a 2-label entry four labels up, half a 4-label entry two labels up.
      return k % 2 == 0 ? "a.b.c.d." + name_of(plain_entry(k, 0))
                        : "x.y." + name_of(plain_entry(k, 2));
    case Lookup::miss_6_labels:
      return "a.b.c.d.nosuch" + std::to_string(k) + "." + tld_of(k);
  }
  return {};
}

std::vector<Host> make_hosts(Lookup kind, std::size_t count) {
  std::vector<Host> hosts;
  hosts.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    auto host = parse_host(host_text(kind, k));
    if (host) {
      hosts.push_back(std::move(*host));
    }
  }
  return hosts;
}

const std::string& file_text() {
  static const std::string text = make_text();
  return text;
}

// Built once, outside any timed region; BM_Load1M times the same work on its own.
const DomainSet& loaded_set() {
  static const DomainSet set = [] {
    std::vector<LoadIssue> issues;
    return DomainSet::parse(file_text(), "synthetic", issues);
  }();
  return set;
}

double bytes_per_entry(const DomainSet& set) {
  return set.size() == 0
             ? 0.0
             : static_cast<double>(set.memory_bytes()) / static_cast<double>(set.size());
}

void BM_Load1M(benchmark::State& state) {
  const std::string& text = file_text();
  std::size_t entries = 0;
  std::size_t issue_count = 0;
  double per_entry = 0;
  for (auto _ : state) {
    std::vector<LoadIssue> issues;
    DomainSet set = DomainSet::parse(text, "synthetic", issues);
    entries = set.size();
    issue_count = issues.size();
    per_entry = bytes_per_entry(set);
    benchmark::DoNotOptimize(set);
  }
  if (entries != kEntries || issue_count != 0) {
    state.SkipWithError("the synthetic file did not load cleanly");
  }
  state.counters["entries"] = static_cast<double>(entries);
  state.counters["bytes_per_entry"] = per_entry;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Load1M)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

void BM_Match(benchmark::State& state, Lookup kind) {
  const DomainSet& set = loaded_set();
  const auto count = static_cast<std::size_t>(state.range(0));  // a power of two
  const std::vector<Host> hosts = make_hosts(kind, count);
  const bool want_hit = kind == Lookup::hit_2_labels || kind == Lookup::hit_6_labels;
  if (hosts.size() != count) {
    state.SkipWithError("a generated host did not parse");
    return;
  }
  std::size_t next = 0;
  std::size_t wrong = 0;
  for (auto _ : state) {
    const std::optional<RuleMatch> m = set.match(hosts[next], 443);
    wrong += m.has_value() != want_hit ? 1 : 0;
    benchmark::DoNotOptimize(m);
    next = (next + 1) & (count - 1);
  }
  if (wrong != 0) {
    state.SkipWithError("a lookup gave the wrong answer");
  }
  state.counters["bytes_per_entry"] = bytes_per_entry(set);
}
BENCHMARK_CAPTURE(BM_Match, hit_2_labels, Lookup::hit_2_labels)
    ->Arg(1 << 10)
    ->Arg(1 << 16)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_Match, miss_2_labels, Lookup::miss_2_labels)
    ->Arg(1 << 10)
    ->Arg(1 << 16)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_Match, hit_6_labels, Lookup::hit_6_labels)
    ->Arg(1 << 10)
    ->Arg(1 << 16)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_Match, miss_6_labels, Lookup::miss_6_labels)
    ->Arg(1 << 10)
    ->Arg(1 << 16)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

// The cost of `re:` entries: 64 patterns in one RE2::Set, hosts that no name rule catches.
void BM_MatchRegex(benchmark::State& state) {
  std::string text;
  for (int i = 0; i < 64; ++i) {
    text += "re:(.*\\.)?t" + std::to_string(i) + "-[a-z0-9]+\\.example\\.(com|net)\n";
  }
  std::vector<LoadIssue> issues;
  const DomainSet set = DomainSet::parse(text, "regex", issues);
  std::vector<Host> hosts;
  for (std::size_t k = 0; k < 1024; ++k) {
    const std::string name = k % 2 == 0 ? "a.t" + std::to_string(k % 64) + "-x9.example.com"
                                        : "a.u" + std::to_string(k % 64) + "-x9.example.com";
    hosts.push_back(*parse_host(name));
  }
  std::size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(set.match(hosts[next], 443));
    next = (next + 1) & 1023;
  }
}
BENCHMARK(BM_MatchRegex);

void BM_MatchEmptySet(benchmark::State& state) {
  const DomainSet set;
  const Host host = *parse_host("a.b.c.d.evil.com");
  for (auto _ : state) {
    benchmark::DoNotOptimize(set.match(host, 443));
  }
}
BENCHMARK(BM_MatchEmptySet);

}  // namespace
}  // namespace sandgate::rules
