// accept4() on an Asio acceptor (contract: accept.hpp).
#include "proxy/server/accept.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>

namespace sandgate::server {

namespace asio = boost::asio;
using asio::ip::tcp;

asio::awaitable<std::tuple<boost::system::error_code, tcp::socket>> accept_client(
    tcp::acceptor& acceptor) {
  tcp::socket socket(acceptor.get_executor());
  boost::system::error_code ec;
  // accept4() must never block the worker: make sure the listener is non-blocking (the handles
  // of all workers share one open file, so this costs one ioctl per process lifetime at most,
  // and nothing once Asio knows).
  if (acceptor.is_open() && !acceptor.native_non_blocking()) {
    acceptor.native_non_blocking(true, ec);
    if (ec) {
      co_return std::tuple{ec, std::move(socket)};
    }
  }
  for (;;) {
    if (!acceptor.is_open()) {
      co_return std::tuple{boost::system::error_code(asio::error::operation_aborted),
                           std::move(socket)};
    }
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    const int fd = ::accept4(acceptor.native_handle(), reinterpret_cast<sockaddr*>(&peer),
                             &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      // The peer's family labels the socket (no getsockname); a unix client is labelled v4, as
      // Asio's own accept labelled it (see server.cpp).
      socket.assign(peer.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
      if (ec) {
        ::close(fd);
      }
      co_return std::tuple{ec, std::move(socket)};
    }
    const int error = errno;
    if (error == EINTR || error == ECONNABORTED) {
      continue;  // a client that gave up in the backlog, or a signal: the next one
    }
    if (error != EAGAIN && error != EWOULDBLOCK) {
      co_return std::tuple{boost::system::error_code(error, boost::system::system_category()),
                           std::move(socket)};
    }
    // The backlog is empty: wait for the listener to become readable (no accept is retried on
    // a socket that is known to have nothing).
    std::tie(ec) = co_await acceptor.async_wait(tcp::acceptor::wait_read,
                                                asio::as_tuple(asio::use_awaitable));
    if (ec) {
      co_return std::tuple{ec, std::move(socket)};
    }
  }
}

}  // namespace sandgate::server
