// An inspected connection on which both the client and the origin chose HTTP/2 by ALPN
// (inspection.hpp): the client's streams are served by the HTTP/2 codecs
// (session/exchange/h2/), each stream through the same stages as an HTTP/1.1 request (the
// admission with its rules, questions and request budgets; masked secrets; byte budgets;
// redaction of what the origin sends; the decision and end lines), and relayed to a stream of
// its own on an HTTP/2 connection to the origin that the worker's inspected clients of the same
// host:port share (session/h2_origin_pool.hpp; the tunnel's connection joins them).
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

// Serves the connection until the client ends it, or it idles out. The streams' lines are
// written; the connection's end line is not. Its origin connections stay the pool's
// (InspectedRequestsEnd::origin_idle is false: nothing is left in context.upstream).
boost::asio::awaitable<InspectedRequestsEnd> serve_inspected_h2(SessionContext& context,
                                                                InspectedOrigin& origin);

}  // namespace sandgate::session
