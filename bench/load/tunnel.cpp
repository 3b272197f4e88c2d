// CONNECT handshake and direct dialling (see tunnel.hpp).
#include "bench/load/tunnel.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>

#include "bench/load/loopback_endpoint.hpp"
#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

namespace asio = boost::asio;

std::string_view error_kind_name(error_kind kind) {
  switch (kind) {
    case error_kind::none:
      return "none";
    case error_kind::connect:
      return "connect";
    case error_kind::refused:
      return "refused";
    case error_kind::proxy_closed:
      return "proxy_closed";
    case error_kind::bad_response:
      return "bad_response";
    case error_kind::timeout:
      return "timeout";
    case error_kind::io:
      return "io";
    case error_kind::mismatch:
      return "mismatch";
    case error_kind::tls:
      return "tls";
    case error_kind::alpn:
      return "alpn";
  }
  return "unknown";
}

std::string origin_authority(const asio::ip::tcp::endpoint& origin,
                             const std::string& connect_host) {
  return connect_host.empty() ? endpoint_text(origin)
                              : connect_host + ":" + std::to_string(origin.port());
}

route make_route(const std::optional<asio::ip::tcp::endpoint>& proxy,
                 const asio::ip::tcp::endpoint& origin, const std::string& connect_host,
                 bool socks5) {
  if (!proxy) {
    return route{origin, {}};
  }
  if (socks5) {
    std::string request = {0x05, 0x01, 0x00, 0x05, 0x01, 0x00};
    if (connect_host.empty() && origin.address().is_v4()) {
      request += '\x01';
      const auto bytes = origin.address().to_v4().to_bytes();
      request.append(bytes.begin(), bytes.end());
    } else {
      const std::string name = connect_host.empty() ? origin.address().to_string() : connect_host;
      request += '\x03';
      request += static_cast<char>(name.size());
      request += name;
    }
    request += static_cast<char>(origin.port() >> 8);
    request += static_cast<char>(origin.port() & 0xff);
    return route{*proxy, request, true};
  }
  const std::string authority = origin_authority(origin, connect_host);
  return route{*proxy, "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"};
}

std::string make_http_request(bool through_proxy, const asio::ip::tcp::endpoint& origin,
                              const std::string& connect_host, std::size_t body_bytes) {
  const std::string authority = origin_authority(origin, connect_host);
  const std::string path = "/" + std::to_string(body_bytes);
  const std::string target = through_proxy ? "http://" + authority + path : path;
  // Nothing but what a minimal client (curl) sends: keep-alive is HTTP/1.1's default.
  return "GET " + target + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
}

int parse_http_status(std::string_view head) {
  if (!head.starts_with("HTTP/1.") || head.size() < 12 || head[8] != ' ') {
    return 0;
  }
  int status = 0;
  const auto [end, ec] = std::from_chars(head.data() + 9, head.data() + 12, status);
  return ec == std::errc{} && end == head.data() + 12 ? status : 0;
}

asio::awaitable<error_kind> open_tunnel(client_slot& slot, const route& via, std::string& head,
                                        int& status) {
  status = 0;
  auto& socket = slot.socket();
  slot.close();

  // Dial the first hop; async_connect opens a fresh socket.
  auto [connect_error] = co_await socket.async_connect(via.first_hop, use_tuple);
  if (connect_error) {
    co_return slot.take_timed_out() ? error_kind::timeout : error_kind::connect;
  }
  // Small request/response exchanges: do not let Nagle hold the payload back (curl does the same).
  boost::system::error_code ignored;
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  if (via.connect_request.empty()) {
    co_return error_kind::none;
  }

  // Ask the proxy for the tunnel.
  auto [write_error, written] =
      co_await asio::async_write(socket, asio::buffer(via.connect_request), use_tuple);
  if (write_error) {
    co_return slot.take_timed_out() ? error_kind::timeout : error_kind::proxy_closed;
  }

  if (via.socks5) {
    // The method reply, then the request reply with an IPv4 BND.ADDR (what sandgate sends).
    head.assign(12, '\0');
    auto [socks_error, got] = co_await asio::async_read(socket, asio::buffer(head), use_tuple);
    if (socks_error) {
      co_return slot.take_timed_out() ? error_kind::timeout : error_kind::proxy_closed;
    }
    if (head[0] != 0x05 || head[1] != 0x00 || head[2] != 0x05 || head[5] != 0x01) {
      co_return error_kind::bad_response;
    }
    status = head[3] == 0x00 ? 200 : 500 + static_cast<unsigned char>(head[3]);
    co_return head[3] == 0x00 ? error_kind::none : error_kind::refused;
  }

  // Read the whole response head. Nothing may follow it: the origin speaks only after the
  // client's first byte, so extra bytes would be the proxy writing into the tunnel.
  head.clear();
  auto [read_error, head_size] = co_await asio::async_read_until(
      socket, asio::dynamic_buffer(head, 16 * 1024), "\r\n\r\n", use_tuple);
  if (read_error) {
    if (slot.take_timed_out()) {
      co_return error_kind::timeout;
    }
    // An error page without a blank line yet still has a status: call it a refusal.
    status = parse_http_status(head);
    if (status != 0 && status != 200) {
      co_return error_kind::refused;
    }
    co_return read_error == asio::error::not_found ? error_kind::bad_response
                                                   : error_kind::proxy_closed;
  }
  status = parse_http_status(head);
  if (status == 0) {
    co_return error_kind::bad_response;
  }
  if (status != 200) {
    co_return error_kind::refused;
  }
  if (head.size() != head_size) {
    co_return error_kind::bad_response;
  }
  co_return error_kind::none;
}

}  // namespace sandgate::load
