// One HTTP/1.1 request and its whole response on an open connection, as the http, https and
// https-setups workloads (and https-hold's first request) exchange them: the response framed by
// its Content-Length, the only framing the load tool's origin uses.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <string>
#include <string_view>

#include "bench/load/client_slot.hpp"
#include "bench/load/tunnel.hpp"
#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

// What a workload needs to know from a response head (which ends with the blank line).
struct response_head {
  int status = 0;
  std::size_t content_length = 0;
  bool close = false;  // the server closes the connection after this response
};

// False for what the tool cannot frame: no status line, no Content-Length, or a chunked body (the
// origin always sends Content-Length, and no proxy here has a reason to re-frame it).
bool parse_response_head(std::string_view head, response_head& out);

// One request and its whole response on an open connection (`Stream`: the slot's socket, or a TLS
// stream over it). `stale` is set when a kept-alive connection turns out to have been closed by
// the server before it answered: the client then reconnects and asks again, which is what a real
// client does and not the proxy's failure.
template <typename Stream>
boost::asio::awaitable<error_kind> http_exchange(Stream& socket, client_slot& slot,
                                                 const std::string& request, std::string& buffer,
                                                 bool reused, int& status, bool& close_after,
                                                 bool& stale) {
  buffer.clear();
  auto [write_error, written] =
      co_await boost::asio::async_write(socket, boost::asio::buffer(request), use_tuple);
  if (write_error) {
    if (slot.take_timed_out()) {
      co_return error_kind::timeout;
    }
    stale = reused;
    co_return stale ? error_kind::none : error_kind::io;
  }
  auto [read_error, head_size] = co_await boost::asio::async_read_until(
      socket, boost::asio::dynamic_buffer(buffer, 64 * 1024), "\r\n\r\n", use_tuple);
  if (read_error) {
    if (slot.take_timed_out()) {
      co_return error_kind::timeout;
    }
    stale = reused && buffer.empty();
    co_return stale ? error_kind::none : error_kind::proxy_closed;
  }
  response_head head;
  if (!parse_response_head(std::string_view(buffer).substr(0, head_size), head)) {
    co_return error_kind::bad_response;
  }
  status = head.status;
  if (head.status != 200) {
    co_return error_kind::refused;
  }
  const std::size_t whole = head_size + head.content_length;
  if (buffer.size() < whole) {
    auto [body_error, n] = co_await boost::asio::async_read(
        socket, boost::asio::dynamic_buffer(buffer),
        boost::asio::transfer_exactly(whole - buffer.size()), use_tuple);
    if (body_error) {
      co_return slot.take_timed_out() ? error_kind::timeout : error_kind::io;
    }
  }
  // Only one request is ever outstanding: anything past the response is a framing error.
  if (buffer.size() != whole) {
    co_return error_kind::bad_response;
  }
  close_after = head.close;
  co_return error_kind::none;
}

}  // namespace sandgate::load
