// Plain HTTP through the proxy (absolute-form requests from `http_proxy` users).
//
// Each request on a client connection goes through the same steps as a CONNECT: the target is
// parsed strictly, the head is checked for request-smuggling shapes, the policy decides, and the
// upstream is dialled with the same checks (or a kept-alive one for the same host:port is
// reused). Then the request is rewritten (origin-form target, Host from the URL, hop-by-hop
// fields out, Via in) and the two bodies stream through fixed 64 KiB buffers, the request body
// upstream and the response back at the same time, so neither is ever held whole and an origin
// that answers before reading the whole upload does not deadlock the exchange.
//
// `Expect: 100-continue`: the proxy answers `100 Continue` itself as soon as the origin is
// connected and the head sent, and strips the expectation from what it forwards; the body then
// flows. So the policy, DNS and connect failures still reach the client before it sends the body
// (which is what the expectation is for), and origins that ignore Expect cannot stall a client.
// An origin's own interim responses (1xx other than 101) are passed on to HTTP/1.1 clients.
//
// Failures: before the first byte of a final response reached the client, the proxy answers
// (400 for a malformed body, 502 for an origin that closed, failed or sent nonsense); after it,
// the client connection is reset, so that a truncated body can never pass for a complete one.
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "proxy/session/client_session.hpp"
#include "proxy/session/fault_injection.hpp"
#include "proxy/session/handlers.hpp"
#include "proxy/session/http_head.hpp"
#include "proxy/session/http_target.hpp"
#include "proxy/session/tunnel_session.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "rules/host.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
using clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr std::size_t kChunk = 64 * 1024;
constexpr std::uint32_t kResponseHeadLimit = 64 * 1024;
// What the gate holds of an origin's bytes that the parser has not taken yet: a response head
// (at most kResponseHeadLimit), a chunk header line, or a trailer section. Beast 1.81 has no
// limit of its own on chunk extensions and trailers; the buffer's maximum is that limit (the
// read fails with buffer_overflow instead of growing).
constexpr std::size_t kUpstreamBufferLimit = kResponseHeadLimit + 16 * 1024;
// Interim responses passed on per request: an origin that sends nothing else never finishes.
constexpr int kMaxInterimResponses = 32;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

using BodyRequestParser = http::request_parser<http::buffer_body>;
using BodyResponseParser = http::response_parser<http::buffer_body>;
using RequestWriter = http::request_serializer<http::buffer_body>;
using ResponseWriter = http::response_serializer<http::buffer_body>;

double ms_since(clock::time_point start) {
  return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

// A kept-alive upstream connection waiting for the next request must have nothing to say: if
// the origin closed it, or sent bytes nobody asked for, it is not reused.
bool upstream_still_idle(tcp::socket& socket) {
  char byte;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Closes a socket so that the peer sees a reset rather than a clean end of stream.
void reset(tcp::socket& socket) {
  boost::system::error_code ignored;
  if (socket.is_open()) {
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
  }
}

bool is_http_parse_error(const boost::system::error_code& error) {
  return error.category() == http::make_error_code(http::error::bad_chunk).category() &&
         error != http::error::partial_message && error != http::error::end_of_stream;
}

// Host from the URL, as the first field (where RFC 9112 section 3.2 wants user agents to put
// it), whatever Host the client sent.
void set_host_first(http::fields& fields, std::string_view authority) {
  fields.erase(http::field::host);
  std::vector<std::pair<std::string, std::string>> rest;
  rest.reserve(static_cast<std::size_t>(std::distance(fields.begin(), fields.end())));
  for (const auto& field : fields) {
    rest.emplace_back(field.name_string(), field.value());
  }
  fields.clear();
  fields.insert(http::field::host, authority);
  for (const auto& [name, value] : rest) {
    fields.insert(name, value);
  }
}

// The upstream connection of a client connection, kept between its requests.
struct Upstream {
  std::string key;      // "host:port" it was dialled for
  std::string address;  // the address connected to, for the log
  std::optional<rules::IpAddress> dialled;  // the checked address of a name, for a reload
  beast::flat_buffer buffer{kUpstreamBufferLimit};
  bool reusable = false;
};

// What one exchange's directions share. Everything runs on the session's thread.
struct Exchange {
  SessionContext& context;
  Upstream& upstream;
  beast::flat_buffer& client_buffer;
  BodyRequestParser& request;
  RequestWriter& request_writer;
  std::string where;  // "host:port", for sentences
  bool head_request = false;
  bool client_http11 = true;
  bool request_keep_alive = true;
  bool websocket = false;

  clock::time_point last_activity = clock::now();
  int running = 2;  // directions still going; the last one stops the watchdog
  asio::steady_timer watchdog;

  // How it went.
  bool body_done = false;      // the whole request body reached the origin
  bool client_failed = false;  // reading the request (body) from the client failed
  std::string client_problem;  // ... because it was malformed (else the client left)
  bool upstream_write_failed = false;
  bool body_abandoned = false;  // the response ended first: the rest of the body is not read
  bool timed_out = false;
  bool upgraded = false;          // the origin switched to WebSocket
  bool response_started = false;  // a byte of the final response went to the client
  bool response_done = false;     // ... and all of it
  bool oversized = false;  // the origin broke a size limit mid-response (chunk header, trailer)
  bool client_keep_alive = false;
  bool upstream_keep_alive = false;
  // Before the response started: why the origin failed (the first failure wins).
  std::optional<rules::Reason> failure;
  std::string failure_sentence;
  std::optional<BodyResponseParser> response;
  std::uint64_t bytes_up = 0;    // to the origin, heads included
  std::uint64_t bytes_down = 0;  // to the client, heads included

  Exchange(SessionContext& c, Upstream& u, beast::flat_buffer& b, BodyRequestParser& r,
           RequestWriter& w)
      : context(c),
        upstream(u),
        client_buffer(b),
        request(r),
        request_writer(w),
        watchdog(c.client.get_executor()) {}

  void touch() { last_activity = clock::now(); }
  void direction_done() {
    if (--running == 0) {
      watchdog.cancel();
    }
  }
  void fail(rules::Reason reason, std::string sentence) {
    if (!failure) {
      failure = reason;
      failure_sentence = std::move(sentence);
    }
  }
};

// Client to origin: the request body, piece by piece, re-framed by the serializer (chunked stays
// chunked, Content-Length stays exact).
asio::awaitable<void> send_request_body(Exchange& x) {
  auto& body = x.request.get().body();
  std::unique_ptr<char[]> piece;
  if (!x.request.is_done()) {
    piece = std::make_unique<char[]>(kChunk);
  }
  // The flags are checked before each operation starts: cancel() from the other direction
  // only reaches an operation in flight, not one about to be started.
  while (!x.request.is_done() && !x.body_abandoned && !x.timed_out) {
    body.data = piece.get();
    body.size = kChunk;
    auto [read_error, read] =
        co_await http::async_read_some(x.context.client, x.client_buffer, x.request, use_tuple);
    if (read_error == http::error::need_buffer) {
      read_error = {};
    }
    if (read_error && (x.body_abandoned || x.timed_out)) {
      break;  // stopped from the other direction or by the watchdog
    }
    if (read_error) {
      // The client left or sent a broken body: the origin can give no meaningful answer now, so
      // stop waiting for one.
      x.client_failed = true;
      if (is_http_parse_error(read_error)) {
        x.client_problem = "the request body is malformed: " + read_error.message() + ".";
      }
      boost::system::error_code ignored;
      x.context.upstream.cancel(ignored);
      break;
    }
    x.touch();
    const std::size_t size = kChunk - body.size;
    body.data = size > 0 ? piece.get() : nullptr;
    body.size = size;
    body.more = !x.request.is_done();
    if (size == 0 && body.more) {
      continue;  // a chunk header, no data yet
    }
    if (x.body_abandoned || x.timed_out) {
      break;
    }
    auto [write_error, written] =
        co_await http::async_write(x.context.upstream, x.request_writer, use_tuple);
    x.bytes_up += written;
    if (write_error == http::error::need_buffer) {
      write_error = {};
    }
    if (write_error) {
      // The origin stopped reading; it may still have answered (413, say), which the other
      // direction relays.
      x.upstream_write_failed = true;
      break;
    }
    x.touch();
  }
  x.body_done = x.request.is_done() && !x.client_failed && !x.upstream_write_failed;
  x.direction_done();
}

// Writes a response head (interim, final or 101) to the client.
asio::awaitable<bool> write_response_head(Exchange& x, http::response<http::buffer_body>& head) {
  ResponseWriter writer{head};
  auto [error, written] = co_await http::async_write_header(x.context.client, writer, use_tuple);
  x.bytes_down += written;
  x.touch();
  co_return !error;
}

// Reads interim responses until the final (or 101) head has arrived. Returns false on failure.
asio::awaitable<bool> read_final_head(Exchange& x) {
  for (int interim = 0;; ++interim) {
    if (interim > kMaxInterimResponses) {
      x.fail(rules::Reason::bad_response, x.where + " sent more than " +
                                              std::to_string(kMaxInterimResponses) +
                                              " interim (1xx) responses to one request.");
      co_return false;
    }
    if (x.client_failed || x.timed_out) {
      co_return false;  // stopped by the other direction or the watchdog
    }
    x.response.emplace();
    BodyResponseParser& parser = *x.response;
    parser.header_limit(kResponseHeadLimit);
    parser.body_limit(boost::none);
    if (x.head_request) {
      parser.skip(true);  // a response to HEAD has no body, whatever its framing fields say
    }
    auto [error, read] =
        co_await http::async_read_header(x.context.upstream, x.upstream.buffer, parser, use_tuple);
    x.touch();
    if (error) {
      if (error == http::error::header_limit || error == http::error::buffer_overflow) {
        x.fail(rules::Reason::bad_response, x.where + " sent a response head larger than 64 KiB.");
      } else if (is_http_parse_error(error)) {
        x.fail(rules::Reason::bad_response,
               x.where + " sent a response that is not valid HTTP/1.1: " + error.message() + ".");
      } else {
        x.fail(
            rules::Reason::upstream_closed,
            x.where + " closed the connection before its response head: " + error.message() + ".");
      }
      co_return false;
    }
    auto& head = parser.get();
    const unsigned status = head.result_int();
    if (status == 101) {
      if (!x.websocket || !has_token(head[http::field::upgrade], "websocket")) {
        x.fail(rules::Reason::bad_response,
               x.where + " switched protocols without a WebSocket upgrade.");
        co_return false;
      }
      x.upgraded = true;
      co_return true;
    }
    if (status >= 200) {
      co_return true;
    }
    // 1xx: pass it on to HTTP/1.1 clients (HTTP/1.0 ones cannot read it), then read on.
    if (x.client_http11) {
      strip_hop_by_hop(head, false);
      add_via(head);
      head.version(11);
      if (!co_await write_response_head(x, head)) {
        x.client_failed = true;
        co_return false;
      }
    }
  }
}

// Origin to client: the response head, then its body, piece by piece.
asio::awaitable<void> relay_response(Exchange& x) {
  tcp::socket& client = x.context.client;
  tcp::socket& upstream = x.context.upstream;
  const bool have_head = co_await read_final_head(x);
  if (have_head && !x.upgraded) {
    BodyResponseParser& parser = *x.response;
    auto& response = parser.get();

    // Framing the client can trust: one Content-Length, or chunked, or (for codings that do
    // not end in chunked) the end of the stream. Both at once is refused, as in requests.
    const bool has_length = response.count(http::field::content_length) > 0;
    const bool has_coding = response.count(http::field::transfer_encoding) > 0;
    if (has_length && has_coding && !parser.is_done()) {
      x.fail(rules::Reason::bad_response,
             x.where + " sent both Content-Length and Transfer-Encoding.");
    } else {
      const bool to_eof = parser.need_eof();
      const bool unchunk = !x.client_http11 && parser.chunked();  // HTTP/1.0 cannot read chunks
      x.client_keep_alive =
          x.request_keep_alive && !to_eof && !unchunk && x.request.is_done() && !x.client_failed;
      strip_hop_by_hop(response, false);
      add_via(response);
      if (response.count(http::field::content_length) > 1 && parser.content_length()) {
        response.content_length(*parser.content_length());  // one field, even if sent twice
      }
      if (unchunk) {
        response.chunked(false);
      }
      response.version(11);
      response.keep_alive(x.client_keep_alive);
      if (x.client_keep_alive && !x.client_http11) {
        response.set(http::field::connection, "keep-alive");
      }

      x.response_started = true;
      ResponseWriter writer{response};
      auto [head_error, head_written] =
          co_await http::async_write_header(client, writer, use_tuple);
      x.bytes_down += head_written;
      x.touch();
      bool ok = !head_error;

      auto& body = response.body();
      std::unique_ptr<char[]> piece;
      if (ok && !parser.is_done()) {
        piece = std::make_unique<char[]>(kChunk);
      }
      while (ok && !parser.is_done()) {
        if (x.client_failed || x.timed_out) {
          ok = false;
          break;
        }
        body.data = piece.get();
        body.size = kChunk;
        auto [read_error, read] =
            co_await http::async_read_some(upstream, x.upstream.buffer, parser, use_tuple);
        if (read_error == http::error::need_buffer) {
          read_error = {};
        }
        if (read_error == http::error::buffer_overflow) {
          // A chunk header or trailer section that would not end: the gate does not hold more.
          x.oversized = true;
          ok = false;
          break;
        }
        if (read_error) {
          ok = false;  // the origin broke off mid-response
          break;
        }
        x.touch();
        const std::size_t size = kChunk - body.size;
        body.data = size > 0 ? piece.get() : nullptr;
        body.size = size;
        body.more = !parser.is_done();
        if (size == 0 && body.more) {
          continue;
        }
        auto [write_error, written] = co_await http::async_write(client, writer, use_tuple);
        x.bytes_down += written;
        if (write_error == http::error::need_buffer) {
          write_error = {};
        }
        if (write_error) {
          ok = false;
          break;
        }
        x.touch();
      }
      x.response_done = ok && parser.is_done();
      x.upstream_keep_alive = x.response_done && parser.keep_alive();
    }
  }

  // An origin that answered (or failed) before the upload ended: the rest of the body has
  // nowhere to go, so stop reading it; the client connection is not kept.
  if (!x.request.is_done() && !x.client_failed && !x.upgraded) {
    x.client_keep_alive = false;
    x.upstream_keep_alive = false;
    x.body_abandoned = true;
    boost::system::error_code ignored;
    client.cancel(ignored);
    upstream.cancel(ignored);
  }
  x.direction_done();
}

// Ends the exchange when neither direction moved a byte for `idle`.
asio::awaitable<void> watch_idle(Exchange& x, std::chrono::seconds idle) {
  for (;;) {
    x.watchdog.expires_at(x.last_activity + idle);
    auto [error] = co_await x.watchdog.async_wait(use_tuple);
    if (error || x.running == 0) {
      co_return;
    }
    if (clock::now() >= x.last_activity + idle) {
      x.timed_out = true;
      boost::system::error_code ignored;
      x.context.client.cancel(ignored);
      x.context.upstream.cancel(ignored);
      co_return;
    }
  }
}

// What to do after a request.
enum class Next : std::uint8_t { read_next, stop };

// Writes the proxy's own answer to a request whose exchange failed before any response byte
// reached the client, then closes. The decision was already logged; this ends the request.
asio::awaitable<std::uint64_t> answer_failure(SessionContext& context, rules::Reason reason,
                                              std::string_view sentence) {
  const std::string reply = build_reply(reason, sentence);
  auto [error, written] =
      co_await asio::async_write(context.client, asio::buffer(reply), use_tuple);
  (void)error;
  co_await close_gracefully(context.client);
  co_return written;
}

struct EndLine {
  std::string_view method;
  std::string_view host;
  std::uint16_t port = 0;
  std::string_view outcome;
  std::optional<rules::Reason> reason;  // none: it ended normally
  std::string_view detail;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  clock::time_point started;
};

void log_end(SessionContext& context, const EndLine& line) {
  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = context.id;
  end.client = context.client_address;
  end.method = line.method;
  end.host = line.host;
  end.port = line.port;
  // The request was allowed; a failure after that is the end line's reason, not a new verdict.
  end.verdict = rules::verdict_name(rules::Verdict::allow);
  end.reason = line.reason ? rules::reason_code(*line.reason) : std::string_view{};
  end.detail = line.detail;
  end.outcome = line.outcome;
  end.bytes_up = line.bytes_up;
  end.bytes_down = line.bytes_down;
  end.duration_ms = ms_since(line.started);
  context.record_end(end);
}

// After a 101: send the head on, then carry bytes both ways until both sides are done.
asio::awaitable<void> run_websocket(Exchange& x, EndLine& end) {
  SessionContext& context = x.context;
  auto& response = x.response->get();
  strip_hop_by_hop(response, true);
  response.set(http::field::connection, "Upgrade");
  add_via(response);
  response.version(11);
  x.response_started = true;
  bool ok = co_await write_response_head(x, response);

  // Bytes that arrived behind either head belong to the tunnel.
  if (ok && x.upstream.buffer.size() > 0) {
    auto [error, written] =
        co_await asio::async_write(context.client, x.upstream.buffer.data(), use_tuple);
    x.bytes_down += written;
    ok = !error;
  }
  if (ok && x.client_buffer.size() > 0) {
    auto [error, written] =
        co_await asio::async_write(context.upstream, x.client_buffer.data(), use_tuple);
    x.bytes_up += written;
    ok = !error;
  }
  x.upstream.buffer = beast::flat_buffer();
  x.client_buffer.consume(x.client_buffer.size());

  if (ok && !context.live.revoked && context.live.destination) {
    // From here the tunnel relay carries the bytes, as for a CONNECT tunnel whose first bytes
    // need no watching; the session coroutines finish.
    server::Destination destination = std::move(*context.live.destination);
    context.live.destination.reset();
    TunnelSession::start_websocket(context, std::string(end.method), std::string(end.host),
                                   std::move(destination), x.bytes_up, x.bytes_down,
                                   end.started);
    co_return;
  }
  // The head or the bytes behind it could not be passed on: the upgrade failed.
  boost::system::error_code ignored;
  context.client.close(ignored);
  context.upstream.close(ignored);
  if (context.live.revoked) {
    context.record_revoked(end.method, x.bytes_up, x.bytes_down);
    co_return;
  }
  end.outcome = relay::to_string(relay::Outcome::reset);
  end.bytes_up = x.bytes_up;
  end.bytes_down = x.bytes_down;
  log_end(context, end);
}

// One request: check, decide, reach the origin, exchange. Returns whether the connection goes
// on to the next request; when not, the client socket has been closed or handed to a reply.
//
// GCC 12 reports a false -Wmismatched-new-delete in this coroutine's ramp: it pairs the free()
// inside Asio's frame deallocator with the frame's class-specific operator new, which allocates
// with malloc() too. Silenced for this function only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
asio::awaitable<Next> forward_request(SessionContext& context, HeadParser& head_parser,
                                      beast::flat_buffer& buffer, Upstream& upstream) {
  // The rules in force now decide this request, whatever decided the ones before it.
  context.begin_request();
  const clock::time_point started = clock::now();
  const std::string method(head_parser.get().method_string());
  const std::string raw_target(head_parser.get().target());
  boost::system::error_code ignored;

  // 1. The target, parsed strictly: the host checked is the host dialled and named upstream.
  auto target = parse_http_target(raw_target, head_parser.get().method() == http::verb::options);
  if (!target) {
    context.upstream.close(ignored);
    co_await reply_and_log(context, target_error_reason(target.error()), method, raw_target, 0,
                           target_error_text(target.error(), raw_target));
    co_return Next::stop;
  }
  const rules::Host& host = target->host;
  const std::uint16_t port = target->port;
  const std::string display = host.display();
  const std::string where = display + ":" + std::to_string(port);

  // 2. Framing the proxy and the origin could read differently is refused before anything is
  // sent anywhere.
  if (auto problem = request_framing_problem(head_parser.get())) {
    context.upstream.close(ignored);
    co_await reply_and_log(context, rules::Reason::bad_request, method, display, port, *problem);
    co_return Next::stop;
  }

  // 3. The policy, on every request of the connection.
  const rules::Decision decision = context.policy->decide(host, port);
  if (!decision.allowed()) {
    context.upstream.close(ignored);
    co_await reply_and_log(context, decision.reason, method, display, port,
                           context.policy->explain(decision, host, port),
                           rules::rule_text(decision));
    co_return Next::stop;
  }

  fault_point("http-decided");

  // 3b. LaunchDarkly, when enabled. Its answer may come after the drain closed the connection.
  const auto remote = co_await consult_remote_allowlist(context, method, host, port);
  if (!context.still_wanted(method, display, port)) {
    co_return Next::stop;
  }
  if (remote && !remote->allowed) {
    context.upstream.close(ignored);
    co_return Next::stop;
  }

  // 4. The upstream: the kept-alive one if it is for the same host:port and still idle,
  // otherwise a fresh one, resolved and checked like a tunnel's.
  const bool reuse = upstream.reusable && upstream.key == where && context.upstream.is_open() &&
                     upstream.buffer.size() == 0 && upstream_still_idle(context.upstream);
  upstream.reusable = false;  // until this exchange shows it can be
  if (!reuse) {
    // The old upstream (another host, or gone stale) is closed: it is no longer this
    // connection's destination.
    context.upstream.close(ignored);
    context.live.destination.reset();
    upstream.buffer.clear();
    DialResult dial = co_await dial_upstream(context, host, port);
    if (!context.still_wanted(method, display, port)) {
      co_return Next::stop;
    }
    if (!dial.connected) {
      co_await reply_and_log(context, dial.reason, method, display, port, dial.sentence, {},
                             dial.denied_at());
      co_return Next::stop;
    }
    upstream.key = where;
    upstream.address = to_text(dial.endpoint);
    upstream.dialled.reset();
    if (!host.is_ip()) {
      upstream.dialled = to_rules_address(dial.endpoint.address());
    }
  }
  // Registered while the upstream is open, so that a reload can judge it again; judged first by
  // the rules now in force if a reload came during the waits above.
  server::Destination destination;
  destination.host = host;
  destination.port = port;
  destination.address = upstream.dialled;
  if (auto revoked = context.register_destination(std::move(destination))) {
    context.upstream.close(ignored);
    context.live.destination.reset();
    co_await reply_and_log(context, revocation_reason(*revoked), method, display, port,
                           revoked->detail, revoked->rule);
    co_return Next::stop;
  }
  {
    log::Record record;
    record.connection_id = context.id;
    record.client = context.client_address;
    record.method = method;
    record.host = display;
    record.port = port;
    const std::string rule = rules::rule_text(decision);
    record.rule = rule;
    record.address = upstream.address;
    const std::string remote_note = remote_allowlist_note(remote);
    record.detail = remote_note;
    context.record_decision(record, rules::Reason::allowed);
    context.worker.metrics.http_requests_total.add();
  }
  EndLine end{method, display, port, "closed", {}, {}, 0, 0, started};

  // 5. The head as the origin gets it.
  const bool request_keep_alive = head_parser.keep_alive();
  BodyRequestParser request(std::move(head_parser));
  request.body_limit(boost::none);
  auto& head = request.get();
  const bool client_http11 = head.version() >= 11;
  const bool websocket = is_websocket_upgrade(head) && request.is_done();
  const bool expects_continue = beast::iequals(head[http::field::expect], "100-continue");
  const bool send_continue = expects_continue && client_http11 && !request.is_done();
  strip_hop_by_hop(head, websocket);
  if (websocket) {
    head.set(http::field::connection, "Upgrade");
  }
  if (expects_continue) {
    head.erase(http::field::expect);  // answered here (below), not by the origin
  }
  head.target(target->origin_form);
  head.version(11);
  set_host_first(head, target->authority);
  add_via(head);

  RequestWriter writer{head};
  Exchange x(context, upstream, buffer, request, writer);
  x.where = where;
  x.head_request = head.method() == http::verb::head;
  x.client_http11 = client_http11;
  x.request_keep_alive = request_keep_alive;
  x.websocket = websocket;

  auto [head_error, head_written] =
      co_await http::async_write_header(context.upstream, writer, use_tuple);
  x.bytes_up += head_written;
  if (head_error) {
    x.fail(
        rules::Reason::upstream_closed,
        where + " closed the connection before taking the request (" + head_error.message() + ").");
  } else if (send_continue) {
    auto [error, written] =
        co_await asio::async_write(context.client, asio::buffer(kContinue), use_tuple);
    x.bytes_down += written;
    if (error) {
      x.client_failed = true;
    }
  }

  // 6. Both bodies at once, under the idle watchdog if one is set.
  if (!head_error && !x.client_failed) {
    const std::chrono::seconds idle = context.settings().idle_timeout;
    if (idle.count() > 0) {
      co_await (send_request_body(x) && relay_response(x) && watch_idle(x, idle));
    } else {
      co_await (send_request_body(x) && relay_response(x));
    }
  }

  // 7. How it ended.
  if (context.live.revoked) {
    // A reload denied the destination mid-exchange and closed both sides.
    reset(context.client);
    context.upstream.close(ignored);
    context.record_revoked(method, x.bytes_up, x.bytes_down);
    co_return Next::stop;
  }
  if (x.upgraded) {
    co_await run_websocket(x, end);
    co_return Next::stop;
  }
  end.bytes_up = x.bytes_up;
  end.bytes_down = x.bytes_down;
  if (!x.response_started) {
    context.upstream.close(ignored);
    if (x.client_failed && x.client_problem.empty() && !x.timed_out) {
      // The client left: nobody to answer.
      end.outcome = "reset";
      context.client.close(ignored);
      log_end(context, end);
      co_return Next::stop;
    }
    rules::Reason reason = x.failure.value_or(rules::Reason::upstream_closed);
    std::string sentence =
        x.failure ? x.failure_sentence : where + " closed the connection without a response.";
    const std::string idle = std::to_string(context.settings().idle_timeout.count());
    if (!x.client_problem.empty()) {
      reason = rules::Reason::bad_request;
      sentence = x.client_problem;
    } else if (x.timed_out && !x.request.is_done()) {
      reason = rules::Reason::request_timeout;
      sentence = "the request body stalled for " + idle + " s.";
    } else if (x.timed_out) {
      reason = rules::Reason::response_timeout;
      sentence = where + " sent no response for " + idle + " s.";
    }
    end.outcome = "error";
    end.reason = reason;
    end.detail = sentence;
    end.bytes_down += co_await answer_failure(context, reason, sentence);
    log_end(context, end);
    co_return Next::stop;
  }
  if (!x.response_done) {
    // Broken off mid-response: a reset, never bytes of the proxy's own in a half-sent response.
    reset(context.client);
    context.upstream.close(ignored);
    end.outcome = x.timed_out ? "timeout" : "reset";
    std::string detail;
    if (x.oversized) {
      end.outcome = "error";
      end.reason = rules::Reason::bad_response;
      detail = where + " sent a chunk header or trailer section larger than " +
               std::to_string(kUpstreamBufferLimit / 1024) + " KiB; the response was cut off.";
      end.detail = detail;
    }
    log_end(context, end);
    co_return Next::stop;
  }
  log_end(context, end);

  upstream.reusable = x.upstream_keep_alive && x.body_done && upstream.buffer.size() == 0;
  if (!upstream.reusable) {
    context.upstream.close(ignored);
    context.live.destination.reset();
  }
  if (!x.client_keep_alive || !x.body_done) {
    context.upstream.close(ignored);
    co_await close_gracefully(context.client);
    co_return Next::stop;
  }
  co_return Next::read_next;
}
#pragma GCC diagnostic pop

// The requests of one client connection, in turn, while both sides keep it alive.
asio::awaitable<void> serve_requests(SessionContext& context, HeadParser& first,
                                     beast::flat_buffer& buffer) {
  Upstream upstream;
  std::optional<HeadParser> next;
  HeadParser* parser = &first;
  boost::system::error_code ignored;
  while (co_await forward_request(context, *parser, buffer, upstream) == Next::read_next) {
    // The next head, with the same limits as the first.
    next.emplace();
    next->header_limit(static_cast<std::uint32_t>(kHttpHeadLimit));
    next->body_limit(boost::none);
    const HeadRead read =
        co_await read_request_head(context.client, buffer, *next, context.settings().head_timeout);
    if (context.live.revoked) {
      // A reload denied the kept-alive destination while the connection waited for a request.
      context.upstream.close(ignored);
      context.record_revoked("-", 0, 0);
      co_return;
    }
    // The gate's token, on every request of the connection (client_session.cpp checked the
    // first); a failure has been answered with 407, logged and closed.
    // (Nested, not `&&`: GCC 12 mishandles co_await in a short-circuit operand.)
    if (read.status == HeadRead::Status::ok) {
      const bool authorized = co_await authorize_request(context, *next);
      if (!authorized) {
        context.upstream.close(ignored);
        co_return;
      }
    }
    if (read.status == HeadRead::Status::ok && next->get().method() == http::verb::connect) {
      // A tunnel after plain requests on the same connection: the CONNECT path takes over.
      context.upstream.close(ignored);
      co_await handle_connect(context, *next, buffer);
      co_return;
    }
    if (read.status == HeadRead::Status::ok) {
      parser = &*next;
      continue;
    }
    context.upstream.close(ignored);
    switch (read.status) {
      case HeadRead::Status::ok:
        break;
      case HeadRead::Status::closed:
        if (read.partial) {
          context.record_no_request(true);  // the client left in the middle of a head
        }
        context.client.close(ignored);
        break;
      case HeadRead::Status::timeout:
        if (!read.partial) {
          co_await close_gracefully(context.client);  // an idle kept-alive connection
          break;
        }
        co_await reply_to_failed_head(context, read);
        break;
      case HeadRead::Status::too_large:
      case HeadRead::Status::malformed:
        co_await reply_to_failed_head(context, read);
        break;
    }
    co_return;
  }
}

}  // namespace

asio::awaitable<void> handle_http(SessionContext& context, HeadParser& parser,
                                  beast::flat_buffer& buffer) {
  // Beast reports through error codes on every path used here; anything thrown (an allocation
  // failure, say) is caught and logged against the connection by serve_client().
  co_await serve_requests(context, parser, buffer);
  boost::system::error_code ignored;
  context.client.close(ignored);
  context.upstream.close(ignored);
}

}  // namespace sandgate::session
