// How every front end closes a client after the gate's own reply: our side ended first, what the
// client still sends drained (bounded), then the close, so that the reply is not lost to a reset.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace sandgate::session {

// Ends our side, drains what the client still sends (at most 64 KiB, at most 2 s), then closes.
boost::asio::awaitable<void> close_gracefully(boost::asio::ip::tcp::socket& socket);

}  // namespace sandgate::session
