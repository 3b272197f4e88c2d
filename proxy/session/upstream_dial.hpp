// Reaching the destination once the policy allowed its name: resolve it (names only), hold every
// answer to the address rules, then connect to the checked addresses in order, never looking
// the name up a second time (no window for DNS rebinding between check and dial).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "proxy/session/replies.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/host.hpp"

namespace sandgate::session {

struct DialResult {
  bool connected = false;
  // When not connected: the reply to send, and its reason code and sentence.
  ReplyKind failure = ReplyKind::upstream_failure;
  bool denied = false;     // an address rule refused it (403), rather than the network (5xx)
  std::string code;        // "loopback", "dns-error", "connection-refused", ...
  std::string sentence;
  boost::asio::ip::tcp::endpoint endpoint;  // the address connected to (or last tried)
};

// An Asio address as the rules see it.
rules::IpAddress to_rules_address(const boost::asio::ip::address& address);

// Connects `context.upstream` to host:port. Completes on the session's worker.
boost::asio::awaitable<DialResult> dial_upstream(SessionContext& context, const rules::Host& host,
                                                 std::uint16_t port);

}  // namespace sandgate::session
