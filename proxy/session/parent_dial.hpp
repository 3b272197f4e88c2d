// Reaching a destination through the parent proxy (--parent-proxy): connect to the parent, send
// it CONNECT for the destination (with the configured credentials) and read its reply head with
// parent::read_reply_head, strictly and bounded in size and time. Only a 2xx opens the tunnel;
// whatever the parent sends after its head is the destination's first bytes.
//
// The gate has decided everything it can before this (names, ports, LaunchDarkly); the
// destination's name is not resolved here, the parent resolves it, so the address rules on
// resolved names cannot run. IP-literal destinations were checked by the policy already.
//
// Everything here runs on the session's worker thread; the coroutines complete on it, and the
// drain (which closes the session's sockets) ends them.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <cstdint>

#include "proxy/parent/parent_proxy.hpp"
#include "proxy/session/session_context.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "proxy/session/wire/http_target.hpp"
#include "rules/host.hpp"

namespace sandgate::session {

// Connects `context.upstream` to the parent itself (its name resolved by the gate's resolver,
// its addresses not held to the policy: the operator named it), within the connect timeout of
// the settings the request is `decided` with (and its credentials, for CONNECT).
// Failures are parent-unreachable. For plain HTTP, which is then sent in absolute form.
boost::asio::awaitable<DialResult> dial_parent(SessionContext& context, DecisionState& decided,
                                               const parent::ParentAddress& parent);

// dial_parent(), then CONNECT host:port and the parent's reply head, which must arrive within
// the connect timeout plus the DNS timeout (the parent resolves and connects in that time).
// Connected on a 2xx; then `from_parent` holds the bytes that came after the head (usually
// none). Otherwise parent-refused (a non-2xx: its status and reason phrase in the sentence) or
// parent-unreachable (no connection, the parent closed, a malformed or overlong head, a
// timeout), with context.upstream closed. Counts the dial's outcome in the worker's metrics.
boost::asio::awaitable<DialResult> connect_through_parent(
    SessionContext& context, DecisionState& decided, const parent::ParentAddress& parent,
    const rules::Host& host, std::uint16_t port, boost::beast::flat_buffer& from_parent);

// Why a connection the gate inspects is refused (reason bad-response) when the parent passed
// `count` bytes behind its 2xx head: the origin of a connection the gate secures speaks only
// after the gate's own ClientHello, and nothing may reach the client outside the gate's TLS.
std::string bytes_before_handshake(const rules::Host& host, std::uint16_t port, std::size_t count);

// A plain request's head as the parent proxy gets it, when `target` goes through one
// (settings::parent_for()): the target in absolute form (`http://authority/path`; `OPTIONS *` as
// `http://authority`, RFC 9112 section 3.2.4) and, with credentials, Proxy-Authorization.
// Unchanged otherwise. The client's own Proxy-Authorization (for this gate) was stripped before.
void use_parent_form(boost::beast::http::request_header<>& head, const settings::Settings& settings,
                     const HttpTarget& target);

}  // namespace sandgate::session
