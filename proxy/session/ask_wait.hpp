// --unknown=ask, on the connection's side: a request waits on the gate's question (the board is
// proxy/ask/question_board.hpp) as stage 2 of the admission pipeline (admission.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "proxy/ask/question_board.hpp"
#include "proxy/budget/destination_budgets.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/host.hpp"
#include "rules/policy.hpp"

namespace sandgate::session {

// --unknown=ask: holds the request on the gate's question about host:port (one question per
// host:port, proxy/ask/question_board.hpp) until a person answers, the ask timeout passes or the
// drain begins, and returns the decision that gives: allowed (`answered` set), or a denial with
// ask-denied, ask-timeout or ask-unavailable (an allow when the ask default is allow). Nothing
// when the request is over instead: its client left (its one line an end line, outcome closed,
// or reset for a stream its client reset; reason client-closed), or the gate is shutting down;
// its line has been written and the client closed (a stream's client: its front ends the
// stream). Completes on the session's worker; the drain (the board closed, or the client socket
// closed at the deadline) ends the wait. The ask timeout and default are those of the settings
// the request is `decided` with; a stream's client is watched through decided.stream, and a
// reload that closes a stream's connection ends its wait with a denial the caller's
// still_wanted() turns into the revocation's line.
// `request`: the question is about that request (its method and path) rather than host:port.
//
// A reload while it waits: if the new rules decide what was asked (the destination's policy; for
// a spent budget's question, a rule that denies the destination; for a request, `still_asked`
// returning false), the request stops waiting (the question is
// withdrawn when nobody else waits on it) and comes back with `ask` set and no answer
// (withdrawn()): the caller decides it again by the rules now in force. Otherwise it waits on.
using StillAsked = std::function<bool(const std::shared_ptr<const rules::Policy>&)>;
boost::asio::awaitable<std::optional<rules::Decision>> ask_about(
    SessionContext& context, const DecisionState& decided, std::string_view method,
    const rules::Host& host, std::uint16_t port, const ask::RequestQuestion* request = nullptr,
    const StillAsked* still_asked = nullptr);

// What ask_about returns when a reload's rules decided the question instead of a person.
inline bool withdrawn(const rules::Decision& decision) {
  return decision.ask && !decision.allowed();
}

// The question a spent budget asks a person ("50 MB more sent (budgets.txt:2 ...)"), remembered
// by a `session` answer under its limit, whatever amount it asks for.
ask::RequestQuestion budget_question(const budget::Stop& stop);

// --unknown=ask, for a spent egress budget (proxy/budget/): asks the person whether `stop`'s
// limit may have stop.amount more (its amount again, or what the waiting transfer lacks when
// that is more: "allow github.com:443 50 MB more sent (...)?"). granted: allowed (the account
// was granted stop.amount, once for the question however many requests waited on it, so the
// caller must still take what it needs and may find it taken; an ask default of allow grants it
// too); refused: denied, or no
// answer in time with an ask default of deny; not_asked: the gate does not ask (no
// --unknown=ask, nobody to ask); over: the request ended while it waited (its line written).
enum class AskedForMore : std::uint8_t { granted, refused, not_asked, over };
boost::asio::awaitable<AskedForMore> ask_for_more(SessionContext& context,
                                                  const DecisionState& decided,
                                                  std::string_view method, const rules::Host& host,
                                                  std::uint16_t port, const budget::Stop& stop);

}  // namespace sandgate::session
