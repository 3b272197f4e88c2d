// The budgets file's grammar and matching. See budgets.hpp.
#include "rules/budgets.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <unordered_map>

namespace sandgate::rules {
namespace {

constexpr std::string_view kEveryDestination = "*";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The white-space separated words of an entry text.
std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && is_space(text[at])) {
      ++at;
    }
    const std::size_t start = at;
    while (at < text.size() && !is_space(text[at])) {
      ++at;
    }
    if (at > start) {
      words.push_back(text.substr(start, at - start));
    }
  }
  return words;
}

struct Unit {
  std::string_view name;
  std::uint64_t factor;
};
// Case matters: `Mb` would be megabits to some readers, so only these spellings are taken.
constexpr std::array<Unit, 10> kUnits = {{{"B", 1},
                                          {"kB", 1000},
                                          {"KB", 1000},
                                          {"MB", 1000ULL * 1000},
                                          {"GB", 1000ULL * 1000 * 1000},
                                          {"TB", 1000ULL * 1000 * 1000 * 1000},
                                          {"KiB", 1024},
                                          {"MiB", 1024ULL * 1024},
                                          {"GiB", 1024ULL * 1024 * 1024},
                                          {"TiB", 1024ULL * 1024 * 1024 * 1024}}};

bool is_byte_kind(BudgetKind kind) { return kind == BudgetKind::up || kind == BudgetKind::down; }

// `digits[.digits]UNIT` for bytes, `digits` for counts: the exact whole amount, or why not.
Expected<std::uint64_t, std::string> parse_amount(BudgetKind kind, std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  std::size_t digits_end = 0;
  while (digits_end < text.size() &&
         ((text[digits_end] >= '0' && text[digits_end] <= '9') || text[digits_end] == '.')) {
    ++digits_end;
  }
  const std::string_view number = text.substr(0, digits_end);
  const std::string_view unit = text.substr(digits_end);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      std::count(number.begin(), number.end(), '.') > 1) {
    return Unexpected{"bad amount " + quoted + " (a number such as 50MB or 1.5GiB)"};
  }
  if (!is_byte_kind(kind)) {
    if (!unit.empty() || number.find('.') != std::string_view::npos) {
      return Unexpected{"bad amount " + quoted + " (" + std::string(to_string(kind)) +
                        " are counted: a whole number such as 100)"};
    }
  }
  std::uint64_t factor = 1;
  if (is_byte_kind(kind)) {
    const auto found =
        std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& u) { return u.name == unit; });
    if (found == kUnits.end()) {
      return Unexpected{"bad unit in " + quoted +
                        " (B, kB, MB, GB, TB or KiB, MiB, GiB, TiB; bytes, not bits)"};
    }
    factor = found->factor;
  }
  const std::size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
  std::uint64_t whole_value = 0;
  const auto [end, error] = std::from_chars(whole.data(), whole.data() + whole.size(), whole_value);
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max() / 2;
  if (error != std::errc() || end != whole.data() + whole.size() || fraction.size() > 6 ||
      whole_value > kMax / factor) {
    return Unexpected{"amount " + quoted + " is too large or too precise"};
  }
  std::uint64_t amount = whole_value * factor;
  if (!fraction.empty()) {
    // The fraction in millionths, times the unit: exact, or refused (a fraction of a byte).
    std::uint64_t millionths = 0;
    std::from_chars(fraction.data(), fraction.data() + fraction.size(), millionths);
    for (std::size_t i = fraction.size(); i < 6; ++i) {
      millionths *= 10;
    }
    const std::uint64_t part = millionths * factor;  // < 10^6 * 2^40: fits
    if (part % 1000000 != 0) {
      return Unexpected{"amount " + quoted + " is not a whole number of bytes"};
    }
    amount += static_cast<std::uint64_t>(part / 1000000);
    if (amount > kMax) {
      return Unexpected{"amount " + quoted + " is too large or too precise"};
    }
  }
  return amount;
}

}  // namespace

std::string_view to_string(BudgetKind kind) {
  switch (kind) {
    case BudgetKind::up:
      return "up";
    case BudgetKind::down:
      return "down";
    case BudgetKind::connections:
      return "connections";
    case BudgetKind::requests:
      return "requests";
  }
  return "?";
}

std::string_view to_string(BudgetWindow window) {
  switch (window) {
    case BudgetWindow::run:
      return "run";
    case BudgetWindow::minute:
      return "minute";
    case BudgetWindow::hour:
      return "hour";
    case BudgetWindow::day:
      return "day";
  }
  return "?";
}

std::uint64_t window_seconds(BudgetWindow window) {
  switch (window) {
    case BudgetWindow::run:
      return 0;
    case BudgetWindow::minute:
      return 60;
    case BudgetWindow::hour:
      return 3600;
    case BudgetWindow::day:
      return 86400;
  }
  return 0;
}

std::string BudgetLine::rule() const { return source + ":" + std::to_string(line) + " " + entry; }

std::string describe_amount(BudgetKind kind, std::uint64_t amount) {
  if (!is_byte_kind(kind)) {
    return std::to_string(amount) + " " + std::string(to_string(kind));
  }
  // The shortest spelling that shows the amount exactly, with at most three decimals.
  std::string best = std::to_string(amount) + (amount == 1 ? " byte" : " bytes");
  for (const Unit& unit : kUnits) {
    if (unit.factor == 1 || amount < unit.factor || unit.name == "KB") {
      continue;
    }
    const std::uint64_t whole = amount / unit.factor;
    const std::uint64_t rest = amount % unit.factor;  // * 1000 < 2^50: fits
    const std::uint64_t thousandths = rest * 1000 / unit.factor;
    if (thousandths * unit.factor != rest * 1000) {
      continue;
    }
    std::string text = std::to_string(whole);
    if (thousandths != 0) {
      std::string decimals = std::to_string(thousandths);
      decimals.insert(0, 3 - decimals.size(), '0');
      while (decimals.back() == '0') {
        decimals.pop_back();
      }
      text += "." + decimals;
    }
    text += " " + std::string(unit.name);
    if (text.size() < best.size()) {
      best = std::move(text);
    }
  }
  return best;
}

std::string describe_limit(const BudgetLimit& limit) {
  return describe_amount(limit.kind, limit.amount) + " per " + std::string(to_string(limit.window));
}

Expected<BudgetLimit, std::string> parse_budget_limit(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return Unexpected{"bad limit " + quoted +
                      " (KIND=AMOUNT[/WINDOW], e.g. up=50MB/hour or requests=1000/day)"};
  }
  const std::string_view kind_text = text.substr(0, equals);
  BudgetLimit limit;
  if (kind_text == "up") {
    limit.kind = BudgetKind::up;
  } else if (kind_text == "down") {
    limit.kind = BudgetKind::down;
  } else if (kind_text == "connections") {
    limit.kind = BudgetKind::connections;
  } else if (kind_text == "requests") {
    limit.kind = BudgetKind::requests;
  } else {
    return Unexpected{"unknown kind '" + std::string(kind_text) + "' in " + quoted +
                      " (up, down, connections or requests)"};
  }
  std::string_view rest = text.substr(equals + 1);
  const std::size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view window = rest.substr(slash + 1);
    if (window == "run") {
      limit.window = BudgetWindow::run;
    } else if (window == "minute") {
      limit.window = BudgetWindow::minute;
    } else if (window == "hour") {
      limit.window = BudgetWindow::hour;
    } else if (window == "day") {
      limit.window = BudgetWindow::day;
    } else {
      return Unexpected{"unknown window '" + std::string(window) + "' in " + quoted +
                        " (run, minute, hour or day)"};
    }
    rest = rest.substr(0, slash);
  }
  auto amount = parse_amount(limit.kind, rest);
  if (!amount) {
    return Unexpected{amount.error()};
  }
  limit.amount = *amount;
  return limit;
}

// One line, with the matcher of its entry (none for `*`).
struct MatchedLine {
  std::unique_ptr<DomainSet> entry;  // null: every destination
};

struct BudgetRules::Impl {
  std::vector<BudgetLine> lines;
  std::vector<MatchedLine> matchers;  // parallel to `lines`
  std::size_t limits = 0;
};

BudgetRules::BudgetRules() : impl_(std::make_unique<Impl>()) {}
BudgetRules::BudgetRules(BudgetRules&&) noexcept = default;
BudgetRules& BudgetRules::operator=(BudgetRules&&) noexcept = default;
BudgetRules::~BudgetRules() = default;

BudgetRules BudgetRules::parse(std::string_view text, std::string_view source,
                               std::vector<LoadIssue>& issues) {
  BudgetRules rules;
  Impl& impl = *rules.impl_;
  std::vector<std::uint16_t> ports;
  std::unordered_map<std::string, std::uint32_t> lines_of_keys;  // each loaded limit's line
  for_each_line(text, [&](std::string_view raw, std::uint32_t number) {
    const std::string_view content = entry_text(raw);
    if (content.empty()) {
      return;
    }
    auto issue = [&](std::string message) {
      issues.push_back(make_issue(source, number, raw, std::move(message)));
    };
    if (impl.lines.size() == kMaxBudgetLines) {
      issue("more than " + std::to_string(kMaxBudgetLines) + " budget lines; the rest is ignored");
      return;
    }
    const std::vector<std::string_view> words = words_of(content);
    if (words.size() < 2) {
      issue("a budget line is ENTRY LIMIT [LIMIT ...], e.g. 'github.com up=50MB/hour'");
      return;
    }
    BudgetLine line;
    line.source = std::string(source);
    line.line = number;
    line.entry = std::string(words[0]);
    line.message = agent_message(raw);
    MatchedLine matcher;
    std::string normal = line.entry;
    if (line.entry != kEveryDestination) {
      RuleEntry entry;
      if (auto error = parse_entry(line.entry, entry, ports)) {
        issue(*error);
        return;
      }
      DomainSet::Builder builder;
      if (auto error = builder.add_line(line.entry, source, number)) {
        issue(*error);
        return;
      }
      matcher.entry = std::make_unique<DomainSet>(std::move(builder).build());
      if (entry.kind == EntryKind::pattern) {
        normal = "re:" + std::string(entry.pattern);
      } else {
        normal = (entry.kind == EntryKind::subdomains_only ? "*." : "") + entry.host.display();
      }
      for (std::size_t i = 0; i < entry.ports.size(); ++i) {
        normal += (i == 0 ? ":" : ",") + std::to_string(entry.ports[i]);
      }
    }
    for (std::size_t i = 1; i < words.size(); ++i) {
      auto limit = parse_budget_limit(words[i]);
      if (!limit) {
        issue(limit.error());
        return;
      }
      limit->key = normal + " " + std::string(to_string(limit->kind)) + "/" +
                   std::string(to_string(limit->window));
      // The same entry, kind and window twice would share one account with two amounts.
      if (const auto seen = lines_of_keys.find(limit->key); seen != lines_of_keys.end()) {
        issue("the same limit (" + limit->key + ") as line " + std::to_string(seen->second));
        return;
      }
      for (const BudgetLimit& seen : line.limits) {
        if (seen.key == limit->key) {
          issue("the same limit (" + limit->key + ") twice on one line");
          return;
        }
      }
      line.limits.push_back(std::move(*limit));
    }
    for (const BudgetLimit& limit : line.limits) {
      lines_of_keys.emplace(limit.key, number);
    }
    impl.limits += line.limits.size();
    impl.lines.push_back(std::move(line));
    impl.matchers.push_back(std::move(matcher));
  });
  return rules;
}

std::vector<const BudgetLine*> BudgetRules::match(const Host& host, std::uint16_t port,
                                                  const std::optional<IpAddress>& dialled) const {
  std::vector<const BudgetLine*> out;
  // An address as the entries name it: an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, which
  // a name's AAAA answer or a literal may give) is the IPv4 address it carries.
  auto as_entry_host = [](const IpAddress& ip) {
    Host form;
    IpAddress plain = ip;
    if (!ip.is_v4()) {
      if (auto embedded = embedded_ipv4(ip); embedded && embedded->form == "IPv4-mapped") {
        plain = embedded->address;
      }
    }
    form.kind = plain.is_v4() ? HostKind::ipv4 : HostKind::ipv6;
    form.address = plain;
    form.name = plain.to_string();
    return form;
  };
  const Host named = host.is_ip() ? as_entry_host(host.address) : host;
  std::optional<Host> address;
  if (dialled) {
    address = as_entry_host(*dialled);
  }
  for (std::size_t i = 0; i < impl_->lines.size(); ++i) {
    const DomainSet* entry = impl_->matchers[i].entry.get();
    if (entry == nullptr || entry->match(named, port) ||
        (address && entry->match(*address, port))) {
      out.push_back(&impl_->lines[i]);
    }
  }
  return out;
}

const std::vector<BudgetLine>& BudgetRules::lines() const { return impl_->lines; }
bool BudgetRules::empty() const { return impl_->lines.empty(); }
std::size_t BudgetRules::size() const { return impl_->limits; }

}  // namespace sandgate::rules
