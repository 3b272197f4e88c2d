// The egress budgets that apply to one destination (rules/budgets.hpp), with the gate's
// accounts of them (ledger.hpp): what a connection to it counts into, and what stops it.
//
// Made by the connection that counts, on its worker's thread, from the budget rules in force;
// a connection that outlives a reload makes a new one from the new rules (the accounts, and what
// they have spent, stay the ledger's). Not thread-safe itself; the accounts are.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proxy/budget/ledger.hpp"
#include "rules/budgets.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::budget {

// Why a spent budget stops something: the limit's line (`budgets.txt:3 github.com`) and a
// sentence for the client and the log.
struct Stop {
  std::string rule;
  std::string sentence;
  // --unknown=ask: what a person is asked ("50 MB more received (budgets.txt:2 github.com: 50 MB
  // per run)"), and what an answer that allows it grants the account: the limit's amount again,
  // or what the waiting request or response lacks when that is more ("18.1 kB more sent (the
  // waiting transfer needs 20.1 kB, 2 kB left; ...)"), so that a yes lets it through.
  std::string question;
  std::shared_ptr<Account> account;
  std::uint64_t amount = 0;
  // What a `session` answer is remembered under: the limit itself (its ledger key), whatever
  // amount one question or another asks for. Empty: the question's text.
  std::string remembered_as = {};
};

class DestinationBudgets {
 public:
  DestinationBudgets() = default;
  // The limits of `rules` that apply to host:port (and the address a name was dialled at, and
  // `tls_name`, the name a tunnel to an address gave in its ClientHello): every identity the
  // connection is judged by, each line once.
  DestinationBudgets(Ledger& ledger, std::shared_ptr<const rules::BudgetRules> rules,
                     const rules::Host& host, std::uint16_t port,
                     const std::optional<rules::IpAddress>& dialled = {},
                     const rules::Host* tls_name = nullptr);

  // Drops the limits `counted` holds: what is left are those an identity learnt later (a
  // ClientHello's name) adds, to count what the earlier ones did not.
  void drop_limits_of(const DestinationBudgets& counted);

  bool empty() const { return charges_.empty(); }
  // The rules it was made from (null: none), so that a holder can tell a reload's new ones.
  const rules::BudgetRules* made_from() const { return rules_.get(); }

  // One connection or request, counted against every limit of `kind`. Enforced: counted only
  // when every one has room, else the stop of the first that has none. Not enforced
  // (report-only mode): counted whatever, and the stop of a limit it went over, if any.
  std::optional<Stop> count_one(rules::BudgetKind kind, bool enforce);

  // Bytes: takes up to `wanted` from every limit of `kind` (the least any has left) and returns
  // it; 0 when one is spent (stop() says which). A kind no limit names gets `wanted`.
  std::uint64_t reserve(rules::BudgetKind kind, std::uint64_t wanted);
  // Of what reserve() took, `moved` was used: the rest goes back.
  void settle(rules::BudgetKind kind, std::uint64_t reserved, std::uint64_t moved);
  // Bytes that moved whatever the budgets say (sent before the relay began, report-only mode):
  // counted, and the stop of a limit they went over, if any.
  std::optional<Stop> charge(rules::BudgetKind kind, std::uint64_t bytes);
  // The stop of a limit of `kind` with nothing left, if one has none (counted as a stop).
  std::optional<Stop> spent(rules::BudgetKind kind);
  // The stop of the limit of `kind` with the least left (nothing, or too little for a whole
  // part), counted as a stop in /metrics. `wanted`: what the waiting transfer needs in all, so
  // that the question asks for at least what that limit lacks of it.
  Stop stop(rules::BudgetKind kind, std::uint64_t wanted = 0);
  // How many limits of `kind` apply (each may need a person's yes before a transfer fits).
  std::size_t limits(rules::BudgetKind kind) const;

 private:
  struct Charge {
    const rules::BudgetLine* line;
    const rules::BudgetLimit* limit;
    std::shared_ptr<Account> account;
  };
  // `wanted`: what the waiting transfer needs in all, of which the limit has `left`; a question
  // asks for what it lacks when that is more than the limit's amount.
  Stop stop_for(const Charge& charge, std::uint64_t wanted = 0, std::uint64_t left = 0) const;

  std::shared_ptr<const rules::BudgetRules> rules_;
  std::vector<Charge> charges_;
  std::string where_;                                      // "github.com:443", for the sentence
  std::vector<std::pair<Account*, std::uint64_t>> taken_;  // reserve()'s scratch
};

}  // namespace sandgate::budget
