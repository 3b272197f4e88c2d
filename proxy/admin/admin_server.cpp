// The admin endpoint. See admin_server.hpp.
#include "proxy/admin/admin_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <thread>

namespace sandgate::admin {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

http::response<http::string_body> respond(const AdminHandlers& handlers,
                                          const http::request<http::string_body>& request) {
  http::response<http::string_body> response;
  response.version(11);
  response.set(http::field::server, "sandgate");
  response.keep_alive(false);
  const std::string_view path = request.target();
  std::string_view route = path.substr(0, path.find('?'));
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    response.result(http::status::method_not_allowed);
    response.set(http::field::allow, "GET, HEAD");
    response.body() = "only GET\n";
  } else if (route == "/metrics") {
    response.result(http::status::ok);
    response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response.body() = handlers.metrics();
  } else if (route == "/healthz") {
    response.result(http::status::ok);
    response.body() = "ok\n";
  } else if (route == "/readyz") {
    const bool ready = handlers.ready();
    response.result(ready ? http::status::ok : http::status::service_unavailable);
    response.body() = ready ? "ready\n" : "not ready\n";
  } else if (route == "/denials") {
    response.result(http::status::ok);
    response.set(http::field::content_type, "application/json");
    response.body() = handlers.denials();
  } else {
    response.result(http::status::not_found);
    response.body() = "not found: try /metrics, /healthz, /readyz, /denials\n";
  }
  if (!response.has_content_length()) {
    response.prepare_payload();
  }
  return response;
}

asio::awaitable<void> serve_request(const AdminHandlers& handlers, tcp::socket socket) {
  beast::flat_buffer buffer(8192);
  http::request_parser<http::string_body> parser;
  parser.header_limit(8192);
  parser.body_limit(8192);
  asio::steady_timer timeout(socket.get_executor());
  timeout.expires_after(std::chrono::seconds(10));
  auto outcome =
      co_await (http::async_read(socket, buffer, parser, use_tuple) || timeout.async_wait(use_tuple));
  // A timed-out or broken request is dropped without an answer.
  if (outcome.index() == 0) {
    auto [error, bytes] = std::get<0>(outcome);
    if (!error) {
      auto response = respond(handlers, parser.get());
      co_await http::async_write(socket, response, use_tuple);
    }
  }
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

asio::awaitable<void> accept_loop(const AdminHandlers& handlers, tcp::acceptor& acceptor) {
  for (;;) {
    auto [error, socket] = co_await acceptor.async_accept(use_tuple);
    if (error == asio::error::operation_aborted || !acceptor.is_open()) {
      co_return;
    }
    if (error) {
      continue;
    }
    asio::co_spawn(acceptor.get_executor(), serve_request(handlers, std::move(socket)),
                   asio::detached);
  }
}

}  // namespace

struct AdminServer::Impl {
  AdminHandlers handlers;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
};

AdminServer::AdminServer(AdminHandlers handlers) : impl_(std::make_unique<Impl>()) {
  impl_->handlers = std::move(handlers);
}

AdminServer::~AdminServer() {
  if (impl_->thread.joinable()) {
    asio::post(impl_->io, [impl = impl_.get()] {
      boost::system::error_code ignored;
      impl->acceptor.close(ignored);
    });
    impl_->io.stop();
    impl_->thread.join();
  }
}

Expected<std::string, std::string> AdminServer::start(const std::string& listen) {
  std::string address;
  std::string port;
  if (listen.starts_with('[')) {
    const auto close = listen.find(']');
    address = listen.substr(1, close - 1);
    port = close + 2 <= listen.size() ? listen.substr(close + 2) : "";
  } else {
    const auto colon = listen.rfind(':');
    address = listen.substr(0, colon);
    port = colon == std::string::npos ? "" : listen.substr(colon + 1);
  }
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (ec || port.empty()) {
    return Unexpected{"admin address '" + listen + "' is not ADDR:PORT"};
  }
  if (!ip.is_loopback()) {
    return Unexpected{"admin address " + listen +
                      " is not loopback: the admin endpoint is for this machine only"};
  }
  const tcp::endpoint endpoint(ip, static_cast<std::uint16_t>(std::stoul(port)));
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) {
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(64, ec);
  }
  if (ec) {
    return Unexpected{"cannot listen on admin address " + listen + ": " + ec.message()};
  }
  const auto bound = acceptor.local_endpoint(ec);
  asio::co_spawn(impl_->io, accept_loop(impl_->handlers, acceptor), asio::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
  const std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                   : bound.address().to_string();
  return host + ":" + std::to_string(bound.port());
}

}  // namespace sandgate::admin
