// An inspected connection on which both the client and the origin chose HTTP/2 by ALPN
// (inspection.hpp): the client's streams are served by the HTTP/2 codecs
// (session/exchange/h2/), each stream through the same stages as an HTTP/1.1 request (the
// admission with its rules, questions and request budgets; masked secrets; byte budgets;
// redaction of what the origin sends; the decision and end lines), and relayed to a stream of
// its own on the origin connection, the tunnel's, which carries only this client's streams.
//
// A refused stream is answered on that stream alone (the gate's status with Proxy-Status and a
// body; for gRPC, a trailers-only response with the gRPC status and message), and the
// connection's other streams go on. Flow control is end to end: a stream's bytes are taken
// from the client only as the origin takes them, and back.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/session_context.hpp"

namespace sandgate::session {

// Serves the connection until the client or the origin ends it, or it idles out. The streams'
// lines are written; the connection's end line is not. The origin connection is never kept idle
// for another client (InspectedRequestsEnd::origin_idle is false).
boost::asio::awaitable<InspectedRequestsEnd> serve_inspected_h2(SessionContext& context,
                                                                InspectedOrigin& origin);

}  // namespace sandgate::session
