// One client connection, from its first byte to its close: read the request head, then hand
// over to the CONNECT tunnel or to plain-HTTP forwarding.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "proxy/server/worker.hpp"

namespace sandgate::session {

// Serves one accepted client on `worker`'s thread. The caller has counted the connection in
// SharedState::open_connections; the session uncounts it when it ends. Never throws.
boost::asio::awaitable<void> serve_client(server::Worker& worker,
                                          boost::asio::ip::tcp::socket client);

// Answers a client beyond the connection limit with 503 and closes it.
boost::asio::awaitable<void> refuse_busy(boost::asio::ip::tcp::socket client);

}  // namespace sandgate::session
