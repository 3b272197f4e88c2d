// Capture (`sandgate run` on Linux): connections and DNS queries of the confined command that
// the namespace's nftables rules redirected to the gate
// (sandbox-profile/linux/capture_network.hpp).
//
// A captured connection takes the same path as a CONNECT (open_tunnel, connect_tunnel.hpp) with
// a front end that has nothing to send: the destination is the address the command dialled
// (SO_ORIGINAL_DST); a synthetic address of the run's book stands for the name it was given for,
// any other address is an IP literal to the policy (ip-address unless allowed). A refusal closes
// the connection, with its decision logged under the method "CAPTURE"; a plain-HTTP head that
// http_head.hpp's strict reader refuses (port 80: malformed, too large, too slow) is answered
// with the HTTP reply of its reason first. TLS ports hold the SNI to
// the name; port 80 holds a plain-HTTP request's Host to it (host-mismatch); an SSH client
// meets the SSH rules. The address dialled upstream is the one the gate's resolver found and
// checked, never the synthetic one.
//
// DNS: each UDP datagram or TCP message (length-prefixed, at most kMaxDnsMessage bytes) is
// answered by capture::answer_query with the worker's policy current at the query; each
// decision is logged under the method "DNS" and counted.
//
// Everything runs on the worker that accepted or received; never throws on a peer's account.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include "proxy/capture/dns_server.hpp"
#include "proxy/session/worker_context.hpp"

namespace sandgate::session {

// The largest DNS message over TCP the gate reads (a query is a few hundred bytes at most): a
// longer one closes the connection.
inline constexpr std::size_t kMaxDnsMessage = 4096;

// Serves one captured connection on `worker`'s thread. The caller counted it in
// SharedState::open_connections; the session uncounts it. `book` outlives the worker's loop.
boost::asio::awaitable<void> serve_captured(WorkerContext& worker,
                                            boost::asio::ip::tcp::socket client,
                                            capture::AddressBook* book);

// Answers DNS queries on `socket` (UDP) until it is closed (the drain).
boost::asio::awaitable<void> serve_dns_udp(WorkerContext& worker,
                                           boost::asio::ip::udp::socket* socket,
                                           capture::AddressBook* book);

// Accepts DNS clients on `acceptor` (TCP) until it is closed, each served on this worker until
// it closes, stays idle for the head timeout, or the drain closes it.
boost::asio::awaitable<void> serve_dns_tcp(WorkerContext& worker,
                                           boost::asio::ip::tcp::acceptor* acceptor,
                                           capture::AddressBook* book);

}  // namespace sandgate::session
