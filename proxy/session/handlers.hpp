// The request handlers a session dispatches to, after the request head has been read.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <optional>

#include "proxy/session/replies.hpp"
#include "proxy/session/graceful_close.hpp"
#include "proxy/session/session_context.hpp"

namespace sandgate::session {

using HeadParser = boost::beast::http::request_parser<boost::beast::http::empty_body>;
struct HeadRead;  // http_head.hpp

// CONNECT host:port: decide, dial, answer 200, relay. `buffer` holds bytes that arrived after
// the head; they belong to the tunnel.
boost::asio::awaitable<void> handle_connect(SessionContext& context, HeadParser& parser,
                                            boost::beast::flat_buffer& buffer);

// An absolute-form request (`GET http://host/path`): decide and forward, then go on with the
// next request on the same connection while both sides keep it alive.
boost::asio::awaitable<void> handle_http(SessionContext& context, HeadParser& parser,
                                         boost::beast::flat_buffer& buffer);

// Writes the proxy's own reply for `reason` (its row's status and Proxy-Status error, see
// replies.hpp) and logs the decision with the row's verdict; the caller then closes.
boost::asio::awaitable<void> reply_and_log(SessionContext& context, rules::Reason reason,
                                           std::string_view method, std::string_view host,
                                           std::uint16_t port, std::string_view sentence,
                                           std::string_view rule = {},
                                           DeniedAt at = DeniedAt::target);

// --unknown=ask: holds the request on the gate's question about host:port (one question per
// host:port, proxy/ask/question_board.hpp) until a person answers, the ask timeout passes or the
// drain begins, and returns the decision that gives: allowed (`answered` set), or a denial with
// ask-denied, ask-timeout or ask-unavailable (an allow when the ask default is allow). Nothing
// when the request is over instead: its client left, or the gate is shutting down; its line has
// been written and the client closed. Completes on the session's worker; the drain (the board
// closed, or the client socket closed at the deadline) ends the wait.
boost::asio::awaitable<std::optional<rules::Decision>> ask_about(SessionContext& context,
                                                                 std::string_view method,
                                                                 const rules::Host& host,
                                                                 std::uint16_t port);

// Answers a request head that could not be read (timeout, too large, malformed) with the
// matching reply and logs it; does nothing for `ok` and `closed`.
boost::asio::awaitable<void> reply_to_failed_head(SessionContext& context, const HeadRead& read);

}  // namespace sandgate::session
