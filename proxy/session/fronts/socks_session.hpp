// SOCKS5 (RFC 1928) on the gate's listener, with RFC 1929's username/password carrying the token:
// the handshake (greeting, method, credentials, request), then the same tunnel path as an HTTP
// CONNECT (connect_tunnel.hpp) with SOCKS replies as its front end. Also SOCKS4's refusal.
//
// A client's first byte decides (client_session.cpp): 0x05 comes here, 0x04 is refused, anything
// else is HTTP. The whole handshake must be done by the head timeout's deadline; its messages
// are bounded by construction (socks5_wire.hpp, at most 513 bytes each). Bytes a client sends
// after its request, before the reply, stay in the buffer: they are the tunnel's first bytes,
// inspected as a CONNECT's are.
//
// Runs on the session's worker thread; never throws on the client's account.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>

#include "proxy/session/session_context.hpp"
#include "proxy/socks/socks5_wire.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

// Serves a SOCKS5 client whose first bytes (starting with 0x05) are in `buffer`, by `deadline`
// for the handshake. With a token set, username/password is required and the password must be
// the token (any user name); without one, "no authentication" is chosen. Only CONNECT is
// served: BIND and UDP ASSOCIATE get command_not_supported. A domain name is parsed with
// rules::parse_host, an IPv4 or IPv6 address is an IP literal to the policy, as in a CONNECT.
// Every refusal is logged (method "SOCKS5") with its reason and rule and answered with
// socks_reply_code(reason).
boost::asio::awaitable<void> serve_socks5(SessionContext& context,
                                          boost::beast::flat_buffer& buffer,
                                          std::chrono::steady_clock::time_point deadline);

// Answers a SOCKS4/4a client with SOCKS4's refusal (request rejected), logs it (method
// "SOCKS4", reason socks4-refused) and closes.
boost::asio::awaitable<void> refuse_socks4(SessionContext& context);

// Answers a SOCKS5 client beyond the connection limit (its first byte was 0x05): reads its
// greeting within `wait`, chooses a method it offered and answers its request in advance with
// general failure (connection-limit's code). Nothing is logged here (refuse_busy() does) and
// the socket is left open for the caller's close_gracefully(). Worker thread.
boost::asio::awaitable<void> answer_socks5_busy(boost::asio::ip::tcp::socket& client,
                                                std::chrono::milliseconds wait);

// The SOCKS5 reply code a request refused for `reason` gets: the policy's denials
// not_allowed_by_ruleset, DNS failures host_unreachable, a refused connection
// connection_refused, timeouts ttl_expired, a malformed request general_failure. Exhaustive:
// a new reason does not compile until it is given a code here. Pure.
socks::ReplyCode socks_reply_code(rules::Reason reason);

}  // namespace sandgate::session
