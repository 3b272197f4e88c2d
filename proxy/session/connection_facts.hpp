// The facts of a tunnel, decided once while it is set up (open_tunnel.cpp) and carried from then
// on: how the client named the destination, the name its ClientHello gave, what was dialled,
// whether the gate inspects it. Every request of an inspected connection and every reload is
// judged from them. None is read back from the connection's registration for reloads
// (LiveConnection::destination), which each request of the connection replaces.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "proxy/session/worker_context.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::session {

struct ConnectionFacts {
  // How the client named the destination: the CONNECT or SOCKS5 target, or a captured
  // connection's original destination. A name or an address.
  rules::Host requested;
  std::uint16_t port = 0;
  // For a tunnel opened to an address: the name its TLS ClientHello asked for, which passed the
  // admission too (the policy, a person's answer) and counts against its budgets: the
  // connection is judged and counted as each of requested, tls_name and dialled. (A tunnel to
  // a name must name it there, so it adds nothing.)
  std::shared_ptr<const rules::Host> tls_name;
  // The address the tunnel's connection was made to (a name's checked answer), when known.
  std::optional<rules::IpAddress> dialled;
  bool ssh = false;                // the client spoke SSH: the SSH rules hold it too
  bool answered = false;           // a person's answer, not a rule, allowed `requested`
  bool tls_name_answered = false;  // and `tls_name`
  // The gate terminates its TLS and judges each request in it; otherwise the tunnel is spliced.
  bool inspected = false;
  // Inspected, and its ClientHello offered h2, which the gate passes on to the origin: the
  // origin connection must be one on which h2 was offered (origin_pool.hpp, serves()).
  bool offers_h2 = false;

  // The client chose the address: whatever name its ClientHello gives, the origin is whatever
  // answers there.
  bool by_address() const { return requested.is_ip(); }
  // The host its requests must name and are judged as: an address's ClientHello name, otherwise
  // the name the client asked for.
  const rules::Host& served_host() const { return tls_name ? *tls_name : requested; }
  // Masked secrets may be filled in on its requests (proxy/secrets/): only inside the gate's
  // own TLS, and never on a connection to an address the client chose, whatever name it gives.
  bool may_fill_secrets() const { return inspected && !by_address(); }
  // What the connection registers for reloads to judge again: where the client asked to go,
  // held to every rule kind. `now_dialled`: the address its origin connection leads to now (an
  // inspected connection's may have been dialled again).
  Destination destination(std::optional<rules::IpAddress> now_dialled) const {
    Destination registered;
    registered.host = requested;
    registered.port = port;
    registered.address = now_dialled;
    registered.ssh = ssh;
    registered.tls_name = tls_name;
    registered.answered = answered;
    registered.tls_name_answered = tls_name_answered;
    registered.spliced = !inspected;
    return registered;
  }
};

}  // namespace sandgate::session
