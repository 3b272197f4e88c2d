// The one way a connection gets its upstream: stage 4 of the admission pipeline (admission.hpp),
// for every front that needs one: a tunnel (open_tunnel.cpp), a plain or inspected HTTP/1.1
// request (fronts/http_forward.cpp), a stream of an inspected HTTP/2 connection
// (fronts/inspected_h2.cpp). In order:
//
//   1. keep the connection's own: its kept-alive upstream, still open to this host:port and idle;
//   2. take one the worker keeps, verified for this host:port under the rules and settings in
//      force (only for a request decided with those): a shared HTTP/2 connection with room
//      (h2_origin_pool.hpp), or an idle one (origin_pool.hpp) that serves the client's ALPN offer;
//   3. dial (connect_upstream: resolve, hold every address to the rules, connect to exactly what
//      was checked; or the parent).
//
// Whatever it is, the address it was dialled at is held to the rules the request is decided with
// (a reload since, or report-only mode's would-deny). A new one (2 or 3) is counted against the
// connection budgets when the caller counts connections: refused before the dial when the name's
// are spent, counted once the address is known.
//
// Everything here runs on the session's worker thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstdint>
#include <optional>
#include <string_view>

#include "proxy/session/admission.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/origin_pool.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::session {

// What a connection asks of its upstream.
struct UpstreamWish {
  std::string_view method;  // the log's
  // What is dialled (an inspected connection's origin as its tunnel named it), and the key
  // ("host:port") of the connections the worker keeps for it.
  rules::Host host;
  std::uint16_t port = 0;
  UpstreamUse use = UpstreamUse::tunnel;
  // 1. The connection's upstream is open to host:port and idle: kept. `own_dialled`: the
  // address it was dialled at.
  bool keep_own = false;
  std::optional<rules::IpAddress> own_dialled;
  // 2. Which of the worker's verified connections may serve it (none for a destination the gate
  // does not inspect by name): an idle one that serves `alpn`, a shared HTTP/2 one with room.
  bool may_take_idle = false;
  bool may_borrow_h2 = false;
  ClientAlpn alpn = ClientAlpn::unknown;
  // 3. May dial (an HTTP/2 client connection dials one origin connection at a time).
  bool may_dial = true;
  // The gate speaks TLS first on a new one (an inspected origin): bytes a parent passed behind
  // its reply head are refused (bad-response).
  bool tls_first = false;
  // A new one counts against the connection budgets (a tunnel; a plain request's new upstream).
  bool count_connection = false;
};

// Where the upstream came from.
enum class UpstreamFrom : std::uint8_t {
  none,       // nothing: `admission` is refused or over, or nothing might serve (no dial allowed)
  own,        // context.upstream, kept
  idle,       // context.upstream, with its TLS stream in context.secured_origin
  shared_h2,  // context.shared_h2_origin (context.upstream not connected)
  dialled,    // context.upstream, connected now
};

// Gets the upstream `wish` asks for, for an `admission` that stages 1-3 admitted; fills its
// dial fields (use, parent, endpoint, dialled). Makes it refused or over when it cannot. A
// connection other than the connection's own is put in context (see UpstreamFrom); what
// context.upstream held before is the caller's to have closed. `from_parent` receives what a
// parent sent behind its reply head (a tunnel through one).
boost::asio::awaitable<UpstreamFrom> get_upstream(SessionContext& context, DecisionState& decided,
                                                  Admission& admission, const UpstreamWish& wish,
                                                  boost::beast::flat_buffer& from_parent);

}  // namespace sandgate::session
