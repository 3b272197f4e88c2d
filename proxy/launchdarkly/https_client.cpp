#include "proxy/launchdarkly/https_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <memory>
#include <optional>

#include "proxy/launchdarkly/flag_payload.hpp"

#ifndef SANDGATE_VERSION_STRING
#define SANDGATE_VERSION_STRING "dev"
#endif

namespace sandgate::launchdarkly {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string seconds_text(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) {
    return std::to_string(ms.count() / 1000) + " s";
  }
  return std::to_string(ms.count()) + " ms";
}

std::string media_type(std::string_view content_type) {
  auto end = content_type.find(';');
  std::string_view type = content_type.substr(0, end);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) {
    type.remove_suffix(1);
  }
  std::string out(type);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// One connection: its socket, optional TLS layer, and the deadline that closes it.
struct Connection : std::enable_shared_from_this<Connection> {
  explicit Connection(asio::io_context& io, asio::ssl::context& tls, bool use_tls)
      : resolver(io), socket(io), deadline(io) {
    if (use_tls) {
      secure.emplace(socket, tls);
    }
  }

  // Arms (or re-arms) the deadline. On expiry everything in flight fails with an error and
  // `timed_out` tells why.
  void expire_after(std::chrono::milliseconds timeout) {
    deadline.expires_after(timeout);
    // The handler holds the connection: an expiry already queued when the request finished
    // must still find it alive.
    deadline.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && self->deadline.expiry() <= asio::steady_timer::clock_type::now()) {
        self->timed_out = true;
        self->resolver.cancel();
        boost::system::error_code ignored;
        self->socket.close(ignored);
      }
    });
  }

  template <typename Body>
  asio::awaitable<boost::system::error_code> write(http::request<Body>& request) {
    // (if/else, not ?: — GCC 12 mishandles co_await inside a conditional expression.)
    if (secure) {
      auto [ec, n] = co_await http::async_write(*secure, request, use_tuple);
      co_return ec;
    }
    auto [ec, n] = co_await http::async_write(socket, request, use_tuple);
    co_return ec;
  }

  template <typename Parser>
  asio::awaitable<boost::system::error_code> read_header(Parser& parser) {
    // (if/else, not ?: — GCC 12 mishandles co_await inside a conditional expression.)
    if (secure) {
      auto [ec, n] = co_await http::async_read_header(*secure, buffer, parser, use_tuple);
      co_return ec;
    }
    auto [ec, n] = co_await http::async_read_header(socket, buffer, parser, use_tuple);
    co_return ec;
  }

  // Reads what has arrived (at least something) into the parser: for bodies that are streams.
  template <typename Parser>
  asio::awaitable<boost::system::error_code> read_some(Parser& parser) {
    // (if/else, not ?: — GCC 12 mishandles co_await inside a conditional expression.)
    if (secure) {
      auto [ec, n] = co_await http::async_read_some(*secure, buffer, parser, use_tuple);
      co_return ec;
    }
    auto [ec, n] = co_await http::async_read_some(socket, buffer, parser, use_tuple);
    co_return ec;
  }

  template <typename Parser>
  asio::awaitable<boost::system::error_code> read(Parser& parser) {
    // (if/else, not ?: — GCC 12 mishandles co_await inside a conditional expression.)
    if (secure) {
      auto [ec, n] = co_await http::async_read(*secure, buffer, parser, use_tuple);
      co_return ec;
    }
    auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_tuple);
    co_return ec;
  }

  tcp::resolver resolver;
  tcp::socket socket;
  std::optional<asio::ssl::stream<tcp::socket&>> secure;
  asio::steady_timer deadline;
  boost::beast::flat_buffer buffer;
  bool timed_out = false;
};

// One of two sentences. (A function, not ?:, in coroutine bodies: GCC 12 mishandles the
// temporaries of a conditional expression there.)
std::string choose(bool first, std::string a, std::string b) { return first ? a : b; }

std::string describe(const boost::system::error_code& ec) {
  if (ec == asio::error::connection_refused) {
    return "connection refused";
  }
  if (ec.category() == asio::error::get_ssl_category()) {
    return "TLS: " + ec.message();
  }
  return ec.message();
}

// Resolves, connects and (for https) handshakes, with the host name verified.
asio::awaitable<std::optional<std::string>> open(Connection& connection,
                                                 const settings::ServiceUri& service) {
  auto [resolve_error, endpoints] = co_await connection.resolver.async_resolve(
      service.host, std::to_string(service.port), use_tuple);
  if (resolve_error) {
    co_return "cannot resolve " + service.host + ": " + resolve_error.message();
  }
  auto [connect_error, endpoint] =
      co_await asio::async_connect(connection.socket, endpoints, use_tuple);
  if (connect_error) {
    co_return "cannot connect to " + service.text() + ": " + describe(connect_error);
  }
  boost::system::error_code ignored;
  connection.socket.set_option(tcp::no_delay(true), ignored);
  if (connection.secure) {
    SSL* ssl = connection.secure->native_handle();
    boost::system::error_code address_error;
    asio::ip::make_address(service.host, address_error);
    if (address_error) {
      // A name: sent as SNI and checked against the certificate's names.
      SSL_set_tlsext_host_name(ssl, service.host.c_str());
      SSL_set1_host(ssl, service.host.c_str());
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), service.host.c_str());
    }
    auto [handshake_error] =
        co_await connection.secure->async_handshake(asio::ssl::stream_base::client, use_tuple);
    if (handshake_error) {
      co_return "TLS with " + service.text() + " failed: " + describe(handshake_error);
    }
  }
  co_return std::nullopt;
}

}  // namespace

HttpsClient::HttpsClient(asio::io_context& io)
    : io_(io),
      tls_(asio::ssl::context::tls_client),
      user_agent_(std::string("sandgate/") + SANDGATE_VERSION_STRING) {
  SSL_CTX_set_min_proto_version(tls_.native_handle(), TLS1_2_VERSION);
  // The system's CAs; OpenSSL reads SSL_CERT_FILE / SSL_CERT_DIR here when they are set.
  tls_.set_default_verify_paths();
  tls_.set_verify_mode(asio::ssl::verify_peer);
}

asio::awaitable<Expected<HttpReply, std::string>> HttpsClient::fetch(
    const settings::ServiceUri& service, HttpRequest request, std::chrono::milliseconds timeout) {
  auto connection = std::make_shared<Connection>(io_, tls_, service.tls);
  connection->expire_after(timeout);
  const std::string within = "no reply from " + service.text() + " within " + seconds_text(timeout);

  if (auto failure = co_await open(*connection, service)) {
    connection->deadline.cancel();
    co_return Unexpected{choose(connection->timed_out, within, *failure)};
  }
  http::request<http::string_body> head{request.method, service.prefix + request.target, 11};
  head.set(http::field::host, service.host);
  head.set(http::field::user_agent, user_agent_);
  head.set(http::field::accept, request.accept);
  head.keep_alive(false);
  if (!request.body.empty()) {
    head.set(http::field::content_type, "application/json");
    head.body() = std::move(request.body);
  }
  head.prepare_payload();
  if (auto ec = co_await connection->write(head)) {
    connection->deadline.cancel();
    co_return Unexpected{
        choose(connection->timed_out, within, "sending to " + service.text() + ": " + describe(ec))};
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxPayloadBytes);
  if (auto ec = co_await connection->read(parser)) {
    connection->deadline.cancel();
    co_return Unexpected{choose(connection->timed_out, within,
                                "reading the reply of " + service.text() + ": " + describe(ec))};
  }
  connection->deadline.cancel();
  auto& response = parser.get();
  HttpReply reply;
  reply.status = response.result_int();
  reply.content_type = media_type(response[http::field::content_type]);
  reply.body = std::move(response.body());
  co_return reply;
}

asio::awaitable<std::string> HttpsClient::stream(const settings::ServiceUri& service,
                                                 HttpRequest request,
                                                 std::string_view expected_type,
                                                 std::chrono::milliseconds connect_timeout,
                                                 std::chrono::milliseconds read_timeout,
                                                 std::function<void()> on_open,
                                                 std::function<bool(std::string_view)> on_bytes) {
  auto connection = std::make_shared<Connection>(io_, tls_, service.tls);
  connection->expire_after(connect_timeout);
  if (auto failure = co_await open(*connection, service)) {
    connection->deadline.cancel();
    co_return choose(connection->timed_out,
                     "no connection to " + service.text() + " within " + seconds_text(connect_timeout),
                     *failure);
  }
  http::request<http::string_body> head{request.method, service.prefix + request.target, 11};
  head.set(http::field::host, service.host);
  head.set(http::field::user_agent, user_agent_);
  head.set(http::field::accept, request.accept);
  head.set(http::field::cache_control, "no-cache");
  if (!request.body.empty()) {
    head.set(http::field::content_type, "application/json");
    head.body() = std::move(request.body);
  }
  head.prepare_payload();
  if (auto ec = co_await connection->write(head)) {
    connection->deadline.cancel();
    co_return "sending to " + service.text() + ": " + describe(ec);
  }

  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // a stream has no end; each event is bounded by its parser
  connection->expire_after(read_timeout);
  if (auto ec = co_await connection->read_header(parser)) {
    connection->deadline.cancel();
    co_return choose(connection->timed_out,
                     "no reply from " + service.text() + " within " + seconds_text(read_timeout),
                     "reading the reply of " + service.text() + ": " + describe(ec));
  }
  const auto& head_in = parser.get();
  if (head_in.result_int() != 200) {
    connection->deadline.cancel();
    co_return "the stream " + service.text() + " answered HTTP " +
        std::to_string(head_in.result_int());
  }
  if (auto type = media_type(head_in[http::field::content_type]); type != expected_type) {
    connection->deadline.cancel();
    co_return "the stream " + service.text() + " sent '" + type + "', not " +
        std::string(expected_type);
  }
  on_open();

  std::vector<char> chunk(16 * 1024);
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    connection->expire_after(read_timeout);
    // read_some: an event must be handled when it arrives, not when 16 KiB have gathered.
    auto ec = co_await connection->read_some(parser);
    if (ec == http::error::need_buffer) {
      ec = {};
    }
    const std::size_t got = chunk.size() - parser.get().body().size;
    if (got > 0 && !on_bytes(std::string_view(chunk.data(), got))) {
      connection->deadline.cancel();
      co_return "the stream was closed by the client";
    }
    if (ec) {
      connection->deadline.cancel();
      co_return choose(connection->timed_out, "no data on the stream for " + seconds_text(read_timeout),
                       "the stream ended: " + describe(ec));
    }
  }
  connection->deadline.cancel();
  co_return "the stream ended";
}

}  // namespace sandgate::launchdarkly
