// The HTTP front end (a client that speaks HTTP to the gate): after client_session.cpp has read
// and authorised a request head, CONNECT opens a tunnel (http_connect.cpp) and an absolute-form
// request is forwarded (http_forward.cpp); the gate's own replies for refusals and for heads it
// could not read.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/session/admission.hpp"
#include "proxy/session/connection_facts.hpp"
#include "proxy/session/session_context.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

// CONNECT host:port: decide, dial, answer 200, relay. `buffer` holds bytes that arrived after
// the head; they belong to the tunnel.
boost::asio::awaitable<void> handle_connect(SessionContext& context, HeadParser& parser,
                                            boost::beast::flat_buffer& buffer);

// An absolute-form request (`GET http://host/path`): decide and forward, then go on with the
// next request on the same connection while both sides keep it alive.
boost::asio::awaitable<void> handle_http(SessionContext& context, HeadParser& parser,
                                         boost::beast::flat_buffer& buffer);

// The origin of an inspected connection, as its request loop sees it (inspected_connection.cpp
// makes it): the tunnel's facts, the one host and port every request must name, and how a
// freshly dialled connection to it is secured.
class InspectedOrigin {
 public:
  explicit InspectedOrigin(ConnectionFacts f);
  virtual ~InspectedOrigin() = default;

  // Decided when the tunnel was set up (connection_facts.hpp); every request is judged from
  // them, never from the connection's registration, which each request replaces.
  const ConnectionFacts facts;
  rules::Host host;  // facts.served_host()
  std::uint16_t port;
  std::string authority;  // as a Host field names it: `name`, or `name:port` off port 443

  // Set by secure_upstream() when the connection it secured was an idle one from the worker's
  // pool (origin_pool.hpp) rather than a fresh handshake: not known idle any more, so checked
  // before the first request it carries.
  bool taken_idle = false;

  // True when a request's Host field names this origin.
  bool named_by(std::string_view host_field) const;
  // Sets up and verifies TLS on context.upstream (just connected, for a request `decided` with
  // the rules and settings it carries) and makes it context.upstream_stream; the refusal when
  // the origin could not be verified or reached.
  virtual boost::asio::awaitable<std::optional<Refusal>> secure_upstream(
      const DecisionState& decided) = 0;
  // Whether the TLS layer holds bytes of the origin's that the socket no longer shows (decrypted
  // data, a record read ahead): a read now returns without waiting for the network.
  virtual bool origin_bytes_held() = 0;
  // The next call of secure_upstream(), when it makes a fresh handshake, offers the origin h2
  // besides HTTP/1.1 (asked for each call).
  virtual void offer_h2() = 0;
  // The origin connection secure_upstream() secured or took last chose h2 by ALPN (or is a
  // shared HTTP/2 one): its requests go as HTTP/2 streams.
  virtual bool origin_chose_h2() const = 0;
  // The origin connection secure_upstream() secured or took last, handed over with its socket
  // (moved out of context.upstream), what its handshake settled by ALPN and `dialled` (the
  // checked address of the name it was dialled at); null when there is none.
  virtual std::unique_ptr<SecuredOrigin> release_origin(
      const std::optional<rules::IpAddress>& dialled) = 0;
};

// How the requests of an inspected connection ended.
struct InspectedRequestsEnd {
  std::uint64_t bytes_up = 0;  // what every exchange carried, heads included
  std::uint64_t bytes_down = 0;
  // The client is done (it closed, or idled out between requests) and the origin connection
  // is left open, idle and reusable by another client: its last exchange was complete and kept
  // alive, nothing of the origin's is unread, and no request on it carried a connection-bound
  // authentication (NTLM, Negotiate). Otherwise context.upstream has been closed.
  bool origin_idle = false;
  std::optional<rules::IpAddress> origin_address;  // the checked address of the name it dialled
};

// The requests inside an inspected connection, in turn, each through the admission pipeline
// and the request rules, over context.client_stream and context.upstream_stream. Returns when
// the connection is over; the requests' lines are written, the connection's end line is not.
boost::asio::awaitable<InspectedRequestsEnd> serve_inspected_requests(SessionContext& context,
                                                                      InspectedOrigin& origin);

// Writes the proxy's own reply for `reason` (its row's status and Proxy-Status error, see
// replies.hpp) and logs the decision with the row's verdict; the caller then closes.
boost::asio::awaitable<void> reply_and_log(SessionContext& context, rules::Reason reason,
                                           std::string_view method, std::string_view host,
                                           std::uint16_t port, std::string_view sentence,
                                           std::string_view rule = {},
                                           DeniedAt at = DeniedAt::target);

// Answers a request head that could not be read (timeout, too large, malformed) with the
// matching reply and logs it; does nothing for `ok` and `closed`.
boost::asio::awaitable<void> reply_to_failed_head(SessionContext& context, const HeadRead& read);

}  // namespace sandgate::session
