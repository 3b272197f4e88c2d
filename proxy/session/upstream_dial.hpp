// Reaching the destination once the policy allowed its name: resolve it (names only), hold every
// answer to the address rules, then connect to the checked addresses in order, never looking
// the name up a second time (no window for DNS rebinding between check and dial).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/session/decision_state.hpp"
#include "proxy/session/session_context.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/host.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

struct DialResult {
  bool connected = false;
  // When not connected: why, and the sentence. An address rule's denial (its row's verdict is
  // deny: loopback, blocklist, ...) is about a resolved address (DeniedAt::resolved_address);
  // otherwise the network failed (dns-error, connection-refused, ...).
  rules::Reason reason = rules::Reason::destination_unavailable;
  std::string sentence;
  // True when an address rule refused the dial rather than the network failing it.
  bool refused() const { return rules::reason_info(reason).verdict == rules::Verdict::deny; }
  DeniedAt denied_at() const { return refused() ? DeniedAt::resolved_address : DeniedAt::target; }
  boost::asio::ip::tcp::endpoint endpoint;  // the address connected to (or last tried)
};

// An Asio address as the rules see it.
rules::IpAddress to_rules_address(const boost::asio::ip::address& address);

// Whether the addresses a name resolves to are held to the policy's address rules before the
// dial: always for a destination; never for the parent proxy, which the operator named and
// which usually sits on a private network the rules would refuse.
enum class AddressChecks : std::uint8_t { policy, none };

// Holds the addresses `name` resolved to to the address rules of the request's policy: one bad
// answer condemns the name, since a client could otherwise be steered to it by the order of the
// answers. In report-only mode a reportable denial is kept in `decided` instead. The
// refusal (its endpoint the address refused), or nothing. dial_upstream() applies it to every
// lookup; a kept-alive upstream is judged again with it for each request it carries.
std::optional<DialResult> refuse_resolved(DecisionState& decided, const std::string& name,
                                          std::uint16_t port,
                                          const std::vector<rules::IpAddress>& addresses);

// Connects `context.upstream` to host:port, with the rules and the connect timeout the request
// is `decided` with. Completes on the session's worker.
boost::asio::awaitable<DialResult> dial_upstream(SessionContext& context, DecisionState& decided,
                                                 const rules::Host& host, std::uint16_t port,
                                                 AddressChecks checks = AddressChecks::policy);

}  // namespace sandgate::session
