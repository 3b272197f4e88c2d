// Accepting a client the lean way: accept4() with SOCK_NONBLOCK | SOCK_CLOEXEC, so the socket is
// born non-blocking and is never inherited by a process the gate starts (Asio's accept() gives
// neither), waiting for the listener's readiness only when the backlog is empty.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <tuple>

namespace sandgate::server {

// The next connection on `acceptor` as a socket on the acceptor's executor, or the error
// (operation_aborted once the acceptor is closed; EMFILE, ENFILE, ENOBUFS, ENOMEM as they come,
// for the caller to pause on). Aborted handshakes (ECONNABORTED) and signals are retried here.
// Completes on the acceptor's executor; closing the acceptor cancels the wait.
boost::asio::awaitable<std::tuple<boost::system::error_code, boost::asio::ip::tcp::socket>>
accept_client(boost::asio::ip::tcp::acceptor& acceptor);

}  // namespace sandgate::server
