// A WebSocket side on a connection of its own. See websocket_peer.hpp.
#include "proxy/session/exchange/websocket_peer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "proxy/asio/use_tuple.hpp"

namespace sandgate::session::exchange {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

}  // namespace

asio::awaitable<WebSocketPeer::Io> StreamPeer::read_some(asio::mutable_buffer buffer) {
  if (early_.size() > 0) {
    // What came behind the head is the WebSocket's first bytes.
    const std::size_t n = asio::buffer_copy(buffer, early_.data());
    early_.consume(n);
    co_return Io{boost::system::error_code{}, n};
  }
  auto [error, n] = co_await stream_.async_read_some(buffer, use_tuple);
  co_return Io{error, n};
}

asio::awaitable<WebSocketPeer::Io> StreamPeer::write(asio::const_buffer bytes) {
  auto [error, n] = co_await asio::async_write(stream_, bytes, use_tuple);
  co_return Io{error, n};
}

asio::awaitable<bool> StreamPeer::quiet_for(std::chrono::milliseconds pause) {
  if (early_.size() > 0) {
    co_return false;
  }
  // The socket, not the TLS stream: bytes on the wire are what ends the pause (a TLS record
  // without application data only delays it by one read).
  asio::steady_timer timer(socket_.get_executor(), pause);
  const auto first = co_await (socket_.async_wait(asio::ip::tcp::socket::wait_read, use_tuple) ||
                               timer.async_wait(use_tuple));
  co_return first.index() == 1 && !std::get<0>(std::get<1>(first));
}

void StreamPeer::cancel() {
  boost::system::error_code ignored;
  socket_.cancel(ignored);
}

void StreamPeer::close() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

}  // namespace sandgate::session::exchange
