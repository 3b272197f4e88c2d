// A destination's budgets. See destination_budgets.hpp.
#include "proxy/budget/destination_budgets.hpp"

#include <algorithm>

namespace sandgate::budget {

DestinationBudgets::DestinationBudgets(Ledger& ledger,
                                       std::shared_ptr<const rules::BudgetRules> rules,
                                       const rules::Host& host, std::uint16_t port,
                                       const std::optional<rules::IpAddress>& dialled,
                                       const rules::Host* tls_name)
    : rules_(std::move(rules)), where_(host.display() + ":" + std::to_string(port)) {
  if (!rules_ || rules_->empty()) {
    return;
  }
  std::vector<const rules::BudgetLine*> lines = rules_->match(host, port, dialled);
  if (tls_name != nullptr) {
    for (const rules::BudgetLine* line : rules_->match(*tls_name, port)) {
      if (std::find(lines.begin(), lines.end(), line) == lines.end()) {
        lines.push_back(line);
      }
    }
  }
  for (const rules::BudgetLine* line : lines) {
    for (const rules::BudgetLimit& limit : line->limits) {
      charges_.push_back({line, &limit, ledger.account(limit)});
    }
  }
}

void DestinationBudgets::drop_limits_of(const DestinationBudgets& counted) {
  std::erase_if(charges_, [&counted](const Charge& charge) {
    return std::any_of(counted.charges_.begin(), counted.charges_.end(),
                       [&charge](const Charge& c) { return c.account == charge.account; });
  });
}

Stop DestinationBudgets::stop_for(const Charge& charge, std::uint64_t wanted,
                                  std::uint64_t left) const {
  const rules::BudgetLimit& limit = *charge.limit;
  const bool everything = charge.line->entry == "*";
  std::string sentence = where_ + " has spent " + (everything ? "the gate's" : "its") +
                         " budget of " + rules::describe_amount(limit.kind, limit.amount);
  if (limit.kind == rules::BudgetKind::up) {
    sentence += " sent";
  } else if (limit.kind == rules::BudgetKind::down) {
    sentence += " received";
  }
  sentence += limit.window == rules::BudgetWindow::run
                  ? " while the gate runs"
                  : " per " + std::string(rules::to_string(limit.window));
  sentence += " (" + charge.line->rule() + ")";
  if (!charge.line->message.empty()) {
    sentence += ": " + charge.line->message;
  } else {
    sentence += ".";
  }
  // A yes grants the limit's amount again, or what the waiting transfer lacks when that is more:
  // never less than it needs to go through.
  const std::uint64_t lacking = wanted > left ? wanted - left : 0;
  const std::uint64_t grant = std::max(limit.amount, lacking);
  std::string question = rules::describe_amount(limit.kind, grant) + " more";
  if (limit.kind == rules::BudgetKind::up) {
    question += " sent";
  } else if (limit.kind == rules::BudgetKind::down) {
    question += " received";
  }
  question += " (";
  if (lacking > limit.amount) {
    question += "the waiting transfer needs " + rules::describe_amount(limit.kind, wanted) + ", " +
                rules::describe_amount(limit.kind, left) + " left; ";
  }
  question += charge.line->rule() + ": " + rules::describe_limit(limit) + ")";
  return {charge.line->rule(),  std::move(sentence), std::move(question), charge.account, grant,
          "budget " + limit.key};
}

std::size_t DestinationBudgets::limits(rules::BudgetKind kind) const {
  return static_cast<std::size_t>(std::count_if(
      charges_.begin(), charges_.end(), [kind](const Charge& c) { return c.limit->kind == kind; }));
}

std::optional<Stop> DestinationBudgets::count_one(rules::BudgetKind kind, bool enforce) {
  if (!enforce) {
    return charge(kind, 1);
  }
  // All or nothing: a refused request spends nothing.
  std::vector<Account*> taken;
  for (const Charge& c : charges_) {
    if (c.limit->kind != kind) {
      continue;
    }
    if (c.account->take(1) == 0) {
      for (Account* account : taken) {
        account->give_back(1);
      }
      c.account->count_stop();
      return stop_for(c);
    }
    taken.push_back(c.account.get());
  }
  return std::nullopt;
}

std::uint64_t DestinationBudgets::reserve(rules::BudgetKind kind, std::uint64_t wanted) {
  std::uint64_t granted = wanted;
  taken_.clear();  // reused: no allocation per read once it has grown
  for (const Charge& c : charges_) {
    if (c.limit->kind != kind || granted == 0) {
      continue;
    }
    const std::uint64_t got = c.account->take(granted);
    taken_.emplace_back(c.account.get(), got);
    granted = got;
  }
  // Each took at most what the one before it gave: give back what is over the least.
  for (auto& [account, got] : taken_) {
    account->give_back(got - granted);
  }
  return granted;
}

void DestinationBudgets::settle(rules::BudgetKind kind, std::uint64_t reserved,
                                std::uint64_t moved) {
  if (moved >= reserved) {
    return;
  }
  for (const Charge& c : charges_) {
    if (c.limit->kind == kind) {
      c.account->give_back(reserved - moved);
    }
  }
}

std::optional<Stop> DestinationBudgets::charge(rules::BudgetKind kind, std::uint64_t bytes) {
  std::optional<Stop> over;
  for (const Charge& c : charges_) {
    if (c.limit->kind == kind && c.account->take_anyway(bytes) && !over) {
      over = stop_for(c);
    }
  }
  return over;
}

std::optional<Stop> DestinationBudgets::spent(rules::BudgetKind kind) {
  for (const Charge& c : charges_) {
    if (c.limit->kind != kind) {
      continue;
    }
    const Account::State state = c.account->state();
    if (state.spent >= state.amount) {
      c.account->count_stop();
      return stop_for(c);
    }
  }
  return std::nullopt;
}

Stop DestinationBudgets::stop(rules::BudgetKind kind, std::uint64_t wanted) {
  // The limit with the least left (a spent one, or the one a whole part did not fit in).
  const Charge* tightest = nullptr;
  std::uint64_t least = 0;
  for (const Charge& c : charges_) {
    if (c.limit->kind != kind) {
      continue;
    }
    const Account::State state = c.account->state();
    const std::uint64_t left = state.spent >= state.amount ? 0 : state.amount - state.spent;
    if (tightest == nullptr || left < least) {
      tightest = &c;
      least = left;
    }
  }
  if (tightest == nullptr) {
    Stop none;
    none.sentence = where_ + " has spent a budget.";
    return none;
  }
  tightest->account->count_stop();
  return stop_for(*tightest, wanted, least);
}

}  // namespace sandgate::budget
