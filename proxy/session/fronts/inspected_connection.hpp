// An inspected TLS connection: a tunnel (HTTP CONNECT, SOCKS5 or capture) to a host the request
// rules judge or the inspection patterns name, terminated at the gate so that each request in it
// goes through the admission pipeline and the request rules like a plain-HTTP request does.
//
// The order: the tunnel was admitted and dialled like any other and its ClientHello checked
// (open_tunnel.cpp); then the origin's TLS is set up and verified first (the system's roots
// and --inspect-extra-ca, the host's name or address), then the client's, with a leaf for the
// host minted by the gate's CA. The requests are then served by the plain-HTTP exchange
// (http_forward.cpp) over the two TLS streams: one parser, one relay, bodies streamed. A kept-
// alive connection has each request decided again with the rules in force when it arrives;
// an origin connection that closed is dialled and verified again.
//
// A request must be in origin form with a Host that names the tunnel's host (and its port, when
// not 443); anything else is refused. An origin whose certificate fails verification is never
// talked to: the client's first request is answered 502 with the reason `origin-certificate`
// and the certificate's subject. A WebSocket upgrade is judged like any request; after the
// origin's 101 its frames are relayed one by one (inspected_websocket.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstdint>

#include "proxy/session/connection_facts.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/host.hpp"

namespace sandgate::session {

// Serves the inspected connection whose tunnel open_tunnel() set up with `facts` (as their
// served_host() and port; offers_h2: whether the origin is offered h2) and `tunnel` (what the
// tunnel's request was decided with: whether its origin connection may be pooled): context.client
// has had its tunnel answered, context.upstream is connected to the origin (or through the parent
// to it), `hello` holds what the client sent so far (its ClientHello). Every request is judged from
// `facts`, each with its own DecisionState made when it arrives. Writes every request's lines and
// the connection's end line; closes both sockets.
boost::asio::awaitable<void> serve_inspected(SessionContext& context, const DecisionState& tunnel,
                                             const ConnectionFacts& facts, std::string_view method,
                                             boost::beast::flat_buffer& hello);

}  // namespace sandgate::session
