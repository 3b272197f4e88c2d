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

#include "proxy/session/worker_context.hpp"
#include "proxy/session/handlers.hpp"

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

// How a request's credentials compare with the gate's token.
enum class AuthCheck : std::uint8_t {
  ok,         // no token is required, or the request carries the right one
  missing,    // no Proxy-Authorization field
  malformed,  // not exactly one `Proxy-Authorization: Basic <base64 of user:password>`
  wrong,      // well-formed Basic credentials whose password is not the token
};

struct AuthResult {
  AuthCheck check = AuthCheck::ok;
  std::string_view problem;  // for `malformed`: why, as a phrase
};

// Checks the Proxy-Authorization fields of a request head against `token` (empty: none is
// required). Any user name is accepted; the password must equal the token, compared in time
// that does not depend on where they differ. Parsed strictly: the scheme `Basic` (any case),
// one or more spaces, canonical padded base64 and nothing after it, a ':' in what it decodes
// to, and exactly one such field. Pure; thread-safe.
AuthResult check_proxy_authorization(const boost::beast::http::fields& head,
                                     std::string_view token);

// True when `given` equals `secret`, in time that depends on the two lengths only, never on how
// much of the secret a guess got right. The token checks of HTTP and SOCKS5 both use it. Pure.
bool equals_secret(std::string_view given, std::string_view secret);

// Strict base64 (RFC 4648 section 4: the standard alphabet, padding required, no whitespace,
// unused bits zero); nothing when `text` is not that. Exposed for tests.
std::optional<std::string> decode_base64_strict(std::string_view text);

// Applies check_proxy_authorization() with the gate's token to the request head in `parser`.
// When it fails, answers 407 (with `Proxy-Authenticate: Basic realm="sandgate"`), logs the
// denial (reason auth-required or auth-failed), closes the client, and returns false. Runs on
// the session's thread. Every request head of a connection must pass through it before it is
// acted on: serve_client() calls it for the first, the plain-HTTP loop for the ones after.
boost::asio::awaitable<bool> authorize_request(SessionContext& context, const HeadParser& parser);

}  // namespace sandgate::session
