#include "proxy/launchdarkly/https_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <memory>
#include <optional>

#include "proxy/asio/close_on_exec.hpp"
#include "proxy/asio/use_tuple.hpp"
#include "proxy/launchdarkly/flag_payload.hpp"
#include "proxy/launchdarkly/retry_policy.hpp"
#include "rules/ascii.hpp"

#ifndef SANDGATE_VERSION_STRING
#define SANDGATE_VERSION_STRING "dev"
#endif

namespace sandgate::launchdarkly {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

std::string seconds_text(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) {
    return std::to_string(ms.count() / 1000) + " s";
  }
  return std::to_string(ms.count()) + " ms";
}

std::string media_type(std::string_view content_type) {
  auto end = content_type.find(';');
  std::string_view type = content_type.substr(0, end);
  while (!type.empty() && rules::is_ows(type.back())) {
    type.remove_suffix(1);
  }
  return rules::ascii_lower(type);
}

}  // namespace

// One connection: its socket, optional TLS layer, and the deadline that closes it.
struct HttpsClient::Connection : std::enable_shared_from_this<HttpsClient::Connection> {
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
  std::string service;  // the service it is connected to (ServiceUri::text()), for reuse
};

namespace {

using Connection = HttpsClient::Connection;

// How long an idle kept-alive connection is reused. Servers and load balancers close idle
// connections after a minute or so; a connection older than this is closed rather than risked.
constexpr std::chrono::seconds kIdleReuse{30};
// Idle connections kept at most (per client: one service in practice).
constexpr std::size_t kMaxIdle = 64;

// A failure that is not the budget's.
Unexpected<FetchFailure> failed(std::string why) {
  return Unexpected{FetchFailure{std::move(why)}};
}

// A reply the budget refused: how large it said it was (or how much had come), the budget and
// what the other replies held.
Unexpected<FetchFailure> over_budget_failure(const settings::ServiceUri& service,
                                             boost::optional<std::uint64_t> stated,
                                             std::size_t arrived, const ReplyBudget& budget,
                                             std::size_t others) {
  const std::string size = stated ? std::to_string(*stated) + " bytes"
                                  : std::to_string(arrived) + " bytes so far, chunked";
  return Unexpected{FetchFailure{
      "the reply of " + service.text() + " (" + size +
          ") does not fit in what LaunchDarkly replies may hold at once, gate-wide (" +
          std::to_string(budget.total() >> 20) + " MiB, twice SANDGATE_LD_MAX_PAYLOAD; " +
          std::to_string(others >> 10) + " KiB held by other replies)",
      true}};
}

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
  // (Asio opened it inheritable: marked now, before anything is sent on it.)
  descriptors::close_on_exec(connection.socket.native_handle());
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

std::string host_field(const settings::ServiceUri& service) {
  std::string host = service.host;
  if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  const std::uint16_t default_port = service.tls ? 443 : 80;
  if (service.port != default_port) {
    host += ":" + std::to_string(service.port);
  }
  return host;
}

asio::ssl::context make_client_tls() {
  asio::ssl::context tls(asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(tls.native_handle(), TLS1_2_VERSION);
  // The system's CAs; OpenSSL reads SSL_CERT_FILE / SSL_CERT_DIR here when they are set.
  tls.set_default_verify_paths();
  tls.set_verify_mode(asio::ssl::verify_peer);
  return tls;
}

struct HttpsClient::Idle {
  std::shared_ptr<Connection> connection;
  std::chrono::steady_clock::time_point since;
};

HttpsClient::HttpsClient(asio::io_context& io, asio::ssl::context& tls, std::size_t max_body,
                         ReplyBudget& budget)
    : io_(io),
      tls_(tls),
      max_body_(max_body),
      budget_(budget),
      user_agent_(std::string("sandgate/") + SANDGATE_VERSION_STRING) {}

HttpsClient::~HttpsClient() { close_idle(); }

void HttpsClient::close_idle() {
  for (auto& idle : idle_) {
    boost::system::error_code ignored;
    idle.connection->socket.close(ignored);
  }
  idle_.clear();
}

std::shared_ptr<Connection> HttpsClient::take_idle(const settings::ServiceUri& service) {
  const auto now = std::chrono::steady_clock::now();
  const std::string key = service.text();
  // Most recently used first: the warmest connection is the least likely to have been closed.
  for (auto it = idle_.rbegin(); it != idle_.rend();) {
    if (now - it->since >= kIdleReuse || !it->connection->socket.is_open()) {
      boost::system::error_code ignored;
      it->connection->socket.close(ignored);
      it = decltype(it)(idle_.erase(std::next(it).base()));
      continue;
    }
    if (it->connection->service == key) {
      auto connection = std::move(it->connection);
      idle_.erase(std::next(it).base());
      return connection;
    }
    ++it;
  }
  return nullptr;
}

asio::awaitable<Expected<HttpReply, FetchFailure>> HttpsClient::fetch(
    const settings::ServiceUri& service, HttpRequest request, std::chrono::milliseconds timeout) {
  const std::string within = "no reply from " + service.text() + " within " + seconds_text(timeout);
  http::request<http::string_body> head{request.method, service.prefix + request.target, 11};
  head.set(http::field::host, host_field(service));
  head.set(http::field::user_agent, user_agent_);
  head.set(http::field::accept, request.accept);
  head.keep_alive(true);
  if (!request.body.empty()) {
    head.set(http::field::content_type, "application/json");
    head.body() = std::move(request.body);
  }
  head.prepare_payload();

  // Two attempts at most: a reused connection that the server closed while it sat idle fails
  // before any reply byte arrives, and the request (a read: REPORT evaluates, changes nothing)
  // goes once more over a new connection. A new connection is never retried.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto connection = take_idle(service);
    const bool reused = connection != nullptr;
    if (!reused) {
      connection = std::make_shared<Connection>(io_, tls_, service.tls);
      connection->service = service.text();
    }
    connection->timed_out = false;
    connection->buffer.clear();
    connection->expire_after(timeout);
    if (!reused) {
      if (auto failure = co_await open(*connection, service)) {
        connection->deadline.cancel();
        co_return failed(choose(connection->timed_out, within, *failure));
      }
    }
    if (auto ec = co_await connection->write(head)) {
      connection->deadline.cancel();
      if (reused && !connection->timed_out) {
        continue;
      }
      co_return failed(choose(connection->timed_out, within,
                              "sending to " + service.text() + ": " + describe(ec)));
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_body_);
    auto ec = co_await connection->read_header(parser);
    if (ec && reused && !connection->timed_out && !parser.got_some()) {
      connection->deadline.cancel();
      continue;
    }
    // The body's bytes come out of the gate-wide budget: all of them before any is read when
    // the reply states its length, as they arrive otherwise (chunked, or up to the close).
    HttpReply reply;
    reply.charge = ReplyBudget::Charge(budget_);
    bool over_budget = false;
    if (!ec) {
      if (const auto length = parser.content_length(); length.has_value()) {
        over_budget = !reply.charge.grow_to(static_cast<std::size_t>(*length));
      }
    }
    while (!ec && !over_budget && !parser.is_done()) {
      ec = co_await connection->read_some(parser);
      // What the body holds, its spare capacity included (a growing string doubles).
      const std::string& body = parser.get().body();
      if (!parser.content_length().has_value() && !reply.charge.grow_to(body.capacity())) {
        over_budget = true;
      }
    }
    connection->deadline.cancel();
    if (over_budget) {
      // The rest of the body is never read: the connection cannot carry another request.
      boost::system::error_code ignored;
      connection->socket.close(ignored);
      co_return over_budget_failure(service, parser.content_length(), parser.get().body().size(),
                                    budget_, budget_.in_use() - reply.charge.bytes());
    }
    if (ec) {
      if (ec == http::error::body_limit) {
        co_return failed("the reply of " + service.text() + " is larger than " +
                         std::to_string(max_body_) +
                         " bytes (the size limit, SANDGATE_LD_MAX_PAYLOAD)");
      }
      co_return failed(choose(connection->timed_out, within,
                              "reading the reply of " + service.text() + ": " + describe(ec)));
    }
    auto& response = parser.get();
    reply.status = response.result_int();
    reply.content_type = media_type(response[http::field::content_type]);
    reply.retry_after = std::string(response[http::field::retry_after]);
    const bool keep = response.keep_alive() && !connection->timed_out;
    reply.body = std::move(response.body());
    if (keep) {
      if (idle_.size() >= kMaxIdle) {
        boost::system::error_code ignored;
        idle_.front().connection->socket.close(ignored);
        idle_.erase(idle_.begin());
      }
      idle_.push_back(Idle{std::move(connection), std::chrono::steady_clock::now()});
    } else {
      boost::system::error_code ignored;
      connection->socket.close(ignored);
    }
    co_return reply;
  }
  co_return failed("the connection to " + service.text() + " was closed before a reply");
}

asio::awaitable<StreamEnd> HttpsClient::stream(const settings::ServiceUri& service,
                                               HttpRequest request, std::string_view expected_type,
                                               std::chrono::milliseconds connect_timeout,
                                               std::chrono::milliseconds read_timeout,
                                               std::function<void()> on_open,
                                               std::function<bool(std::string_view)> on_bytes) {
  auto connection = std::make_shared<Connection>(io_, tls_, service.tls);
  connection->expire_after(connect_timeout);
  if (auto failure = co_await open(*connection, service)) {
    connection->deadline.cancel();
    co_return StreamEnd{
        choose(connection->timed_out,
               "no connection to " + service.text() + " within " + seconds_text(connect_timeout),
               *failure)};
  }
  http::request<http::string_body> head{request.method, service.prefix + request.target, 11};
  head.set(http::field::host, host_field(service));
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
    co_return StreamEnd{"sending to " + service.text() + ": " + describe(ec)};
  }

  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // a stream has no end; each event is bounded by its parser
  connection->expire_after(read_timeout);
  if (auto ec = co_await connection->read_header(parser)) {
    connection->deadline.cancel();
    co_return StreamEnd{
        choose(connection->timed_out,
               "no reply from " + service.text() + " within " + seconds_text(read_timeout),
               "reading the reply of " + service.text() + ": " + describe(ec))};
  }
  const auto& head_in = parser.get();
  if (head_in.result_int() != 200) {
    connection->deadline.cancel();
    StreamEnd end;
    end.status = head_in.result_int();
    end.why = "the stream " + service.text() + " answered " + describe_http_status(end.status);
    end.retry_after = std::string(head_in[http::field::retry_after]);
    co_return end;
  }
  if (auto type = media_type(head_in[http::field::content_type]); type != expected_type) {
    connection->deadline.cancel();
    co_return StreamEnd{"the stream " + service.text() + " sent '" + type + "', not " +
                        std::string(expected_type)};
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
      co_return StreamEnd{"the stream was closed by the client"};
    }
    if (ec) {
      connection->deadline.cancel();
      co_return StreamEnd{choose(connection->timed_out,
                                 "no data on the stream for " + seconds_text(read_timeout),
                                 "the stream ended: " + describe(ec))};
    }
  }
  connection->deadline.cancel();
  co_return StreamEnd{"the stream ended"};
}

}  // namespace sandgate::launchdarkly
