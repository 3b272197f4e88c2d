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
// The two big arrays sit on huge pages where the OS offers them: lookups land at random places
// in tens of MiB, and with 4 KiB pages most of them would also miss the TLB.

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
#include <new>
#include <type_traits>
#include <unordered_map>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace sandgate::rules {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
// The longest normal-form DNS name; a suffix longer than this can never equal an entry.
constexpr std::size_t kMaxName = 253;
// A DNS name of kMaxName octets has at most this many labels.
constexpr std::size_t kMaxLabels = (kMaxName + 1) / 2;
// Records store the name length in one byte (IPv6 entries with a long zone may exceed it).
constexpr std::size_t kMaxStoredName = 255;
// Budget for the DFA of the combined regex set; RE2's default (8 MiB) is meant for one pattern.
constexpr std::int64_t kRegexSetMaxMem = std::int64_t{64} << 20;

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr std::string_view kNeedsDomain = "'*.' needs a domain after it";
constexpr std::string_view kBadStar = "'*' is only allowed as a whole leading label";
constexpr std::string_view kWildcardIp = "wildcard not allowed on an IP address";
constexpr std::string_view kNeedsPattern = "'re:' needs a pattern after it";
constexpr std::string_view kTooLarge = "the rule set is too large (over 4 GiB of entry text)";

enum class EntryKind : std::uint8_t {
  name_and_subdomains,  // `example.com`
  subdomains_only,      // `*.example.com`
  address,              // an IP literal: that address only
};

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

// A fixed-size array of a trivially copyable type for the two big tables. From 2 MiB up it is
// mapped directly and, on Linux, advised onto transparent huge pages before it is first touched.
template <typename T>
class BigArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  BigArray() = default;
  BigArray(std::size_t count, const T& fill) {
    allocate(count);
    std::uninitialized_fill_n(data_, count, fill);
  }
  BigArray(const T* first, std::size_t count) {
    allocate(count);
    std::uninitialized_copy_n(first, count, data_);
  }
  BigArray(BigArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        map_base_(std::exchange(other.map_base_, nullptr)),
        map_length_(std::exchange(other.map_length_, 0)) {}
  BigArray& operator=(BigArray&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      map_base_ = std::exchange(other.map_base_, nullptr);
      map_length_ = std::exchange(other.map_length_, 0);
    }
    return *this;
  }
  BigArray(const BigArray&) = delete;
  BigArray& operator=(const BigArray&) = delete;
  ~BigArray() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  // Heap held: what is in use, rounded up to the page size that backs it.
  std::size_t bytes() const {
    return map_base_ != nullptr ? round_up(size_ * sizeof(T), kHugePage) : size_ * sizeof(T);
  }

 private:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

  void allocate(std::size_t count) {
    size_ = count;
    const std::size_t bytes = count * sizeof(T);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= kHugePage) {
      // Map one huge page more than needed, so that the array can start on a huge-page boundary.
      const std::size_t length = round_up(bytes, kHugePage) + kHugePage;
      void* base =
          ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (base != MAP_FAILED) {
        const auto aligned = round_up(reinterpret_cast<std::uintptr_t>(base), kHugePage);
        // Advice only: without huge pages the array works the same, just slower.
        ::madvise(reinterpret_cast<void*>(aligned), round_up(bytes, kHugePage), MADV_HUGEPAGE);
        map_base_ = base;
        map_length_ = length;
        data_ = reinterpret_cast<T*>(aligned);
        return;
      }
    }
#endif
    data_ = static_cast<T*>(::operator new(std::max<std::size_t>(bytes, 1)));
  }

  void release() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (map_base_ != nullptr) {
      ::munmap(map_base_, map_length_);
      map_base_ = nullptr;
      data_ = nullptr;
      return;
    }
#endif
    ::operator delete(data_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  void* map_base_ = nullptr;  // non-null when mapped
  std::size_t map_length_ = 0;
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

constexpr bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_ascii_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

// The entry on a line: everything before '#', trimmed. This is also the text reported back.
std::string_view entry_text(std::string_view line) { return trim(line.substr(0, line.find('#'))); }

std::string bad_port(std::string_view port) {
  // A pathological line may hold a huge "port"; the message only needs its start.
  constexpr std::size_t kShown = 24;
  std::string shown(port.substr(0, kShown));
  if (port.size() > kShown) {
    shown += "...";
  }
  return "bad port '" + shown + "' (1..65535, no leading zeros)";
}

// Parses `443` or `22,2222` into sorted, distinct ports. Plain decimal only: a leading zero or a
// sign would make `0443` and `443` look like different rules to a reader.
std::optional<std::string> parse_ports(std::string_view text, std::vector<std::uint16_t>& out) {
  out.clear();
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const bool digits =
        !item.empty() && item.size() <= 5 &&
        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || item.front() == '0') {
      return bad_port(item);
    }
    std::uint32_t value = 0;
    for (const char c : item) {
      value = value * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (value > 65535) {
      return bad_port(item);
    }
    out.push_back(static_cast<std::uint16_t>(value));
    if (comma == std::string_view::npos) {
      break;
    }
    text.remove_prefix(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return std::nullopt;
}

// Whether `text` has the shape digits(,digits)*: the port suffix of a `re:` entry. Values are
// checked afterwards by parse_ports(), so `re:x:0443` is an error rather than part of the pattern.
bool looks_like_ports(std::string_view text) {
  if (text.empty() || text.front() == ',' || text.back() == ',') {
    return false;
  }
  char previous = 0;
  for (const char c : text) {
    const bool ok = (c >= '0' && c <= '9') || (c == ',' && previous != ',');
    if (!ok) {
      return false;
    }
    previous = c;
  }
  return true;
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
  const std::size_t stop = name.size() > kMaxName ? name.size() - kMaxName : 0;
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
    return RuleMatch{sources[r.source], r.line, text_of(r.text_offset, r.text_length)};
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
      return RuleMatch{sources[h.source], h.line, text_of(record + kHeader, h.text_length)};
    }
  }
  if (!regex_rules.empty()) {
    return match_regex(host.name, port);
  }
  return std::nullopt;
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

  std::optional<std::string> add_entry(std::string_view text, std::string_view source,
                                       std::uint32_t line);
  std::optional<std::string> add_name(std::string_view text, std::uint16_t source,
                                      std::uint32_t line);
  std::optional<std::string> add_regex(std::string_view text, std::uint16_t source,
                                       std::uint32_t line);
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
  const std::optional<std::uint16_t> source_id = intern_source(source);
  if (!source_id) {
    return "too many sources (at most 65536 per set)";
  }
  if (!has_room(kHeader + text.size() + kMaxStoredName)) {
    return std::string(kTooLarge);
  }
  if (text.starts_with("re:")) {
    return add_regex(text, *source_id, line);
  }
  return add_name(text, *source_id, line);
}

std::optional<std::string> DomainSet::Builder::State::add_name(std::string_view text,
                                                               std::uint16_t source,
                                                               std::uint32_t line) {
  std::string_view rest = text;
  bool wildcard = false;
  if (rest == "*") {
    return std::string(kNeedsDomain);
  }
  if (rest.starts_with("*.")) {
    wildcard = true;
    rest.remove_prefix(2);
  }

  // Split off the port list. `[v6]:443` is bracketed; otherwise one colon separates a port, and
  // two or more mean an unbracketed IPv6 address, which then cannot carry a port.
  std::string_view host_text = rest;
  std::optional<std::string_view> port_text;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close != std::string_view::npos && close + 1 < rest.size() && rest[close + 1] == ':') {
      host_text = rest.substr(0, close + 1);
      port_text = rest.substr(close + 2);
    }
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    const std::size_t colon = rest.find(':');
    host_text = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  }

  if (wildcard && host_text.empty()) {
    return std::string(kNeedsDomain);
  }
  if (host_text.find('*') != std::string_view::npos) {
    return std::string(kBadStar);
  }
  auto host = parse_host(host_text);
  if (!host) {
    return std::string(to_string(host.error()));
  }
  if (wildcard && host->is_ip()) {
    return std::string(kWildcardIp);
  }
  // An IPv4 address written as IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is that very address, and is
  // stored as IPv4: destinations are matched in IPv4 form (rules/policy.cpp, match_list), and
  // deny messages print mapped addresses this way, so people copy them into lists like this.
  // (The deprecated IPv4-compatible form is not: `::1:443` is an IPv6 address people write.)
  if (host->kind == HostKind::ipv6) {
    if (auto embedded = embedded_ipv4(host->address);
        embedded && embedded->form == "IPv4-mapped") {
      host = Host{HostKind::ipv4, embedded->address.to_string(), embedded->address};
    }
  }
  const std::string_view name = host->name;
  if (name.empty() || name.size() > kMaxStoredName) {
    return std::string(to_string(name.empty() ? HostError::empty : HostError::too_long));
  }

  std::uint32_t scope = 0;
  if (port_text) {
    if (auto error = parse_ports(*port_text, scratch_ports)) {
      return error;
    }
    scope = intern_scope(scratch_ports);
  }

  RecordHeader h;
  h.line = line;
  h.port_scope = scope;
  h.text_length = static_cast<std::uint32_t>(text.size());
  h.source = source;
  h.name_length = static_cast<std::uint8_t>(name.size());
  h.kind = host->is_ip() ? EntryKind::address
           : wildcard    ? EntryKind::subdomains_only
                         : EntryKind::name_and_subdomains;
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
  return std::nullopt;
}

std::optional<std::string> DomainSet::Builder::State::add_regex(std::string_view text,
                                                                std::uint16_t source,
                                                                std::uint32_t line) {
  std::string_view pattern = text.substr(3);  // after "re:"
  std::uint32_t scope = 0;
  const std::size_t colon = pattern.rfind(':');
  if (colon != std::string_view::npos && looks_like_ports(pattern.substr(colon + 1))) {
    if (auto error = parse_ports(pattern.substr(colon + 1), scratch_ports)) {
      return error;
    }
    scope = intern_scope(scratch_ports);
    pattern = pattern.substr(0, colon);
  }
  if (pattern.empty()) {
    return std::string(kNeedsPattern);
  }
  auto re =
      std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), regex_options());
  if (!re->ok()) {
    return "bad regular expression: " + re->error();
  }

  // Offsets are into regex_text until build() appends it to the arena.
  RegexRule r;
  r.text_offset = static_cast<std::uint32_t>(regex_text.size());
  r.text_length = static_cast<std::uint32_t>(text.size());
  regex_text.append(text);
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
  // A byte order mark is what some Windows editors put first; it is not part of any entry.
  if (text.starts_with(kByteOrderMark)) {
    text.remove_prefix(kByteOrderMark.size());
  }
  // Reserve for the whole text at once: growing a 50 MiB arena by doubling costs more than the
  // parsing. Each line needs at most a record header more than its own bytes, plus a name that
  // differs from the text (rare, so left to ordinary growth).
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  State& s = *state_;
  reserve_more(s.arena, text.size() + lines * kHeader);
  reserve_more(s.records, lines);
  reserve_more(s.hashes, lines);
  std::uint32_t line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line_number < std::numeric_limits<std::uint32_t>::max()) {
      ++line_number;
    }
    if (auto error = add_line(line, source, line_number)) {
      issues.push_back(LoadIssue{std::string(source), line_number, std::string(entry_text(line)),
                                 std::move(*error)});
    }
  }
  return state_->records.size() + state_->regex_rules.size() - before;
}

std::optional<std::string> DomainSet::Builder::add_line(std::string_view line,
                                                        std::string_view source,
                                                        std::uint32_t line_number) {
  const std::string_view text = entry_text(line);
  if (text.empty()) {
    return std::nullopt;
  }
  return state_->add_entry(text, source, line_number);
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
