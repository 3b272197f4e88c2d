// The h2 workload: --concurrency HTTP/2 connections (one CONNECT and one TLS handshake offering
// h2 by ALPN each, or straight to the origin), each keeping --streams GETs in flight at once,
// every stream that completes replaced by a new one: requests/s and latency of HTTP/2 through an
// inspecting proxy, against the https workload (HTTP/1.1, one request in flight per connection)
// at the same total concurrency.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "bench/load/client_slot.hpp"
#include "bench/load/run_state.hpp"
#include "bench/load/tls.hpp"
#include "bench/load/tunnel.hpp"

namespace sandgate::load {

// Opens an HTTP/2 connection on the slot: the tunnel through `via` (or a direct connection), then
// TLS to `host` offering h2 and http/1.1 (as curl does), and requires the server to choose h2
// (else error_kind::alpn). `stream` is made anew over the slot's socket. `head` is scratch space;
// `status` receives the proxy's CONNECT status. Bounded by the slot's deadline, which the caller
// arms; completes on the slot's executor.
boost::asio::awaitable<error_kind> open_h2_connection(client_slot& slot, const route& via,
                                                      boost::asio::ssl::context& tls,
                                                      const std::string& host,
                                                      std::unique_ptr<tls_stream>& stream,
                                                      std::string& head, int& status);

// One h2 connection's client until the end of the run: opened, its streams kept busy, reopened
// (after a 10 ms back-off when it failed) if it ends before the run does. A stream's latency runs
// from its submission to the read that completed it; a stream completes when it closed cleanly
// with a 200 and the whole body.
boost::asio::awaitable<void> h2_client(std::shared_ptr<client_slot> slot,
                                       std::shared_ptr<run_state> state);

// The h2-setups workload's client until the end of the run: an h2 connection opened as above,
// one GET stream and its whole response, the connection closed (no GOAWAY, no close_notify, as
// many clients end), again. A setup's latency runs from before the connect to the response's
// end; it completes when its stream closed cleanly with a 200 and the whole body.
boost::asio::awaitable<void> h2_setups_client(std::shared_ptr<client_slot> slot,
                                              std::shared_ptr<run_state> state);

}  // namespace sandgate::load
