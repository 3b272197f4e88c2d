// DomainSet: the matcher behind the blocklist and the allowlist.
//
// Layout, chosen so that a million entries stay under 100 bytes each and a lookup costs one walk
// over the host, one table probe per label and, on a hit, one more cache line:
//   - each name entry is a record in one byte arena: a 24-byte header (line, source, kind, port
//     scope, chain link) followed by the entry as written. The normalised name is usually inside
//     that text (`*.evil.com:443` holds `evil.com`), else it follows it;
//   - one open-addressing table (linear probing, load <= 0.7) of {record offset, 32-bit tag},
//     keyed on a hash computed over the name from right to left. A lookup hashes the host from
//     its right end and, at each label boundary, already holds the hash of that suffix;
//   - `re:` patterns compiled into one RE2::Set, tried only when no name rule applies.
// Several lines for one name (other ports, `*.` and plain) are chained in file order.
// The two big arrays sit on huge pages where the OS offers them (rules/big_array.hpp): lookups
// land at random places in tens of MiB, and with 4 KiB pages most would also miss the TLB.
// What a line means is rules/rule_line.hpp; this file only stores and matches what it yields.
// (Over 600 lines because the layout, its building and its lookups share the private record
// types above; splitting them would put those types in a header of their own for no reader.)

#include "rules/domain_set.hpp"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <array>
#include <bit>
#include <bitset>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "rules/big_array.hpp"
#include "rules/host.hpp"
#include "rules/rule_line.hpp"

namespace sandgate::rules {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
// A suffix longer than the longest normal-form DNS name (kMaxDnsName) can never equal an entry;
// a DNS name of kMaxDnsName octets has at most this many labels.
constexpr std::size_t kMaxLabels = (kMaxDnsName + 1) / 2;
// Records store the name length in one byte (IPv6 entries with a long zone may exceed it).
constexpr std::size_t kMaxStoredName = kMaxEntryName;
static_assert(kMaxStoredName <= std::numeric_limits<std::uint8_t>::max());
// Budget for the DFA of the combined regex set; RE2's default (8 MiB) is meant for one pattern.
constexpr std::int64_t kRegexSetMaxMem = std::int64_t{64} << 20;

constexpr std::string_view kTooLarge = "the rule set is too large (over 4 GiB of entry text)";

// The start of each name or address record in the arena, read and written with memcpy (records
// are packed byte-aligned). 24 bytes because there may be millions of them.
struct RecordHeader {
  std::uint32_t next = kNone;  // offset of the next record with the same name, in file order
  std::uint32_t line = 0;
  std::uint32_t port_scope = 0;   // 0: any port; otherwise an index into scopes
  std::uint32_t text_length = 0;  // the entry as written (trimmed, comment stripped) follows
  std::uint32_t name_delta = 0;   // the normalised name starts this far into the text
  std::uint16_t source = 0;
  std::uint8_t name_length = 0;
  EntryKind kind = EntryKind::name_and_subdomains;
};
static_assert(sizeof(RecordHeader) == 24 && std::is_trivially_copyable_v<RecordHeader>);
constexpr std::size_t kHeader = sizeof(RecordHeader);

// A hash table slot: a name's first record and 32 bits of its hash, so most probes that will not
// match are rejected without touching the record.
struct Slot {
  std::uint32_t record = kNone;  // kNone: empty
  std::uint32_t tag = 0;
};

struct AgentMessage {
  std::uint16_t source = 0;
  std::uint32_t line = 0;
  std::string text;
  bool operator<(const AgentMessage& other) const {
    return source != other.source ? source < other.source : line < other.line;
  }
};

struct RegexRule {
  std::uint32_t text_offset = 0;
  std::uint32_t text_length = 0;
  std::uint32_t line = 0;
  std::uint32_t port_scope = 0;
  std::uint16_t source = 0;
};

// A sorted, duplicate-free list of ports: ports[begin, end).
struct PortScope {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

// The name hash, fed one byte at a time from the right end of the name (FNV-1a shape with a
// multiplier whose bits are dense). Its low bits mix poorly, so hash_finish() runs before use.
constexpr std::uint64_t kHashSeed = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kHashMultiplier = 0x9e3779b97f4a7c15ULL;

inline std::uint64_t hash_step(std::uint64_t h, char c) {
  return (h ^ static_cast<unsigned char>(c)) * kHashMultiplier;
}

// A SplitMix64-style finaliser: the table index comes from the top bits, the tag from the low 32.
inline std::uint64_t hash_finish(std::uint64_t h) {
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 29;
  return h;
}

std::uint64_t hash_name(std::string_view name) {
  std::uint64_t h = kHashSeed;
  for (std::size_t i = name.size(); i-- > 0;) {
    h = hash_step(h, name[i]);
  }
  return hash_finish(h);
}

// Makes room for `extra` more elements, at least doubling when it grows, so that many small
// add_text() calls stay linear overall (a plain reserve() would grow to the exact size each time).
template <typename Container>
void reserve_more(Container& c, std::size_t extra) {
  const std::size_t wanted = c.size() + extra;
  if (wanted > c.capacity()) {
    c.reserve(std::max(wanted, 2 * c.capacity()));
  }
}

RE2::Options regex_options() {
  RE2::Options options;
  options.set_log_errors(false);  // errors are returned to the caller, not printed
  // Hosts are lower-cased before matching, so a pattern written with capitals could otherwise
  // never match; matching case-insensitively makes `re:.*\.Example\.com` do what it says.
  options.set_case_sensitive(false);
  return options;
}

// A rough count of the heap an RE2 program holds: its instructions (forward and, lazily,
// reverse) plus fixed overhead. The DFA caches grow on demand up to max_mem and are not counted.
std::size_t regex_allowance(std::size_t instructions) {
  constexpr std::size_t kFixed = 1024;
  constexpr std::size_t kPerInstruction = 32;
  return kFixed + instructions * kPerInstruction;
}

}  // namespace

// The built, immutable set. Matching only reads it, so any number of threads may share it.
struct DomainSet::Impl {
  BigArray<char> arena;  // name records, then the text of `re:` entries
  std::size_t name_entries = 0;
  // Which label counts occur among the name entries. A lookup skips suffixes of other lengths
  // (a TLD, say, when no entry is a bare TLD) and stops walking the host past the longest: on a
  // 6-label host against a list of 2- to 4-label names, that is half the probes, each a likely
  // cache miss.
  std::bitset<kMaxLabels + 1> label_counts;
  std::size_t max_labels = 0;
  BigArray<Slot> slots;  // size is a power of two, or empty when there are no name entries
  std::size_t mask = 0;
  int shift = 63;                 // index = hash >> shift, the top bits
  std::vector<PortScope> scopes;  // [0] stands for "any port"
  std::vector<std::uint16_t> ports;
  std::vector<std::string> sources;
  std::vector<RegexRule> regex_rules;
  std::vector<std::unique_ptr<RE2>> regexes;  // one per rule: validation, and the fallback
  std::unique_ptr<RE2::Set> regex_set;        // null when there are no patterns or it failed
  std::size_t regex_bytes = 0;
  // The `#!` messages, sorted by (source, line). Few entries carry one, so they live apart from
  // the records, and a set without any pays one emptiness check per match.
  std::vector<AgentMessage> messages;

  RuleMatch with_message(RuleMatch match, std::uint16_t source) const;

  void build_table(const std::vector<std::uint32_t>& records,
                   const std::vector<std::uint64_t>& hashes);
  void build_regex_set();

  std::optional<RuleMatch> match(const Host& host, std::uint16_t port) const;
  std::uint32_t match_name(std::string_view name, std::uint16_t port) const;
  std::uint32_t match_address(std::string_view name, std::uint16_t port) const;
  std::optional<RuleMatch> match_regex(std::string_view name, std::uint16_t port) const;

  std::uint32_t find(std::string_view name, std::uint64_t hash) const;
  std::uint32_t pick(std::uint32_t head, bool proper_suffix, bool is_ip, std::uint16_t port) const;
  bool in_scope(std::uint32_t scope, std::uint16_t port) const;

  RecordHeader header(std::uint32_t record) const {
    RecordHeader h;
    std::memcpy(&h, arena.data() + record, kHeader);
    return h;
  }
  std::string_view name_of(std::uint32_t record, const RecordHeader& h) const {
    return {arena.data() + record + kHeader + h.name_delta, h.name_length};
  }
  std::string_view text_of(std::uint32_t offset, std::uint32_t length) const {
    return {arena.data() + offset, length};
  }
  std::size_t memory_bytes() const;
};

void DomainSet::Impl::build_table(const std::vector<std::uint32_t>& records,
                                  const std::vector<std::uint64_t>& hashes) {
  if (records.empty()) {
    return;
  }
  // Sized for every entry being a distinct name; repeated names only lower the load.
  const std::size_t wanted = std::max<std::size_t>(16, records.size() * 10 / 7 + 1);
  const std::size_t capacity = std::bit_ceil(wanted);
  slots = BigArray<Slot>(capacity, Slot{});
  mask = capacity - 1;
  shift = 64 - std::countr_zero(capacity);

  // Inserting from the last record to the first and prepending to each chain leaves every chain
  // in file order, which is the order pick() prefers among equals. The hashes were computed
  // while parsing, so the slots a few inserts ahead can be prefetched: each insert is otherwise
  // a cache miss, and a million of them in a row would dominate the load time.
  constexpr std::size_t kAhead = 16;
  for (std::size_t i = records.size(); i-- > 0;) {
    if (i >= kAhead) {
      __builtin_prefetch(&slots[hashes[i - kAhead] >> shift], 1);
    }
    const std::uint32_t record = records[i];
    const std::uint64_t hash = hashes[i];
    const auto tag = static_cast<std::uint32_t>(hash);
    if (const RecordHeader h = header(record); h.kind != EntryKind::address) {
      const std::string_view name = name_of(record, h);
      const auto labels = static_cast<std::size_t>(std::count(name.begin(), name.end(), '.')) + 1;
      if (labels <= kMaxLabels) {  // always, for a name that parse_host() accepted
        label_counts.set(labels);
        max_labels = std::max(max_labels, labels);
      }
    }
    for (std::size_t at = hash >> shift;; at = (at + 1) & mask) {
      Slot& slot = slots[at];
      if (slot.record == kNone) {
        slot = Slot{record, tag};
        break;
      }
      if (slot.tag == tag) {
        RecordHeader h = header(record);
        if (name_of(slot.record, header(slot.record)) == name_of(record, h)) {
          h.next = slot.record;
          std::memcpy(arena.data() + record, &h, kHeader);
          slot.record = record;
          break;
        }
      }
    }
  }
}

void DomainSet::Impl::build_regex_set() {
  regex_bytes = 0;
  std::size_t total_instructions = 0;
  for (const auto& re : regexes) {
    const auto instructions = static_cast<std::size_t>(std::max(re->ProgramSize(), 0));
    regex_bytes += sizeof(RE2) + re->pattern().size() + regex_allowance(instructions);
    total_instructions += instructions;
  }
  if (regexes.empty()) {
    return;
  }
  RE2::Options options = regex_options();
  options.set_max_mem(kRegexSetMaxMem);
  auto set = std::make_unique<RE2::Set>(options, RE2::ANCHOR_BOTH);
  for (std::size_t i = 0; i < regexes.size(); ++i) {
    // Every pattern already compiled alone, so Add() failing is unexpected; the match falls back
    // to the individual patterns rather than trusting a set whose indices would be off.
    if (set->Add(regexes[i]->pattern(), nullptr) != static_cast<int>(i)) {
      return;
    }
  }
  if (!set->Compile()) {
    return;  // too big for the budget: the individual patterns still answer, only slower
  }
  regex_bytes += sizeof(RE2::Set) + regex_allowance(total_instructions);
  regex_set = std::move(set);
}

std::uint32_t DomainSet::Impl::find(std::string_view name, std::uint64_t hash) const {
  const auto tag = static_cast<std::uint32_t>(hash);
  for (std::size_t at = hash >> shift;; at = (at + 1) & mask) {
    const Slot& slot = slots[at];
    if (slot.record == kNone) {
      return kNone;
    }
    if (slot.tag == tag) {
      const RecordHeader h = header(slot.record);
      if (h.name_length == name.size() &&
          std::memcmp(arena.data() + slot.record + kHeader + h.name_delta, name.data(),
                      name.size()) == 0) {
        return slot.record;
      }
    }
  }
}

bool DomainSet::Impl::in_scope(std::uint32_t scope, std::uint16_t port) const {
  if (scope == 0) {
    return true;
  }
  const PortScope& s = scopes[scope];
  return std::binary_search(ports.begin() + s.begin, ports.begin() + s.end, port);
}

// Among the records for one name, the one that applies to this host and port. A port-scoped
// entry is more specific than an unscoped one; among equals the first in the file wins.
std::uint32_t DomainSet::Impl::pick(std::uint32_t head, bool proper_suffix, bool is_ip,
                                    std::uint16_t port) const {
  std::uint32_t unscoped = kNone;
  for (std::uint32_t record = head; record != kNone;) {
    const RecordHeader h = header(record);
    bool applies = false;
    switch (h.kind) {
      case EntryKind::name_and_subdomains:
        applies = !is_ip;
        break;
      case EntryKind::subdomains_only:
        applies = !is_ip && proper_suffix;
        break;
      case EntryKind::address:
        applies = is_ip && !proper_suffix;
        break;
      case EntryKind::pattern:  // patterns live in the regex set, never in a record
        break;
    }
    if (applies && in_scope(h.port_scope, port)) {
      if (h.port_scope != 0) {
        return record;
      }
      if (unscoped == kNone) {
        unscoped = record;
      }
    }
    record = h.next;
  }
  return unscoped;
}

std::uint32_t DomainSet::Impl::match_name(std::string_view name, std::uint16_t port) const {
  // Walk the host from its right end once. At the start of each label the running hash covers
  // exactly that suffix, so record it and prefetch its slot: the probes then overlap in memory.
  struct Probe {
    std::uint64_t hash;
    std::size_t start;
  };
  std::array<Probe, kMaxLabels> probes;  // one per label count 1..max_labels, at most
  std::size_t count = 0;
  std::size_t labels = 0;
  const std::size_t stop = name.size() > kMaxDnsName ? name.size() - kMaxDnsName : 0;
  std::uint64_t h = kHashSeed;
  for (std::size_t i = name.size(); i-- > stop;) {
    h = hash_step(h, name[i]);
    if (i == 0 || name[i - 1] == '.') {
      if (++labels > max_labels) {
        break;  // neither this suffix nor any longer one can be an entry
      }
      if (label_counts.test(labels)) {
        const std::uint64_t hash = hash_finish(h);
        __builtin_prefetch(&slots[hash >> shift]);
        probes[count++] = Probe{hash, i};
      }
    }
  }
  // The longest suffix first: the most specific rule wins, and the first hit ends the search.
  for (std::size_t k = count; k-- > 0;) {
    const std::size_t start = probes[k].start;
    const std::uint32_t head = find(name.substr(start), probes[k].hash);
    if (head == kNone) {
      continue;
    }
    if (const std::uint32_t record = pick(head, start > 0, false, port); record != kNone) {
      return record;
    }
  }
  return kNone;
}

std::uint32_t DomainSet::Impl::match_address(std::string_view name, std::uint16_t port) const {
  // An entry with a zone (`fe80::1%eth0`) matches that zone only; one without matches any zone.
  if (name.size() <= kMaxStoredName) {
    const std::uint32_t head = find(name, hash_name(name));
    if (head != kNone) {
      if (const std::uint32_t record = pick(head, false, true, port); record != kNone) {
        return record;
      }
    }
  }
  const std::size_t percent = name.find('%');
  if (percent != std::string_view::npos) {
    const std::string_view bare = name.substr(0, percent);
    const std::uint32_t head = find(bare, hash_name(bare));
    if (head != kNone) {
      return pick(head, false, true, port);
    }
  }
  return kNone;
}

std::optional<RuleMatch> DomainSet::Impl::match_regex(std::string_view name,
                                                      std::uint16_t port) const {
  const auto to_match = [this](const RegexRule& r) {
    return with_message(
        RuleMatch{sources[r.source], r.line, text_of(r.text_offset, r.text_length), {}}, r.source);
  };
  if (regex_set) {
    std::vector<int> hits;  // allocates only when something matches
    RE2::Set::ErrorInfo info{RE2::Set::kNoError};
    const bool matched = regex_set->Match(name, &hits, &info);
    if (matched || info.kind == RE2::Set::kNoError) {
      // The first rule in file order whose ports fit, like the name rules.
      std::sort(hits.begin(), hits.end());
      for (const int index : hits) {
        const RegexRule& r = regex_rules[static_cast<std::size_t>(index)];
        if (in_scope(r.port_scope, port)) {
          return to_match(r);
        }
      }
      return std::nullopt;
    }
    // The set's DFA ran out of memory: answering "no match" would let a blocked host through,
    // so ask every pattern on its own (RE2 falls back to the NFA there instead of failing).
  }
  for (std::size_t i = 0; i < regex_rules.size(); ++i) {
    const RegexRule& r = regex_rules[i];
    if (in_scope(r.port_scope, port) && RE2::FullMatch(name, *regexes[i])) {
      return to_match(r);
    }
  }
  return std::nullopt;
}

std::optional<RuleMatch> DomainSet::Impl::match(const Host& host, std::uint16_t port) const {
  if (!slots.empty()) {
    const std::uint32_t record =
        host.is_ip() ? match_address(host.name, port) : match_name(host.name, port);
    if (record != kNone) {
      const RecordHeader h = header(record);
      return with_message(
          RuleMatch{sources[h.source], h.line, text_of(record + kHeader, h.text_length), {}},
          h.source);
    }
  }
  if (!regex_rules.empty()) {
    return match_regex(host.name, port);
  }
  return std::nullopt;
}

RuleMatch DomainSet::Impl::with_message(RuleMatch match, std::uint16_t source) const {
  if (!messages.empty()) {
    const AgentMessage key{source, match.line, {}};
    const auto found = std::lower_bound(messages.begin(), messages.end(), key);
    if (found != messages.end() && found->source == source && found->line == match.line) {
      match.message = found->text;
    }
  }
  return match;
}

std::size_t DomainSet::Impl::memory_bytes() const {
  std::size_t bytes =
      sizeof(Impl) + arena.bytes() + slots.bytes() + scopes.capacity() * sizeof(PortScope) +
      ports.capacity() * sizeof(std::uint16_t) + sources.capacity() * sizeof(std::string) +
      regex_rules.capacity() * sizeof(RegexRule) +
      regexes.capacity() * sizeof(std::unique_ptr<RE2>) + regex_bytes;
  for (const auto& s : sources) {
    bytes += s.capacity() + 1;
  }
  bytes += messages.capacity() * sizeof(AgentMessage);
  for (const auto& m : messages) {
    bytes += m.text.capacity();
  }
  return bytes;
}

// ---- DomainSet ----

DomainSet::DomainSet() = default;
DomainSet::DomainSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DomainSet::DomainSet(DomainSet&&) noexcept = default;
DomainSet& DomainSet::operator=(DomainSet&&) noexcept = default;
DomainSet::~DomainSet() = default;

DomainSet DomainSet::parse(std::string_view text, std::string_view source,
                           std::vector<LoadIssue>& issues) {
  Builder builder;
  builder.add_text(text, source, issues);
  return std::move(builder).build();
}

std::optional<RuleMatch> DomainSet::match(const Host& host, std::uint16_t port) const {
  if (!impl_) {
    return std::nullopt;
  }
  return impl_->match(host, port);
}

std::size_t DomainSet::size() const {
  return impl_ ? impl_->name_entries + impl_->regex_rules.size() : 0;
}

std::size_t DomainSet::memory_bytes() const { return impl_ ? impl_->memory_bytes() : 0; }

// ---- Builder ----

// Everything collected so far. build() moves it into an Impl and adds the table and regex set.
struct DomainSet::Builder::State {
  std::string arena;                   // name records, then (at build) the regex texts
  std::vector<std::uint32_t> records;  // where each name record starts
  std::vector<std::uint64_t> hashes;   // and the hash of its name, for build_table()
  std::string regex_text;
  std::vector<RegexRule> regex_rules;
  std::vector<std::unique_ptr<RE2>> regexes;
  std::vector<std::string> sources;
  std::unordered_map<std::string, std::uint16_t> source_index;
  std::vector<PortScope> scopes{PortScope{}};  // [0]: any port
  std::vector<std::uint16_t> ports;
  std::map<std::vector<std::uint16_t>, std::uint32_t> scope_index;
  std::vector<std::uint16_t> scratch_ports;  // reused by every line, to spare an allocation
  RuleEntry scratch_entry;                   // likewise, to spare the moves of a returned one
  std::vector<AgentMessage> messages;

  std::optional<std::string> add_entry(std::string_view text, std::string_view source,
                                       std::uint32_t line);
  void add_name(const RuleEntry& entry, std::uint32_t scope, std::uint16_t source,
                std::uint32_t line);
  std::optional<std::string> add_regex(const RuleEntry& entry, std::uint32_t scope,
                                       std::uint16_t source, std::uint32_t line);
  std::optional<std::uint16_t> intern_source(std::string_view source);
  std::uint32_t intern_scope(const std::vector<std::uint16_t>& list);
  bool has_room(std::size_t more_bytes) const {
    return arena.size() + regex_text.size() + more_bytes <= kNone;
  }
};

std::optional<std::uint16_t> DomainSet::Builder::State::intern_source(std::string_view source) {
  // Nearly every call repeats the previous source: check it before hashing.
  if (!sources.empty() && sources.back() == source) {
    return static_cast<std::uint16_t>(sources.size() - 1);
  }
  const auto [it, added] =
      source_index.try_emplace(std::string(source), static_cast<std::uint16_t>(sources.size()));
  if (added) {
    if (sources.size() > std::numeric_limits<std::uint16_t>::max()) {
      source_index.erase(it);
      return std::nullopt;
    }
    sources.emplace_back(source);
  }
  return it->second;
}

std::uint32_t DomainSet::Builder::State::intern_scope(const std::vector<std::uint16_t>& list) {
  const auto [it, added] = scope_index.try_emplace(list, static_cast<std::uint32_t>(scopes.size()));
  if (added) {
    const auto begin = static_cast<std::uint32_t>(ports.size());
    ports.insert(ports.end(), list.begin(), list.end());
    scopes.push_back(PortScope{begin, static_cast<std::uint32_t>(ports.size())});
  }
  return it->second;
}

std::optional<std::string> DomainSet::Builder::State::add_entry(std::string_view text,
                                                                std::string_view source,
                                                                std::uint32_t line) {
  // The set's own limits come first, so a line over them is refused whatever it holds.
  const std::optional<std::uint16_t> source_id = intern_source(source);
  if (!source_id) {
    return "too many sources (at most 65536 per set)";
  }
  if (!has_room(kHeader + text.size() + kMaxEntryName)) {
    return std::string(kTooLarge);
  }
  if (auto error = parse_entry(text, scratch_entry, scratch_ports)) {
    return error;
  }
  // parse_entry() left the port list in scratch_ports; intern it from there, which copies it
  // only the first time a list is seen.
  const std::uint32_t scope = scratch_entry.ports.empty() ? 0 : intern_scope(scratch_ports);
  if (scratch_entry.kind == EntryKind::pattern) {
    return add_regex(scratch_entry, scope, *source_id, line);
  }
  add_name(scratch_entry, scope, *source_id, line);
  return std::nullopt;
}

void DomainSet::Builder::State::add_name(const RuleEntry& entry, std::uint32_t scope,
                                         std::uint16_t source, std::uint32_t line) {
  const std::string_view text = entry.text;
  const std::string_view name = entry.host.name;
  RecordHeader h;
  h.line = line;
  h.port_scope = scope;
  h.text_length = static_cast<std::uint32_t>(text.size());
  h.source = source;
  h.name_length = static_cast<std::uint8_t>(name.size());  // at most kMaxEntryName
  h.kind = entry.kind;
  // Usually the entry as written already contains its normal form (`*.evil.com:443` holds
  // `evil.com`): point into it instead of storing the name twice.
  const std::size_t inside = text.find(name);
  h.name_delta =
      static_cast<std::uint32_t>(inside != std::string_view::npos ? inside : text.size());
  const auto record = static_cast<std::uint32_t>(arena.size());
  arena.append(reinterpret_cast<const char*>(&h), kHeader);
  arena.append(text);
  if (inside == std::string_view::npos) {
    arena.append(name);
  }
  records.push_back(record);
  hashes.push_back(hash_name(name));
}

std::optional<std::string> DomainSet::Builder::State::add_regex(const RuleEntry& entry,
                                                                std::uint32_t scope,
                                                                std::uint16_t source,
                                                                std::uint32_t line) {
  // Compiled here, not in the grammar: the pattern's syntax is RE2's, and the compiled program
  // is what the set keeps (for validation now and as the fallback when the RE2::Set fails).
  auto re = std::make_unique<RE2>(re2::StringPiece(entry.pattern.data(), entry.pattern.size()),
                                  regex_options());
  if (!re->ok()) {
    return "bad regular expression: " + re->error();
  }

  // Offsets are into regex_text until build() appends it to the arena.
  RegexRule r;
  r.text_offset = static_cast<std::uint32_t>(regex_text.size());
  r.text_length = static_cast<std::uint32_t>(entry.text.size());
  regex_text.append(entry.text);
  r.line = line;
  r.port_scope = scope;
  r.source = source;
  regex_rules.push_back(r);
  regexes.push_back(std::move(re));
  return std::nullopt;
}

DomainSet::Builder::Builder() : state_(std::make_unique<State>()) {}
DomainSet::Builder::~Builder() = default;

std::size_t DomainSet::Builder::add_text(std::string_view text, std::string_view source,
                                         std::vector<LoadIssue>& issues) {
  const std::size_t before = state_->records.size() + state_->regex_rules.size();
  // Reserve for the whole text at once: growing a 50 MiB arena by doubling costs more than the
  // parsing. Each line needs at most a record header more than its own bytes, plus a name that
  // differs from the text (rare, so left to ordinary growth).
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  State& s = *state_;
  reserve_more(s.arena, text.size() + lines * kHeader);
  reserve_more(s.records, lines);
  reserve_more(s.hashes, lines);
  for_each_line(text, [&](std::string_view line, std::uint32_t line_number) {
    if (auto error = add_line(line, source, line_number)) {
      issues.push_back(make_issue(source, line_number, line, std::move(*error)));
    }
  });
  return state_->records.size() + state_->regex_rules.size() - before;
}

std::optional<std::string> DomainSet::Builder::add_line(std::string_view line,
                                                        std::string_view source,
                                                        std::uint32_t line_number) {
  const std::string_view text = entry_text(line);
  if (text.empty()) {
    return std::nullopt;
  }
  if (auto error = state_->add_entry(text, source, line_number)) {
    return error;
  }
  // Only lines with "#!" pay for looking: most lists have no messages at all.
  if (line.find("#!") != std::string_view::npos) {
    if (std::string message = agent_message(line); !message.empty()) {
      // add_entry() interned the source already, so this finds it.
      state_->messages.push_back(
          AgentMessage{*state_->intern_source(source), line_number, std::move(message)});
    }
  }
  return std::nullopt;
}

DomainSet DomainSet::Builder::build() && {
  auto impl = std::make_unique<Impl>();
  State& s = *state_;
  // The regex texts go after the records, so that one arena owns every entry's text.
  const auto regex_base = static_cast<std::uint32_t>(s.arena.size());
  for (RegexRule& r : s.regex_rules) {
    r.text_offset += regex_base;
  }
  s.arena += s.regex_text;
  std::string().swap(s.regex_text);
  impl->arena = BigArray<char>(s.arena.data(), s.arena.size());
  std::string().swap(s.arena);
  impl->name_entries = s.records.size();
  impl->scopes = std::move(s.scopes);
  impl->scopes.shrink_to_fit();
  impl->ports = std::move(s.ports);
  impl->ports.shrink_to_fit();
  impl->sources = std::move(s.sources);
  impl->regex_rules = std::move(s.regex_rules);
  impl->regexes = std::move(s.regexes);
  impl->messages = std::move(s.messages);
  std::sort(impl->messages.begin(), impl->messages.end());
  if (impl->sources.empty()) {
    impl->sources.emplace_back();  // never indexed; keeps the invariant "source 0 exists"
  }
  impl->build_table(s.records, s.hashes);
  impl->build_regex_set();
  // Leave the builder empty but usable, rather than holding a null state.
  state_ = std::make_unique<State>();
  return DomainSet(std::move(impl));
}

}  // namespace sandgate::rules
