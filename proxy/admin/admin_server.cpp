// The admin endpoint. See admin_server.hpp.
#include "proxy/admin/admin_server.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <optional>
#include <thread>

namespace sandgate::admin {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// The endpoint answers GET and HEAD, and POST /decide, whose form body is small; any other body
// is read (so that its bytes are not mistaken for a next request) but never used.
constexpr std::size_t kMaxRequestBody = 8192;

// What the accept loop and every connection share. Lives in AdminServer::Impl, before the
// io_context, so it outlives every coroutine the io_context destroys.
struct Endpoint {
  AdminHandlers handlers;
  AdminLimits limits;
  std::atomic<std::size_t> open{0};  // written on the admin thread only; read by any thread
};

// Gives back a connection slot when a connection's coroutine ends. The accept loop takes the
// slot (counts the connection) before it spawns the coroutine, so that connections accepted
// before the first of them starts still count against the cap.
class Slot {
 public:
  explicit Slot(std::atomic<std::size_t>& open) : open_(open) {}
  ~Slot() { open_.fetch_sub(1, std::memory_order_relaxed); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

 private:
  std::atomic<std::size_t>& open_;
};

// Says something at most once a second: a condition that lasts (no descriptors, too many
// scrapers) must not flood the log.
class RateLimitedNote {
 public:
  void operator()(const AdminHandlers& handlers, const std::string& text) {
    const auto now = std::chrono::steady_clock::now();
    if (handlers.note && now - last_ >= std::chrono::seconds(1)) {
      last_ = now;
      handlers.note("warning", text);
    }
  }

 private:
  std::chrono::steady_clock::time_point last_{};
};

using Response = http::response<http::string_body>;

Response plain_response(http::status status, std::string body) {
  Response response;
  response.version(11);
  response.result(status);
  response.set(http::field::server, "sandgate");
  response.keep_alive(false);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

// Compares without stopping at the first difference, so the time taken says nothing of where a
// guess went wrong.
bool same_secret(std::string_view a, std::string_view b) {
  if (b.empty()) {
    return false;
  }
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i % b.size()]);
  }
  return diff == 0;
}

// /pending and /decide: the secret they require now, as a bearer token, and the sentence that
// refuses a request without it. The admin token when one is set: the proxy token then does not
// do, since the agent being asked holds it (its proxy variables carry it). Otherwise the proxy
// token when one is set; with neither, nothing is required (an empty secret).
struct RequiredToken {
  std::string secret;
  std::string_view refusal;
};

RequiredToken required_token(const AdminHandlers& handlers) {
  if (std::string admin = handlers.admin_token ? handlers.admin_token() : std::string();
      !admin.empty()) {
    return {std::move(admin),
            "this route needs the admin token (the admin_token setting: --admin-token, "
            "--admin-token-file or SANDGATE_ADMIN_TOKEN(_FILE)), not the proxy token: "
            "Authorization: Bearer ADMIN_TOKEN\n"};
  }
  return {handlers.token ? handlers.token() : std::string(),
          "this route needs the gate's token: Authorization: Bearer TOKEN\n"};
}

bool token_accepted(const RequiredToken& required,
                    const http::request<http::string_body>& request) {
  if (required.secret.empty()) {
    return true;
  }
  constexpr std::string_view kBearer = "Bearer ";
  const std::string_view given = request[http::field::authorization];
  return given.starts_with(kBearer) && same_secret(given.substr(kBearer.size()), required.secret);
}

// /pending and /decide: a request a web browser made on a page's behalf, refused whatever the
// token. Without a token, a page on any site could otherwise answer `always` for a host of its
// choosing with a plain form POST to 127.0.0.1 (a "simple" request, sent without a CORS
// preflight), and a page on a name rebound to 127.0.0.1 could read /pending. Browsers send
// Origin with every POST (cross-site or same-origin) and Sec-Fetch-Site with every request on a
// secure context; a rebound page names its own domain in Host. The gate's own CLI sends none of
// these and names the endpoint by address or by a dotless name such as localhost.
bool from_a_browser(const http::request<http::string_body>& request) {
  if (request.count(http::field::origin) != 0) {
    return true;
  }
  if (auto site = request.find("Sec-Fetch-Site");
      site != request.end() && site->value() != "none") {
    return true;
  }
  std::string_view host = request[http::field::host];
  if (host.starts_with('[')) {
    return false;  // an IPv6 literal, which no rebinding attack can choose
  }
  host = host.substr(0, host.rfind(':'));
  if (host.empty() || host == "localhost" || host.ends_with(".localhost")) {
    return false;
  }
  const bool numeric = host.find_first_not_of("0123456789.") == std::string_view::npos;
  // A name with a dot is a domain someone may own, whose DNS may point at 127.0.0.1.
  return !numeric && host.find('.') != std::string_view::npos;
}

Response respond(const AdminHandlers& handlers, const http::request<http::string_body>& request,
                 std::string_view peer) {
  Response response = plain_response(http::status::ok, "");
  const std::string_view path = request.target();
  std::string_view route = path.substr(0, path.find('?'));
  const bool ask_route = route == "/pending" || route == "/decide";
  const RequiredToken required = ask_route ? required_token(handlers) : RequiredToken{};
  if (ask_route && (!handlers.pending || !handlers.decide)) {
    response.result(http::status::not_found);
    response.body() = "this gate asks no questions\n";
  } else if (ask_route && from_a_browser(request)) {
    response.result(http::status::forbidden);
    response.body() =
        "this route does not answer web pages (Origin, Sec-Fetch-Site or a domain in Host); use "
        "sandgate pending / sandgate decide\n";
  } else if (ask_route && !token_accepted(required, request)) {
    response.result(http::status::unauthorized);
    response.set(http::field::www_authenticate, "Bearer realm=\"sandgate\"");
    response.body() = std::string(required.refusal);
  } else if (route == "/decide") {
    if (request.method() != http::verb::post) {
      response.result(http::status::method_not_allowed);
      response.set(http::field::allow, "POST");
      response.body() = "only POST\n";
    } else {
      auto [status, text] = handlers.decide(request.body(), peer);
      response.result(static_cast<http::status>(status));
      response.body() = std::move(text);
    }
  } else if (request.method() != http::verb::get && request.method() != http::verb::head) {
    response.result(http::status::method_not_allowed);
    response.set(http::field::allow, "GET, HEAD");
    response.body() = "only GET\n";
  } else if (route == "/metrics") {
    response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response.body() = handlers.metrics();
  } else if (route == "/healthz") {
    response.body() = "ok\n";
  } else if (route == "/readyz") {
    const bool ready = handlers.ready();
    response.result(ready ? http::status::ok : http::status::service_unavailable);
    response.body() = ready ? "ready\n" : "not ready\n";
  } else if (route == "/denials") {
    response.set(http::field::content_type, "application/json");
    response.body() = handlers.denials();
  } else if (route == "/pending") {
    const bool text = path.substr(route.size()) == "?format=text";
    response.set(http::field::content_type,
                 text ? "text/plain; charset=utf-8" : "application/json");
    response.body() = handlers.pending(text);
  } else {
    response.result(http::status::not_found);
    response.body() = "not found: try /metrics, /healthz, /readyz, /denials, /pending\n";
  }
  response.prepare_payload();
  if (request.method() == http::verb::head) {
    response.body().clear();  // the length of the GET answer, and no body
  }
  return response;
}

// The answer to a request that could not be read, if it gets one: a head over the limit is told
// so; a malformed one gets 400; a client that went away or timed out gets nothing.
std::optional<Response> answer_to_failed_read(const boost::system::error_code& error) {
  if (error == http::error::header_limit || error == http::error::buffer_overflow) {
    return plain_response(http::status::request_header_fields_too_large,
                          "request head too large\n");
  }
  if (error == http::error::body_limit) {
    return plain_response(http::status::payload_too_large, "request body too large\n");
  }
  if (error.category() == http::make_error_code(http::error::end_of_stream).category() &&
      error != http::error::end_of_stream && error != http::error::partial_message) {
    return plain_response(http::status::bad_request, "malformed request\n");
  }
  return std::nullopt;
}

// Serves one request on `socket`, then closes it: the read and the write each have a deadline,
// so a connection holds its slot for at most request_timeout + response_timeout.
asio::awaitable<void> serve_connection(Endpoint& endpoint, tcp::socket socket) {
  const Slot slot(endpoint.open);
  const AdminLimits& limits = endpoint.limits;
  beast::flat_buffer buffer(limits.max_request_head + kMaxRequestBody);
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(limits.max_request_head));
  parser.body_limit(kMaxRequestBody);
  asio::steady_timer deadline(socket.get_executor());

  // 1. The request, whole, by its deadline.
  deadline.expires_after(limits.request_timeout);
  auto read = co_await (http::async_read(socket, buffer, parser, use_tuple) ||
                        deadline.async_wait(use_tuple));
  std::optional<Response> response;
  if (read.index() == 0) {
    const auto [error, bytes] = std::get<0>(read);
    boost::system::error_code ignored;
    const auto remote = socket.remote_endpoint(ignored);
    const std::string peer = remote.address().to_string() + ":" + std::to_string(remote.port());
    response =
        error ? answer_to_failed_read(error) : respond(endpoint.handlers, parser.get(), peer);
  }

  // 2. The response, by its own deadline: a client that does not read must not keep the slot.
  if (response) {
    deadline.expires_after(limits.response_timeout);
    co_await (http::async_write(socket, *response, use_tuple) || deadline.async_wait(use_tuple));
  }
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

asio::awaitable<void> accept_loop(Endpoint& endpoint, tcp::acceptor& acceptor) {
  asio::steady_timer pause(acceptor.get_executor());
  RateLimitedNote accept_failed;
  RateLimitedNote over_cap;
  for (;;) {
    auto [error, socket] = co_await acceptor.async_accept(use_tuple);
    if (error == asio::error::operation_aborted || !acceptor.is_open()) {
      co_return;
    }
    if (error) {
      // Out of descriptors (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM): the connection stays in
      // the backlog and the listener stays readable, so accepting again at once would spin a
      // core for as long as the shortage lasts. Pause first.
      accept_failed(endpoint.handlers, "admin endpoint: accept failed: " + error.message() +
                                           "; pausing new connections briefly");
      pause.expires_after(endpoint.limits.accept_backoff);
      co_await pause.async_wait(use_tuple);
      continue;
    }
    if (endpoint.open.load(std::memory_order_relaxed) >= endpoint.limits.max_connections) {
      // Over the cap: closed at once, unanswered. Writing an answer would cost a coroutine, a
      // timer and a wait on a client the endpoint has no room for.
      over_cap(endpoint.handlers,
               "admin endpoint: " + std::to_string(endpoint.limits.max_connections) +
                   " connections open; closing new ones until one ends");
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    endpoint.open.fetch_add(1, std::memory_order_relaxed);  // given back by serve_connection
    asio::co_spawn(acceptor.get_executor(), serve_connection(endpoint, std::move(socket)),
                   asio::detached);
  }
}

}  // namespace

struct AdminServer::Impl {
  Endpoint endpoint;  // before `io`: the coroutines `io` destroys still use it
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
};

AdminServer::AdminServer(AdminHandlers handlers, AdminLimits limits)
    : impl_(std::make_unique<Impl>()) {
  impl_->endpoint.handlers = std::move(handlers);
  impl_->endpoint.limits = limits;
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

std::size_t AdminServer::open_connections() const {
  return impl_->endpoint.open.load(std::memory_order_relaxed);
}

Expected<std::string, std::string> AdminServer::start(const settings::TcpEndpoint& where) {
  const std::string listen = where.text();
  // The address was parsed when the settings were loaded; this converts it, it cannot fail.
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(where.address, ec);
  if (ec) {
    return Unexpected{"admin address '" + listen + "' is not ADDR:PORT"};
  }
  if (!ip.is_loopback()) {
    return Unexpected{"admin address " + listen +
                      " is not loopback: the admin endpoint is for this machine only"};
  }
  const tcp::endpoint endpoint(ip, where.port);
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
  asio::co_spawn(impl_->io, accept_loop(impl_->endpoint, acceptor), asio::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
  const std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                   : bound.address().to_string();
  return host + ":" + std::to_string(bound.port());
}

}  // namespace sandgate::admin
