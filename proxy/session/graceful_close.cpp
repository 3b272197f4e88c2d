// Closing a client after the gate's reply. See graceful_close.hpp.
#include "proxy/session/graceful_close.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <variant>

#include "proxy/asio/use_tuple.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

}  // namespace

asio::awaitable<void> close_gracefully(tcp::socket& socket) {
  // Closing a socket with unread input makes the kernel send a reset, which can destroy the
  // reply before the client reads it. So: end our side, then read and discard what the client
  // still sends, for a bounded time and amount, until it closes too.
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  asio::steady_timer timeout(socket.get_executor());
  timeout.expires_after(std::chrono::seconds(2));
  std::array<char, 1024> sink;
  for (std::size_t total = 0; total < 64 * 1024;) {
    auto outcome = co_await (socket.async_read_some(asio::buffer(sink), use_tuple) ||
                             timeout.async_wait(use_tuple));
    if (outcome.index() == 1) {
      break;
    }
    auto [error, n] = std::get<0>(outcome);
    if (error) {
      break;
    }
    total += n;
  }
  socket.close(ignored);
}

}  // namespace sandgate::session
