// One client connection, from its first byte to its close: tell SOCKS from HTTP by that byte
// (SOCKS5 goes to socks_session.hpp), read the request head, check the client's token when the
// gate requires one, then hand over to the CONNECT tunnel or to plain-HTTP forwarding.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/fields.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/session/session_context.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "proxy/session/wire/proxy_token.hpp"
#include "proxy/session/worker_context.hpp"

namespace sandgate::session {

// Serves one accepted client on `worker`'s thread. The caller has counted the connection in
// SharedState::open_connections; the session uncounts it when it ends. `client_label`, when not
// empty, names the client in the log (its address from accept, or for a unix socket client
// "uid:1000"); empty: the address is asked of the socket.
// Never throws.
boost::asio::awaitable<void> serve_client(WorkerContext& worker,
                                          boost::asio::ip::tcp::socket client,
                                          std::string client_label = {});

// Refusals over the connection limit one worker answers at once; past them, a refusal is
// written and closed at once (see WorkerContext::busy_refusals).
inline constexpr std::size_t kMaxBusyRefusals = 64;

// Answers a client beyond the connection limit with 503 (a SOCKS5 client with its general
// failure), logs and counts it, and closes it.
boost::asio::awaitable<void> refuse_busy(WorkerContext& worker,
                                         boost::asio::ip::tcp::socket client);

// ---- Client authentication (SANDGATE_TOKEN) ----

// Applies check_proxy_authorization() with the gate's token to the request head in `parser`.
// When it fails, answers 407 (with `Proxy-Authenticate: Basic realm="sandgate"`), logs the
// denial (reason auth-required or auth-failed), closes the client, and returns false. Runs on
// the session's thread. Every request head of a connection must pass through it before it is
// acted on: serve_client() calls it for the first, the plain-HTTP loop for the ones after.
boost::asio::awaitable<bool> authorize_request(SessionContext& context, const HeadParser& parser);

}  // namespace sandgate::session
