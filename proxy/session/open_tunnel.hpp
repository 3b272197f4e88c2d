// The tunnel's path shared by every front end a client can ask for one through (HTTP CONNECT,
// SOCKS5, capture): the admission pipeline (admission.hpp: the decision, a question,
// LaunchDarkly, the dial of exactly what was checked), the look at the client's first bytes (TLS
// server name, SSH), registration for reloads, the log line and the hand-off to a TunnelSession.
// Only the front end differs: the method the log names, how a refusal is sent and how success
// is sent.
//
// Everything here runs on the session's worker thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <optional>
#include <string_view>

#include "proxy/session/admission.hpp"
#include "proxy/session/connection_facts.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/session_context.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/host.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

// How one protocol asks for a tunnel and is answered. Plain function pointers: the front ends
// are constants (in fronts/http_connect.cpp, fronts/socks_session.cpp and
// fronts/capture_session.cpp), and a coroutine must not capture.
struct TunnelFrontEnd {
  std::string_view method;  // the log's `method`: "CONNECT", "SOCKS5"
  // Writes the refusal for `reason` (nothing else: the caller has logged it, and closes the
  // connection after).
  boost::asio::awaitable<void> (*send_refusal)(SessionContext& context, rules::Reason reason,
                                               std::string_view sentence, DeniedAt at);
  // Tells the client that its tunnel is up (context.upstream is connected); the write's error.
  boost::asio::awaitable<boost::system::error_code> (*send_established)(SessionContext& context);
};

// Logs the refusal of a tunnel request (with the front end's method), sends the front end's
// refusal and closes the client gracefully. `host` is "-" when none is known yet.
boost::asio::awaitable<void> refuse_tunnel(SessionContext& context, const TunnelFrontEnd& front,
                                           std::string_view host, std::uint16_t port,
                                           const Refusal& refusal);

// Opens a tunnel to host:port, already parsed strictly, for a client that asked through
// `front`: admit (admission.hpp: decide, ask, LaunchDarkly, dial), send success, inspect the first
// bytes, register, log, and hand the sockets to a TunnelSession. `buffer` holds the client's bytes
// that came after its request; they are the start of the tunnelled stream. The caller made the
// request's DecisionState (`decided`, which a reload during a wait renews) and forgot any earlier
// destination (see handle_connect); the inspected connection's front reads it too. Every
// refusal before success goes through `front`; one after it (SNI mismatch, SSH to a non-git
// host, a reload) closes the connection, since the client already speaks its own protocol.
// Returns nothing when the tunnel is done with (handed to the relay, or refused, or over; logged
// either way), or the facts of a tunnel to inspect (connection_facts.hpp): it was admitted with a
// TLS ClientHello to a host that is inspected (the CONNECT's host, or for an IP destination the
// name its ClientHello asked for), which the front end then serves with serve_inspected()
// (fronts/inspected_connection.hpp), `buffer` holding the hello. A tunnel that must not be
// spliced (splice_bar: a host with request rules, an address that names no host while they are
// in force) and cannot be inspected (not a TLS port, not TLS, no inspection) is refused as
// not-inspectable: its requests could not be judged.
boost::asio::awaitable<std::optional<ConnectionFacts>> open_tunnel(
    SessionContext& context, DecisionState& decided, const TunnelFrontEnd& front,
    const rules::Host& host, std::uint16_t port, boost::beast::flat_buffer& buffer);

}  // namespace sandgate::session
