// --unknown=ask, on the connection's side: a request waits on the gate's question (the board is
// proxy/ask/question_board.hpp) as stage 2 of the admission pipeline (admission.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <string_view>

#include "proxy/ask/question_board.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/host.hpp"
#include "rules/policy.hpp"

namespace sandgate::session {

// --unknown=ask: holds the request on the gate's question about host:port (one question per
// host:port, proxy/ask/question_board.hpp) until a person answers, the ask timeout passes or the
// drain begins, and returns the decision that gives: allowed (`answered` set), or a denial with
// ask-denied, ask-timeout or ask-unavailable (an allow when the ask default is allow). Nothing
// when the request is over instead: its client left, or the gate is shutting down; its line has
// been written and the client closed. Completes on the session's worker; the drain (the board
// closed, or the client socket closed at the deadline) ends the wait.
// `request`: the question is about that request (its method and path) rather than host:port.
boost::asio::awaitable<std::optional<rules::Decision>> ask_about(
    SessionContext& context, std::string_view method, const rules::Host& host, std::uint16_t port,
    const ask::RequestQuestion* request = nullptr);

}  // namespace sandgate::session
