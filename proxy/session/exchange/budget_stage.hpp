// The egress budgets of one exchange, whatever its wire (an HTTP/1.1 request, an HTTP/2 stream,
// a WebSocket's frames): its head and body bytes are taken from the destination's limits before
// they are sent. Report-only mode takes everything and writes the first overrun as a would-deny
// line; under --unknown=ask a person is asked for what a transfer lacks.
//
// Runs on the session's worker thread, as the exchange does.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/session/connection_facts.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/budgets.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::session::exchange {

class BudgetStage {
 public:
  BudgetStage() = default;

  // The limits that apply to the exchange, from the ledger and the rules the request is
  // `decided` with (none when no budgets are set). Every identity the connection is judged by
  // counts: an inspected one's tunnel facts (the address the client chose and the name its
  // ClientHello gave), otherwise the request's host; `dialled`, the address a name was dialled
  // at. `decided` must outlive the stage (its report-only mode, its questions for more).
  void open(SessionContext& context, const DecisionState& decided, std::string_view method,
            const rules::Host& host, std::uint16_t port, const ConnectionFacts* inspected,
            std::optional<rules::IpAddress> dialled);

  // Whether any limit applies: when none does, nothing need be counted.
  bool active() const { return budgets_ && !budgets_->empty(); }

  // Takes `bytes` (a head, with its body when the length is known) before they are sent; the
  // stop when a limit has not that much left (then nothing is taken).
  std::optional<budget::Stop> take_whole(rules::BudgetKind kind, std::uint64_t bytes);
  // take_whole, and while a limit lacks room a person is asked for what the bytes need of it
  // (each limit short of them in turn), so that a yes lets them through; the stop when a person
  // refused or nobody could be asked.
  boost::asio::awaitable<std::optional<budget::Stop>> take_whole_or_ask(rules::BudgetKind kind,
                                                                        std::uint64_t bytes);
  // How many of a body piece's `size` bytes may be sent: all of them when no limit applies or
  // the body was paid with its head (paid_whole); fewer when a limit ends inside it, with `stop`
  // set.
  std::size_t take_piece(rules::BudgetKind kind, std::size_t size,
                         std::optional<budget::Stop>& stop);
  // Under --unknown=ask, asks a person for the stop's amount; true when granted.
  boost::asio::awaitable<bool> more_granted(const budget::Stop& stop);

  // The body of `kind` was taken whole with its head: its pieces are not taken again.
  void paid_whole(rules::BudgetKind kind, bool paid);

 private:
  void take_anyway(rules::BudgetKind kind, std::uint64_t bytes);
  bool enforced() const;

  SessionContext* context_ = nullptr;
  const DecisionState* decided_ = nullptr;
  std::string method_;
  rules::Host host_;
  std::uint16_t port_ = 0;
  std::optional<budget::DestinationBudgets> budgets_;
  bool up_paid_ = false;
  bool down_paid_ = false;
  bool reported_ = false;  // report-only mode: its would-deny line was written
};

}  // namespace sandgate::session::exchange
