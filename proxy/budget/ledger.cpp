// The ledger of egress budgets. See ledger.hpp.
#include "proxy/budget/ledger.hpp"

#include <algorithm>
#include <limits>

namespace sandgate::budget {
namespace {

std::int64_t since_epoch_ms(Clock::time_point now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
}

// A Prometheus label value: backslash, double quote and line feed escaped (the text exposition
// format's rules); any other control byte becomes a space.
std::string label_value(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Account::Account(rules::BudgetWindow window)
    : window_(window),
      slot_ms_(static_cast<std::int64_t>(rules::window_seconds(window)) * 1000 / 60) {}

void Account::set_amount(std::uint64_t amount) {
  std::lock_guard lock(mutex_);
  amount_ = amount;
}

void Account::advance(Clock::time_point now) const {
  if (slot_ms_ == 0) {
    return;
  }
  const std::int64_t slot = since_epoch_ms(now) / slot_ms_;
  if (slot <= head_) {
    return;
  }
  if (slot - head_ >= static_cast<std::int64_t>(slots_.size())) {
    slots_.fill(0);
    window_spent_ = 0;
  } else {
    for (std::int64_t s = head_ + 1; s <= slot; ++s) {
      auto& leaving =
          slots_[static_cast<std::size_t>(s % static_cast<std::int64_t>(slots_.size()))];
      window_spent_ -= leaving;
      leaving = 0;
    }
  }
  head_ = slot;
}

void Account::add_locked(std::uint64_t amount) {
  window_spent_ += amount;
  if (slot_ms_ != 0) {
    slots_[static_cast<std::size_t>(head_ % static_cast<std::int64_t>(slots_.size()))] += amount;
  }
  total_ += amount;
}

std::uint64_t Account::take(std::uint64_t wanted, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  advance(now);
  const std::uint64_t left = window_spent_ >= limit() ? 0 : limit() - window_spent_;
  const std::uint64_t taken = std::min(wanted, left);
  add_locked(taken);
  return taken;
}

bool Account::take_anyway(std::uint64_t wanted, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  advance(now);
  const bool over = window_spent_ >= limit() || wanted > limit() - window_spent_;
  add_locked(wanted);
  return over && wanted > 0;
}

void Account::give_back(std::uint64_t amount, Clock::time_point now) {
  if (amount == 0) {
    return;
  }
  std::lock_guard lock(mutex_);
  advance(now);
  total_ -= std::min(total_, amount);
  if (slot_ms_ == 0) {
    window_spent_ -= std::min(window_spent_, amount);
    return;
  }
  // Taken moments ago: from the newest slots first.
  for (std::size_t i = 0; i < slots_.size() && amount > 0; ++i) {
    auto& slot = slots_[static_cast<std::size_t>((head_ - static_cast<std::int64_t>(i)) %
                                                 static_cast<std::int64_t>(slots_.size()))];
    const std::uint64_t back = std::min(slot, amount);
    slot -= back;
    window_spent_ -= back;
    amount -= back;
  }
}

Account::State Account::state(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  advance(now);
  return {limit(), window_spent_, total_, stops_};
}

void Account::grant(std::uint64_t more) {
  std::lock_guard lock(mutex_);
  constexpr std::uint64_t kCap = std::numeric_limits<std::uint64_t>::max() / 4;  // never wraps
  granted_ = more > kCap - granted_ ? kCap : granted_ + more;
}

void Account::count_stop() {
  std::lock_guard lock(mutex_);
  ++stops_;
}

std::shared_ptr<Account> Ledger::account(const rules::BudgetLimit& limit) {
  std::shared_ptr<Account> account;
  {
    std::lock_guard lock(mutex_);
    auto& slot = accounts_[limit.key];
    if (!slot) {
      slot = std::make_shared<Account>(limit.window);
    }
    account = slot;
  }
  account->set_amount(limit.amount);
  return account;
}

std::shared_ptr<Account> Ledger::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto it = accounts_.find(key);
  return it == accounts_.end() ? nullptr : it->second;
}

std::string Ledger::render_prometheus(const rules::BudgetRules& rules) const {
  if (rules.empty()) {
    return {};
  }
  std::string amount =
      "# HELP sandgate_budget_amount The amount of each budget limit (bytes, connections or "
      "requests) per its window.\n# TYPE sandgate_budget_amount gauge\n";
  std::string spent =
      "# HELP sandgate_budget_spent What was spent of each budget limit in its window now.\n"
      "# TYPE sandgate_budget_spent gauge\n";
  std::string left =
      "# HELP sandgate_budget_left What is left of each budget limit in its window now.\n"
      "# TYPE sandgate_budget_left gauge\n";
  std::string total =
      "# HELP sandgate_budget_counted_total Everything counted against each budget limit since "
      "the gate started.\n# TYPE sandgate_budget_counted_total counter\n";
  std::string stops =
      "# HELP sandgate_budget_stops_total Connections, requests and transfers a spent budget "
      "limit refused or cut.\n# TYPE sandgate_budget_stops_total counter\n";
  const auto now = Clock::now();
  for (const rules::BudgetLine& line : rules.lines()) {
    for (const rules::BudgetLimit& limit : line.limits) {
      const std::shared_ptr<Account> account = find(limit.key);
      const Account::State state = account ? account->state(now) : Account::State{limit.amount};
      // In force: the limit's amount and what people granted on top (--unknown=ask).
      const std::string labels = "{rule=\"" + label_value(line.rule()) + "\",kind=\"" +
                                 std::string(rules::to_string(limit.kind)) + "\",window=\"" +
                                 std::string(rules::to_string(limit.window)) + "\"} ";
      amount += "sandgate_budget_amount" + labels + std::to_string(state.amount) + "\n";
      spent += "sandgate_budget_spent" + labels + std::to_string(state.spent) + "\n";
      left += "sandgate_budget_left" + labels +
              std::to_string(state.spent >= state.amount ? 0 : state.amount - state.spent) + "\n";
      total += "sandgate_budget_counted_total" + labels + std::to_string(state.total) + "\n";
      stops += "sandgate_budget_stops_total" + labels + std::to_string(state.stops) + "\n";
    }
  }
  return amount + spent + left + total + stops;
}

}  // namespace sandgate::budget
