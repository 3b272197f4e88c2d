// An inspected HTTP/1.1 client's requests to an origin that chose h2: each request goes as a
// stream of an HTTP/2 origin connection the worker's clients share (h2_origin_pool.hpp), through
// the translation of exchange/h1_over_h2_upstream.hpp, while the HTTP/1.1 exchange
// (http_forward.cpp and its two sides) runs as it does over TLS: the same request pipeline, the
// same response stages. These are the steps http_forward.cpp's reach of the origin takes for it:
// the tunnel's connection adopted, a connection found or adopted for each request, its stream
// attached as context.upstream_stream and ended after.
//
// A WebSocket upgrade never goes this way (it needs the origin's HTTP/1.1, or RFC 8441, which
// the gate does not translate from HTTP/1.1): it is dialled offering HTTP/1.1 only.
//
// Thread: the session's worker, every call.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>

#include "proxy/session/admission.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/fronts/http_exchange.hpp"
#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/h2_origin.hpp"
#include "proxy/session/session_context.hpp"

namespace sandgate::session {

// The tunnel's origin connection, when its origin chose h2: the shared one it took (put in
// context), or the one it secured, started as an HTTP/2 connection (shared unless its client
// reached it by address) and made upstream.h2. Nothing when it chose HTTP/1.1.
void adopt_tunnels_h2(SessionContext& context, InspectedOrigin& origin, Upstream& upstream);

// A connection secure_upstream() has just secured for a request: when its origin chose h2,
// adopted as adopt_tunnels_h2 does and returned; null (context.upstream left as it is) when it
// chose HTTP/1.1.
std::shared_ptr<H2Origin> adopt_secured_h2(SessionContext& context, InspectedOrigin& origin,
                                           Upstream& upstream, const Admission& admission);

// upstream.h2 when it takes a stream now, its address held to the rules the request is
// `decided` with (refused in `admission` when they deny it); null when it cannot serve.
std::shared_ptr<H2Origin> own_h2_with_room(DecisionState& decided, Admission& admission,
                                           const InspectedOrigin& origin, Upstream& upstream);

// The exchange goes as a stream of `connection`: its translation attached as
// context.upstream_stream, the upstream's address and key set from it.
void go_over_h2(SessionContext& context, Upstream& upstream, std::shared_ptr<H2Origin> connection,
                std::string key);

// The stream of the last exchange, if any, ended (reset unless it was over) and detached.
void end_h2_stream(SessionContext& context, Upstream& upstream);

// The sentence for a WebSocket upgrade refused because its origin speaks h2 (`why`: what the
// dial offering HTTP/1.1 only said); nothing when no connection shows that it does.
std::optional<std::string> websocket_needs_http1(SessionContext& context, const Upstream& upstream,
                                                 const std::string& key, const std::string& why);

}  // namespace sandgate::session
