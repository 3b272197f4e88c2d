// The admin endpoint. See admin_server.hpp.
#include "proxy/admin/admin_server.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <optional>
#include <thread>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/asio/close_on_exec.hpp"
#include "proxy/asio/use_tuple.hpp"

namespace sandgate::admin {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using unix_stream = asio::local::stream_protocol;
using namespace asio::experimental::awaitable_operators;

// The endpoint answers GET and HEAD, and POST /decide, whose form body is small; any other body
// is read (so that its bytes are not mistaken for a next request) but never used.
constexpr std::size_t kMaxRequestBody = 8192;

// What the accept loop and every connection share. Lives in AdminServer::Impl, before the
// io_context, so it outlives every coroutine the io_context destroys.
struct Endpoint {
  AdminHandlers handlers;
  AdminLimits limits;
  std::atomic<std::size_t> open{0};  // written on the admin thread only; read by any thread
  std::size_t streams = 0;           // /events streams open; admin thread only
  std::size_t answering = 0;         // of them, those that answer questions; admin thread only
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

// The routes that name where an agent goes or let traffic out: asked questions, answers, and
// what `sandgate watch` reads.
bool guarded_route(std::string_view route) {
  return route == "/pending" || route == "/decide" || route == "/events" || route == "/budgets" ||
         route == "/traffic" || route == "/about";
}

// A guarded route's refusal (a web page's request, or no token), or nothing.
std::optional<Response> refuse_guarded(const http::request<http::string_body>& request,
                                       const RequiredToken& required) {
  const std::string_view path = request.target();
  if (!guarded_route(path.substr(0, path.find('?')))) {
    return std::nullopt;
  }
  if (from_a_browser(request)) {
    Response response = plain_response(
        http::status::forbidden,
        "this route does not answer web pages (Origin, Sec-Fetch-Site or a domain in Host); use "
        "sandgate pending / sandgate decide / sandgate watch\n");
    return response;
  }
  if (!token_accepted(required, request)) {
    Response response = plain_response(http::status::unauthorized, std::string(required.refusal));
    response.set(http::field::www_authenticate, "Bearer realm=\"sandgate\"");
    return response;
  }
  return std::nullopt;
}

// GET /budgets, /traffic, /about: the document, or nothing for another route. A route whose
// handler is missing answers an empty JSON document.
std::optional<std::string> watch_document(const AdminHandlers& handlers, std::string_view route) {
  const std::function<std::string()>* handler = route == "/budgets"   ? &handlers.budgets
                                                : route == "/traffic" ? &handlers.traffic
                                                : route == "/about"   ? &handlers.about
                                                                      : nullptr;
  if (handler == nullptr) {
    return std::nullopt;
  }
  return *handler ? (*handler)() : std::string(route == "/about" ? "{}\n" : "[]\n");
}

Response respond(const AdminHandlers& handlers, const http::request<http::string_body>& request,
                 std::string_view peer) {
  Response response = plain_response(http::status::ok, "");
  const std::string_view path = request.target();
  std::string_view route = path.substr(0, path.find('?'));
  const bool ask_route = route == "/pending" || route == "/decide";
  const RequiredToken required = guarded_route(route) ? required_token(handlers) : RequiredToken{};
  if (auto refusal = refuse_guarded(request, required)) {
    response = std::move(*refusal);
  } else if (ask_route && (!handlers.pending || !handlers.decide)) {
    response.result(http::status::not_found);
    response.body() = "this gate asks no questions\n";
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
  } else if (route == "/events") {
    // A GET that streams never comes here (serve_connection streams it): HEAD, or no feed.
    response.set(http::field::content_type, "application/x-ndjson");
    if (handlers.events == nullptr) {
      response.result(http::status::not_found);
      response.body() = "this endpoint streams no events\n";
    }
  } else if (auto document = watch_document(handlers, route)) {
    response.set(http::field::content_type, "application/json");
    response.body() = *document;
  } else if (route == "/pending") {
    const bool text = path.substr(route.size()) == "?format=text";
    response.set(http::field::content_type,
                 text ? "text/plain; charset=utf-8" : "application/json");
    response.body() = handlers.pending(text);
  } else {
    response.result(http::status::not_found);
    response.body() =
        "not found: try /metrics, /healthz, /readyz, /denials, /pending, /events, /budgets, "
        "/traffic, /about\n";
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

// The stream's head: no length, the body ends when the connection does.
constexpr std::string_view kStreamHead =
    "HTTP/1.1 200 OK\r\nServer: sandgate\r\nContent-Type: application/x-ndjson\r\n"
    "Cache-Control: no-store\r\nConnection: close\r\n\r\n";

// Counts an /events stream (and whether it answers questions) for as long as it lives, and
// tells the handlers when the number of answering streams changes. Admin thread only.
class StreamCount {
 public:
  StreamCount(Endpoint& endpoint, bool answering) : endpoint_(endpoint), answering_(answering) {
    ++endpoint_.streams;
    if (answering_) {
      changed(++endpoint_.answering);
    }
  }
  ~StreamCount() {
    --endpoint_.streams;
    if (answering_) {
      changed(--endpoint_.answering);
    }
  }
  StreamCount(const StreamCount&) = delete;
  StreamCount& operator=(const StreamCount&) = delete;

 private:
  void changed(std::size_t answering) {
    if (endpoint_.handlers.answering_changed) {
      endpoint_.handlers.answering_changed(answering);
    }
  }
  Endpoint& endpoint_;
  bool answering_;
};

// Whether `request` opens a stream: GET /events with a feed, and the route's refusals passed.
bool opens_stream(const AdminHandlers& handlers, const http::request<http::string_body>& request) {
  const std::string_view path = request.target();
  return request.method() == http::verb::get && path.substr(0, path.find('?')) == "/events" &&
         handlers.events != nullptr && !refuse_guarded(request, required_token(handlers));
}

// GET /events: writes the feed's lines as they come until the client closes, a write misses its
// deadline, or the endpoint stops. The subscription bounds what waits for this client.
template <class Socket>
asio::awaitable<void> stream_events(Endpoint& endpoint, Socket& socket, bool answering) {
  const AdminLimits& limits = endpoint.limits;
  auto subscription =
      endpoint.streams < limits.max_streams ? endpoint.handlers.events->subscribe() : nullptr;
  if (!subscription) {
    Response busy = plain_response(
        http::status::service_unavailable,
        "too many watchers: at most " + std::to_string(limits.max_streams) + " at once\n");
    asio::steady_timer deadline(socket.get_executor());
    deadline.expires_after(limits.response_timeout);
    co_await (http::async_write(socket, busy, use_tuple) || deadline.async_wait(use_tuple));
    co_return;
  }
  const StreamCount counted(endpoint, answering);
  asio::steady_timer deadline(socket.get_executor());
  asio::steady_timer tick(socket.get_executor());
  std::string out(kStreamHead);
  auto quiet_since = std::chrono::steady_clock::now();
  for (;;) {
    // 1. What the feed has for this client (and what it dropped), or a heartbeat when quiet.
    log::EventFeed::Batch batch = subscription->take();
    if (batch.dropped > 0) {
      out += "{\"event\":\"dropped\",\"count\":" + std::to_string(batch.dropped) + "}\n";
    }
    out += batch.lines;
    const auto now = std::chrono::steady_clock::now();
    if (out.empty() && now - quiet_since >= limits.stream_heartbeat) {
      out = "\n";
    }
    // 2. Written by its deadline: a client that does not read is cut off.
    if (!out.empty()) {
      deadline.expires_after(limits.response_timeout);
      auto written = co_await (asio::async_write(socket, asio::buffer(out), use_tuple) ||
                               deadline.async_wait(use_tuple));
      if (written.index() != 0 || std::get<0>(std::get<0>(written))) {
        co_return;
      }
      out.clear();
      quiet_since = now;
    }
    // 3. Until the next look, unless the client closes (or sends anything: it has no more to
    // say on this connection) first.
    tick.expires_after(limits.stream_poll);
    auto waited =
        co_await (tick.async_wait(use_tuple) || socket.async_wait(Socket::wait_read, use_tuple));
    if (waited.index() != 0) {
      co_return;
    }
  }
}

// The peer as the log names it: ADDR:PORT, or "this user" on the private socket.
std::string peer_text(const tcp::socket& socket) {
  boost::system::error_code ignored;
  const auto remote = socket.remote_endpoint(ignored);
  return remote.address().to_string() + ":" + std::to_string(remote.port());
}
std::string peer_text(const unix_stream::socket&) { return "the run's private socket"; }

// Serves one request on `socket`, then closes it: the read and the write each have a deadline,
// so a connection holds its slot for at most request_timeout + response_timeout. A stream
// (/events) holds it for as long as its client reads.
template <class Socket>
asio::awaitable<void> serve_connection(Endpoint& endpoint, Socket socket) {
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
    if (!error && opens_stream(endpoint.handlers, parser.get())) {
      const bool answering = parser.get().target().ends_with("?answer=1");
      co_await stream_events(endpoint, socket, answering);
    } else {
      response = error ? answer_to_failed_read(error)
                       : respond(endpoint.handlers, parser.get(), peer_text(socket));
    }
  }

  // 2. The response, by its own deadline: a client that does not read must not keep the slot.
  if (response) {
    deadline.expires_after(limits.response_timeout);
    co_await (http::async_write(socket, *response, use_tuple) || deadline.async_wait(use_tuple));
  }
  boost::system::error_code ignored;
  socket.shutdown(Socket::shutdown_send, ignored);
  socket.close(ignored);
}

// The private socket serves its own user only: another uid (or a peer the kernel cannot name)
// is closed unanswered. The folder's 0700 already keeps others out; this holds even if it did
// not.
bool same_user(unix_stream::socket& socket) {
#if defined(SO_PEERCRED)
  ucred credentials{};
  socklen_t length = sizeof credentials;
  return ::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &credentials, &length) ==
             0 &&
         credentials.uid == ::geteuid();
#else
  uid_t uid = 0;
  gid_t gid = 0;
  return ::getpeereid(socket.native_handle(), &uid, &gid) == 0 && uid == ::geteuid();
#endif
}
bool same_user(tcp::socket&) { return true; }

template <class Acceptor>
asio::awaitable<void> accept_loop(Endpoint& endpoint, Acceptor& acceptor) {
  asio::steady_timer pause(acceptor.get_executor());
  RateLimitedNote accept_failed;
  RateLimitedNote over_cap;
  RateLimitedNote stranger;
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
    descriptors::close_on_exec(socket.native_handle());  // (Asio's accept() leaves it inheritable)
    if (!same_user(socket)) {
      stranger(endpoint.handlers, "admin endpoint: closed a connection from another user");
      boost::system::error_code ignored;
      socket.close(ignored);
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
  unix_stream::acceptor private_acceptor{io};
  std::string private_path;  // removed when the server stops
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
      impl->private_acceptor.close(ignored);
    });
    impl_->io.stop();
    impl_->thread.join();
  }
  if (!impl_->private_path.empty()) {
    ::unlink(impl_->private_path.c_str());
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
  if (!ec && !descriptors::close_on_exec(acceptor.native_handle())) {
    ec.assign(errno, boost::system::system_category());
  }
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
  if (impl_->endpoint.handlers.events != nullptr) {
    impl_->endpoint.handlers.events->enable();
  }
  const std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                   : bound.address().to_string();
  return host + ":" + std::to_string(bound.port());
}

}  // namespace sandgate::admin

namespace sandgate::admin {

Expected<std::string, std::string> AdminServer::start_private(const std::string& path) {
  // A socket left by a run that died is replaced; the folder is the caller's own (0700).
  ::unlink(path.c_str());
  boost::system::error_code ec;
  auto& acceptor = impl_->private_acceptor;
  acceptor.open(unix_stream(), ec);
  if (!ec && !descriptors::close_on_exec(acceptor.native_handle())) {
    ec.assign(errno, boost::system::system_category());
  }
  if (!ec) {
    acceptor.bind(unix_stream::endpoint(path), ec);
  }
  // 0600 (the folder's 0700 already keeps others out until then; umask is the whole process's,
  // whose other threads may be making files now, so it is not changed).
  if (!ec && ::chmod(path.c_str(), 0600) != 0) {
    ec.assign(errno, boost::system::system_category());
  }
  if (!ec) {
    acceptor.listen(16, ec);
  }
  if (ec) {
    return Unexpected{"cannot listen on " + path + ": " + ec.message()};
  }
  impl_->private_path = path;
  if (impl_->endpoint.handlers.events != nullptr) {
    impl_->endpoint.handlers.events->enable();
  }
  asio::co_spawn(impl_->io, accept_loop(impl_->endpoint, acceptor), asio::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
  return path;
}

}  // namespace sandgate::admin
