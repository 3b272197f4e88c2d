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
//
// This file is the HTTP/1.1 front of the request pipeline (exchange/pipeline/): the target read,
// Http1Front (the wire the pipeline's stages ask for: the head, the body read ahead, `100
// Continue`, the gate's answers) and the connection's loop over its requests; the stages
// themselves (admission, MCP, secrets, budgets) are the pipeline's. The two directions of the
// exchange are http_request_side.cpp and http_response_side.cpp, its state machine
// http_exchange_state.hpp. A WebSocket upgrade is handed to the tunnel relay
// (tunnel_session.hpp) once its 101 has been passed on; on an inspected connection, to the
// frame relay (inspected_websocket.hpp).
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <optional>
#include <sstream>
#include <utility>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/admission.hpp"
#include "proxy/session/ask_wait.hpp"
#include "proxy/session/exchange/pipeline/end_line.hpp"
#include "proxy/session/exchange/pipeline/request_pipeline.hpp"
#include "proxy/session/exchange/request_admission.hpp"
#include "proxy/session/exchange/websocket_handshake.hpp"
#include "proxy/session/fronts/client_session.hpp"
#include "proxy/session/fronts/http_exchange.hpp"
#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/fronts/http_over_h2.hpp"
#include "proxy/session/fronts/inspected_websocket.hpp"
#include "proxy/session/graceful_close.hpp"
#include "proxy/session/parent_dial.hpp"
#include "proxy/session/tunnel_session.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "proxy/session/upstream_source.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "proxy/session/wire/http_target.hpp"
#include "rules/host.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
using clock = std::chrono::steady_clock;

using exchange::AdmittedRequest;
using exchange::EndLine;

// A kept-alive upstream connection waiting for the next request must have nothing to say: if
// the origin closed it, or sent bytes nobody asked for, it is not reused.
bool upstream_still_idle(tcp::socket& socket) {
  char byte;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// True when every Authorization field of the request (none at all included) uses a scheme that
// authenticates the request itself: Basic, Bearer, Digest, AWS SigV4. Any other (NTLM,
// Negotiate, Kerberos, CredSSP, Nego2, or one not known here) may authenticate the connection,
// which the origin then serves as that client. An allow-list: a scheme not named here keeps the
// connection to its client.
bool authenticates_each_request(const http::request_header<>& head) {
  for (const auto& field : head) {
    if (field.name() != http::field::authorization) {
      continue;
    }
    const std::string_view value = field.value();
    const std::string_view scheme = value.substr(0, value.find_first_of(" \t"));
    bool known = false;
    for (const std::string_view per_request : {"Basic", "Bearer", "Digest", "AWS4-HMAC-SHA256"}) {
      known = known || beast::iequals(scheme, per_request);
    }
    if (!known) {
      return false;
    }
  }
  return true;
}

// Whether an origin connection may still be handed to another client after this exchange
// (origin_pool.hpp), as far as the exchange shows. Not after a request with a body: an origin
// that reads less of it than its framing says (a GET whose Content-Length it ignores) would take
// the rest as the next request, which would then be another client's. Not after a HEAD, an
// interim-only, 204 or 304 response, whose body length an origin may get wrong and send late.
// Not after a connection-bound authentication (authenticates_each_request).
bool shareable_after(const Exchange& x) {
  if (x.request_had_body || !x.per_request_auth || x.head_request || !x.response) {
    return false;
  }
  const unsigned status = x.response->get().result_int();
  return status >= 200 && status != 204 && status != 304;
}

// Closes a socket so that the peer sees a reset rather than a clean end of stream.
void reset(tcp::socket& socket) {
  boost::system::error_code ignored;
  if (socket.is_open()) {
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
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
      co_await asio::async_write(context.client_stream, asio::buffer(reply), use_tuple);
  (void)error;
  co_await close_gracefully(context.client);
  co_return written;
}

// After a 101: send the head on, then carry bytes both ways until both sides are done.
asio::awaitable<void> run_websocket(Exchange& x, EndLine& end) {
  SessionContext& context = x.context;
  auto& response = x.response->get();
  strip_hop_by_hop(response, true);
  response.set(http::field::connection, "Upgrade");
  add_via(response);
  response.version(11);
  // The 101 head and the bytes behind either head move before the relay counts anything: taken
  // from the budgets first, whole (they are at most the two buffers' limits).
  std::optional<budget::Stop> spent;
  if (x.stages.budget.active()) {
    std::ostringstream serialized;
    serialized << response.base();
    spent = x.stages.budget.take_whole(rules::BudgetKind::down,
                                       serialized.str().size() + x.upstream.buffer.size());
    if (!spent) {
      spent = x.stages.budget.take_whole(rules::BudgetKind::up, x.client_buffer.size());
    }
  }
  bool ok = false;
  if (!spent) {
    // (Not in one expression with the test: GCC 12 mishandles co_await in a short-circuit
    // operand.)
    ok = co_await write_response_head(x, response);
  }

  // Bytes that arrived behind either head belong to the tunnel.
  if (ok && x.upstream.buffer.size() > 0) {
    auto [error, written] =
        co_await asio::async_write(context.client_stream, x.upstream.buffer.data(), use_tuple);
    x.bytes_down += written;
    ok = !error;
  }
  if (ok && x.client_buffer.size() > 0) {
    auto [error, written] =
        co_await asio::async_write(context.upstream_stream, x.client_buffer.data(), use_tuple);
    x.bytes_up += written;
    ok = !error;
  }
  x.upstream.buffer = beast::flat_buffer();
  x.client_buffer.consume(x.client_buffer.size());

  if (ok && !context.live.revoked && context.live.destination) {
    // From here the tunnel relay carries the bytes, as for a CONNECT tunnel whose first bytes
    // need no watching; the session coroutines finish.
    Destination destination = std::move(*context.live.destination);
    context.live.destination.reset();
    TunnelSession::start_websocket(context, std::string(end.method), std::string(end.host),
                                   std::move(destination), x.bytes_up, x.bytes_down, end.started);
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
  if (spent) {
    end.outcome = relay::to_string(relay::Outcome::budget_exhausted);
    end.reason = rules::Reason::budget_exhausted;
    end.rule = spent->rule;
    end.detail = spent->sentence;
  }
  end.bytes_up = x.bytes_up;
  end.bytes_down = x.bytes_down;
  exchange::write_end_line(context, end);
}

// An inspected WebSocket: its frames are relayed here, inside the connection's two TLS streams,
// by a unit of its own (inspected_websocket.hpp); then the WebSocket's end line, and the
// connection ends.
asio::awaitable<void> run_inspected_websocket(Exchange& x, EndLine& end) {
  SessionContext& context = x.context;
  const InspectedWebSocketEnd relayed = co_await relay_inspected_websocket(x, end);
  boost::system::error_code ignored;
  context.upstream.close(ignored);
  x.upstream.carried_up += x.bytes_up - end.bytes_up;
  x.upstream.carried_down += x.bytes_down - end.bytes_down;
  if (context.live.revoked) {
    context.record_revoked(end.method, x.bytes_up, x.bytes_down);
    co_return;
  }
  end.outcome = relayed.outcome;
  end.reason = relayed.reason;
  end.detail = relayed.detail;
  end.rule = relayed.rule;
  end.bytes_up = x.bytes_up;
  end.bytes_down = x.bytes_down;
  exchange::write_end_line(context, end);
}

// Refuses the request (the upstream closed, the reply written, the line logged); the connection
// then ends.
asio::awaitable<void> refuse_request(SessionContext& context, std::string_view method,
                                     std::string_view host, std::uint16_t port,
                                     const Refusal& refusal) {
  boost::system::error_code ignored;
  context.upstream.close(ignored);
  context.live.destination.reset();
  record_refusal(context, method, host, port, refusal);
  const std::string reply = build_reply(refusal.reason, refusal.sentence, refusal.at);
  co_await asio::async_write(context.client_stream, asio::buffer(reply), use_tuple);
  co_await close_gracefully(context.client);
}

// An inspected origin's connection just dialled, or idle and verified already: secured (a new
// one offering h2, but for a WebSocket upgrade, which needs the origin's HTTP/1.1). An origin that
// chooses h2 takes the request as a stream of that connection, shared from now on.
asio::awaitable<void> secure_inspected(SessionContext& context, DecisionState& decided,
                                       Admission& admission, Upstream& upstream, bool dialled,
                                       bool websocket, const std::string& where) {
  InspectedOrigin& origin = *upstream.inspected;
  if (dialled && !websocket) {
    origin.offer_h2();
  }
  if (auto refused = co_await origin.secure_upstream(decided)) {
    if (websocket) {
      if (auto sentence = websocket_needs_http1(context, upstream, where, refused->sentence)) {
        refused->sentence = std::move(*sentence);
      }
    }
    admission.status = Admission::Status::refused;
    admission.refusal = std::move(*refused);
    co_return;
  }
  if (auto h2 = adopt_secured_h2(context, origin, upstream, admission)) {
    go_over_h2(context, upstream, std::move(h2), where);
  }
}

// Stage 4 for an HTTP/1.1 request (get_upstream, upstream_source.hpp): for an inspected origin
// that chose h2, a stream of the connection's HTTP/2 connection while it has room
// (http_over_h2.hpp); else the connection's kept-alive upstream if it is for the same host:port
// and still idle; else, for an inspected connection, a shared HTTP/2 one or an idle verified one
// the worker keeps for its origin; else a fresh one, resolved and checked like a tunnel's (through
// a parent proxy, for plain HTTP the parent itself, which then gets the request in absolute form:
// many corporate proxies refuse CONNECT to port 80). A new upstream of plain HTTP counts against
// the connection budgets (an inspected one's tunnel was counted when it was opened); an inspected
// one is secured before the request goes. `websocket`: the request asks for an upgrade.
asio::awaitable<void> reach_origin(SessionContext& context, DecisionState& decided,
                                   Admission& admission, const AdmittedRequest& request,
                                   Upstream& upstream, bool websocket) {
  const InspectedOrigin* inspected = upstream.inspected;
  end_h2_stream(context, upstream);  // the last exchange's, if it went over h2
  if (inspected != nullptr && inspected->facts.by_address()) {
    if (auto refused = exchange::refuse_address(decided, inspected->facts)) {
      admission.status = Admission::Status::refused;
      admission.refusal = std::move(*refused);
      co_return;
    }
  }
  if (inspected != nullptr && !websocket) {
    if (auto own = own_h2_with_room(decided, admission, *inspected, upstream)) {
      go_over_h2(context, upstream, std::move(own), request.where);
      co_return;
    }
    if (!admission.admitted()) {
      co_return;  // its address is denied now
    }
  }
  UpstreamWish wish;
  wish.method = request.method;
  // An inspected origin is reached like a tunnel's (through a parent, a CONNECT to it), where its
  // tunnel was (an address the client chose stays that address); a plain one takes the requests
  // itself.
  wish.host = inspected != nullptr ? inspected->facts.requested : request.target.host;
  wish.port = request.target.port;
  wish.use = inspected != nullptr ? UpstreamUse::tunnel : UpstreamUse::request;
  wish.keep_own = upstream.reusable && upstream.key == request.where &&
                  context.upstream.is_open() && upstream.buffer.size() == 0 &&
                  (upstream.fresh || upstream_still_idle(context.upstream));
  wish.own_dialled = upstream.dialled;
  wish.may_take_idle = inspected != nullptr && !inspected->facts.by_address();
  wish.may_borrow_h2 = wish.may_take_idle && !websocket;
  wish.alpn = ClientAlpn::http1;  // the client speaks HTTP/1.1 already
  wish.tls_first = inspected != nullptr;
  wish.count_connection = inspected == nullptr;
  upstream.reusable = false;  // until this exchange shows it can be
  upstream.fresh = false;
  if (!wish.keep_own) {
    // The old upstream (another host, or gone stale) is closed: it is no longer this
    // connection's destination.
    boost::system::error_code ignored;
    context.upstream.close(ignored);
    context.live.destination.reset();
    upstream.buffer.clear();
  }
  beast::flat_buffer from_parent;  // only a tunnel through a parent has bytes behind its head
  const UpstreamFrom from = co_await get_upstream(context, decided, admission, wish, from_parent);
  if (from == UpstreamFrom::own || !admission.admitted()) {
    co_return;
  }
  if (from == UpstreamFrom::shared_h2) {
    upstream.h2 = context.shared_h2_origin;
    go_over_h2(context, upstream, std::move(context.shared_h2_origin), request.where);
    co_return;
  }
  if (inspected != nullptr) {
    co_await secure_inspected(context, decided, admission, upstream, from == UpstreamFrom::dialled,
                              websocket, request.where);
    if (!admission.admitted() || upstream.over_h2 != nullptr) {
      co_return;
    }
  }
  upstream.key = request.where;
  upstream.address = to_text(admission.endpoint);
  upstream.dialled = admission.dialled;
}

// The target of a request inside an inspected connection: origin form, with a Host naming the
// connection's host. The error is the client's sentence.
Expected<HttpTarget, std::string> inspected_target(const InspectedOrigin& origin,
                                                   const http::request_header<>& head) {
  const std::string_view target = head.target();
  const bool options_star = target == "*" && head.method() == http::verb::options;
  if (!options_star && !target.starts_with('/')) {
    return Unexpected{
        std::string("an inspected connection takes requests in origin form ('/path'), not '" +
                    std::string(target.substr(0, 100)) + "'.")};
  }
  const auto host_field = head.find(http::field::host);
  if (host_field == head.end()) {
    return Unexpected{std::string("the request has no Host field.")};
  }
  if (!origin.named_by(host_field->value())) {
    return Unexpected{"the request's Host '" + std::string(host_field->value().substr(0, 100)) +
                      "' is not the host this connection was opened to (" + origin.authority +
                      ")."};
  }
  HttpTarget result;
  result.host = origin.host;
  result.port = origin.port;
  result.authority = origin.authority;
  result.origin_form = std::string(target);
  return result;
}

// How an HTTP/1.1 request reaches its origin: the connection's kept-alive upstream, or a dial.
class UpstreamReach final : public exchange::OriginReach {
 public:
  UpstreamReach(Upstream& upstream, bool websocket) : upstream_(upstream), websocket_(websocket) {}
  asio::awaitable<void> reach(SessionContext& context, DecisionState& decided, Admission& admission,
                              const AdmittedRequest& request) override {
    co_await reach_origin(context, decided, admission, request, upstream_, websocket_);
  }
  std::optional<rules::IpAddress> dialled() const override { return upstream_.dialled; }
  std::string address() const override { return upstream_.address; }
  const ConnectionFacts* inspected() const override {
    return upstream_.inspected != nullptr ? &upstream_.inspected->facts : nullptr;
  }

 private:
  Upstream& upstream_;
  bool websocket_;  // the request asks for a WebSocket upgrade
};

// The request's target, parsed strictly (the host checked is the host dialled and named
// upstream): the absolute-form URL of plain HTTP, or the connection's own host inside an
// inspected one. Nothing when it cannot be read (answered, logged, closed).
asio::awaitable<std::optional<HttpTarget>> request_target(SessionContext& context,
                                                          const http::request_header<>& head,
                                                          const Upstream& upstream) {
  const std::string method(head.method_string());
  const std::string raw_target(head.target());
  if (upstream.inspected) {
    auto parsed = inspected_target(*upstream.inspected, head);
    if (!parsed) {
      Refusal refusal(rules::Reason::bad_request, parsed.error());
      refusal.path = std::string(logged_path(raw_target));
      // Named, not temporaries: GCC 12 can end a temporary of a co_await's operands early.
      const std::string display = upstream.inspected->host.display();
      co_await refuse_request(context, method, display, upstream.inspected->port, refusal);
      co_return std::nullopt;
    }
    co_return std::move(*parsed);
  }
  auto parsed = parse_http_target(raw_target, head.method() == http::verb::options);
  if (!parsed) {
    co_await refuse_request(
        context, method, raw_target, 0,
        {target_error_reason(parsed.error()), target_error_text(parsed.error(), raw_target)});
    co_return std::nullopt;
  }
  co_return std::move(*parsed);
}

// How an exchange ended, in one place (ExchangeState::ending): its end line, and what becomes of
// the two connections.
asio::awaitable<Next> finish_exchange(Exchange& x, EndLine& end) {
  SessionContext& context = x.context;
  boost::system::error_code ignored;
  if (context.live.revoked) {
    // A reload denied the destination mid-exchange and closed both sides.
    reset(context.client);
    context.upstream.close(ignored);
    context.record_revoked(end.method, x.bytes_up, x.bytes_down);
    co_return Next::stop;
  }
  const ExchangeState::Ending ending = x.state.ending(
      x.where, x.idle_limit.count(), x.request.is_done(), kUpstreamBufferLimit / 1024);
  end.bytes_up = x.bytes_up;
  end.bytes_down = x.bytes_down;
  x.upstream.carried_up += x.bytes_up;
  x.upstream.carried_down += x.bytes_down;
  end.outcome = ending.outcome;
  end.reason = ending.reason;
  end.detail = ending.sentence;
  end.rule = ending.rule;
  switch (ending.kind) {
    case ExchangeState::Ending::Kind::websocket:
      if (x.upstream.inspected != nullptr) {
        co_await run_inspected_websocket(x, end);
      } else {
        co_await run_websocket(x, end);
      }
      co_return Next::stop;
    case ExchangeState::Ending::Kind::silent:
      // The client left: nobody to answer.
      context.upstream.close(ignored);
      context.client.close(ignored);
      exchange::write_end_line(context, end);
      co_return Next::stop;
    case ExchangeState::Ending::Kind::answer:
      context.upstream.close(ignored);
      end.bytes_down += co_await answer_failure(context, *ending.reason, ending.sentence);
      exchange::write_end_line(context, end);
      co_return Next::stop;
    case ExchangeState::Ending::Kind::broken:
      // Broken off mid-response: a reset, never bytes of the proxy's own in a half-sent one.
      reset(context.client);
      context.upstream.close(ignored);
      exchange::write_end_line(context, end);
      co_return Next::stop;
    case ExchangeState::Ending::Kind::complete:
      break;
  }
  exchange::write_end_line(context, end);

  x.upstream.reusable = x.state.reusable_upstream() && x.upstream.buffer.size() == 0;
  x.upstream.shareable = x.upstream.shareable && shareable_after(x);
  if (!x.upstream.reusable) {
    context.upstream.close(ignored);
    context.live.destination.reset();
  }
  if (!x.state.keeps_client()) {
    context.upstream.close(ignored);
    co_await close_gracefully(context.client);
    co_return Next::stop;
  }
  co_return Next::read_next;
}

// What the client's head says of the exchange, read before it is rewritten for the origin.
struct ClientAsks {
  bool keep_alive = true;
  bool http11 = true;
  // A WebSocket upgrade (without a body) is passed on; on an inspected connection the gate then
  // reads its frames (inspected_websocket.hpp), so it offers the origin no extension.
  bool websocket = false;
  bool expects_continue = false;  // Expect: 100-continue, answered here (answer_continue)
};

ClientAsks read_client_asks(const BodyRequestParser& request, bool keep_alive) {
  const auto& head = request.get();
  ClientAsks asks;
  asks.keep_alive = keep_alive;
  asks.http11 = head.version() >= 11;
  asks.websocket = is_websocket_upgrade(head) && request.is_done();
  asks.expects_continue = beast::iequals(head[http::field::expect], "100-continue");
  return asks;
}

// The head as the origin gets it: origin-form target, Host from the URL first, hop-by-hop
// fields out, Via in; through a parent proxy, the parent's form.
void rewrite_for_origin(const DecisionState& decided, http::request_header<>& head,
                        const AdmittedRequest& admitted, const Upstream& upstream,
                        const ClientAsks& asks) {
  strip_hop_by_hop(head, asks.websocket);
  if (asks.websocket) {
    head.set(http::field::connection, "Upgrade");
    if (upstream.inspected != nullptr) {
      exchange::offer_no_extensions(head);
    }
  }
  if (asks.expects_continue) {
    head.erase(http::field::expect);  // answered here, not by the origin
  }
  head.target(admitted.target.origin_form);
  head.version(11);
  set_host_first(head, admitted.target.authority);
  add_via(head);
  if (!upstream.inspected) {
    use_parent_form(head, decided.settings(), admitted.target);
  }
}

// An HTTP/1.1 request as the request pipeline sees it (exchange/pipeline/exchange_front.hpp):
// its head as read, then (once admitted) in the body parser the exchange reads the rest with,
// and the exchange the two directions share.
class Http1Front final : public exchange::ExchangeFront {
 public:
  Http1Front(SessionContext& context, DecisionState& decided, HeadParser& head_parser,
             beast::flat_buffer& buffer, Upstream& upstream)
      : context_(context),
        decided_(decided),
        head_parser_(head_parser),
        buffer_(buffer),
        upstream_(upstream),
        started_(clock::now()) {}

  http::request_header<>& head() override {
    if (request_) {
      return request_->get();
    }
    return head_parser_.get();
  }
  asio::awaitable<void> refuse_admission(const AdmittedRequest& names,
                                         const Refusal& refusal) override {
    co_await refuse_request(context_, names.method, names.display, names.target.port, refusal);
  }
  void admission_over() override {}
  exchange::ExchangeStages& admitted(const AdmittedRequest& request) override;

  bool has_body() const override { return x_->request_had_body; }
  void rewrite_for_origin() override {
    session::rewrite_for_origin(decided_, head(), admitted_, upstream_, asks_);
  }
  void head_ready() override { x_->per_request_auth = authenticates_each_request(head()); }
  std::optional<mcp::Transport> mcp_usual() const override { return upstream_.mcp_usual; }
  exchange::HeadCost head_cost() const override {
    std::ostringstream serialized;
    serialized << request_->get().base();
    exchange::HeadCost cost;
    cost.head_bytes = serialized.str().size();
    if (!request_->chunked()) {
      cost.body_length = request_->content_length().value_or(0);
    }
    return cost;
  }

  asio::awaitable<bool> answer_continue() override {
    return session::answer_continue(*x_, send_continue_);
  }
  asio::awaitable<bool> read_body_ahead(std::size_t limit, exchange::BodyAheadFor why) override {
    return session::read_body_ahead(*x_, limit, why == exchange::BodyAheadFor::judging);
  }
  const std::string& body_ahead() const override { return x_->body_read_ahead; }
  void send_instead(std::string body) override {
    auto& head = request_->get();
    head.chunked(false);
    head.content_length(body.size());
    x_->body_read_ahead = std::move(body);
  }

  asio::awaitable<void> answer(const mcp::GateAnswer& answer) override {
    return write_gate_answer(*x_, answer);
  }
  void refuse(const Refusal& refusal) override {
    x_->state.refused(refusal.reason, refusal.sentence);
  }
  void budget_spent(budget::Stop stop) override { session::budget_spent(*x_, std::move(stop)); }
  void client_left() override { x_->state.client_read_failed({}); }
  // The exchange's own watch (watch_client_leaving, the state) sees a client that left.
  bool client_gone() override { return false; }

  Exchange& exchange() { return *x_; }
  RequestWriter& writer() { return *writer_; }
  bool& send_continue() { return send_continue_; }
  EndLine& end() { return end_; }

 private:
  SessionContext& context_;
  DecisionState& decided_;
  HeadParser& head_parser_;
  beast::flat_buffer& buffer_;
  Upstream& upstream_;
  clock::time_point started_;
  AdmittedRequest admitted_;
  ClientAsks asks_;
  bool send_continue_ = false;
  std::optional<BodyRequestParser> request_;
  std::optional<RequestWriter> writer_;
  std::optional<Exchange> x_;
  EndLine end_;
};

// The request is admitted: the body parser takes the head over, and the exchange's fixed
// inputs are set from what the client's head asks.
exchange::ExchangeStages& Http1Front::admitted(const AdmittedRequest& request) {
  admitted_ = request;
  end_ = EndLine{admitted_.method,
                 admitted_.display,
                 admitted_.target.port,
                 admitted_.path,
                 "closed",
                 {},
                 {},
                 0,
                 0,
                 started_,
                 {}};
  const bool keep_alive = head_parser_.keep_alive();
  request_.emplace(std::move(head_parser_));
  request_->body_limit(boost::none);
  asks_ = read_client_asks(*request_, keep_alive);
  send_continue_ = asks_.expects_continue && asks_.http11 && !request_->is_done();
  writer_.emplace(request_->get());
  x_.emplace(context_, upstream_, buffer_, *request_, *writer_);
  Exchange& x = *x_;
  x.where = admitted_.where;
  x.host = admitted_.target.host;
  x.port = admitted_.target.port;
  x.method = admitted_.method;
  x.head_request = request_->get().method() == http::verb::head;
  x.request_had_body = request_->chunked() || request_->content_length().value_or(0) > 0;
  x.client_http11 = asks_.http11;
  x.request_keep_alive = asks_.keep_alive;
  x.websocket = asks_.websocket;
  if (decided_.settings().idle_timeout.count() > 0) {
    x.idle_limit = decided_.settings().idle_timeout;
  }
  x.log_websocket_messages = decided_.settings().log_websocket_messages;
  return x.stages;
}

// The head to the origin, then both bodies at once, under the idle watchdog.
asio::awaitable<void> send_and_relay(Exchange& x, RequestWriter& writer, bool& send_continue) {
  auto [head_error, head_written] =
      co_await http::async_write_header(x.context.upstream_stream, writer, use_tuple);
  x.bytes_up += head_written;
  if (head_error) {
    origin_failed(x, head_error, rules::Reason::upstream_closed,
                  x.where + " closed the connection before taking the request (" +
                      head_error.message() + ").");
    co_return;
  }
  co_await answer_continue(x, send_continue);
  if (!x.state.client_failed()) {
    co_await (send_request_body(x) && relay_response(x) && watch_idle(x, x.idle_limit));
  }
}

// One request: its target read, then the request pipeline (exchange/pipeline/): admission and
// the stages that may hold it back (MCP, secrets, budgets); then both bodies at once, and its
// end. Returns whether the connection goes on to the next request; when not, the client socket
// has been closed or handed to a reply.
//
// GCC 12 reports a false -Wmismatched-new-delete in this coroutine's ramp: it pairs the free()
// inside Asio's frame deallocator with the frame's class-specific operator new, which allocates
// with malloc() too. Silenced for this function only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
asio::awaitable<Next> serve_one_request(SessionContext& context, HeadParser& head_parser,
                                        beast::flat_buffer& buffer, Upstream& upstream) {
  // The rules in force now decide this request, whatever decided the ones before it.
  DecisionState decided = context.arriving_request();
  Http1Front front(context, decided, head_parser, buffer, upstream);
  std::optional<HttpTarget> target = co_await request_target(context, head_parser.get(), upstream);
  if (!target) {
    co_return Next::stop;
  }
  UpstreamReach reach(upstream, is_websocket_upgrade(head_parser.get()));
  const exchange::PipelineEnd ran =
      co_await exchange::run_request_pipeline(context, decided, front, std::move(*target), reach);
  if (ran == exchange::PipelineEnd::not_admitted) {
    co_return Next::stop;
  }
  if (ran == exchange::PipelineEnd::send) {
    co_await send_and_relay(front.exchange(), front.writer(), front.send_continue());
  }
  co_return co_await finish_exchange(front.exchange(), front.end());
}
#pragma GCC diagnostic pop

// A CONNECT after plain requests on the same connection: the CONNECT path takes over. Inside an
// inspected connection it is refused.
asio::awaitable<void> connect_after_requests(SessionContext& context, HeadParser& parser,
                                             beast::flat_buffer& buffer, Upstream& upstream) {
  boost::system::error_code ignored;
  context.upstream.close(ignored);
  if (upstream.inspected != nullptr) {
    const std::string display = upstream.inspected->host.display();
    const Refusal refusal(rules::Reason::bad_request,
                          "CONNECT inside an inspected connection is refused.");
    co_await refuse_request(context, "CONNECT", display, upstream.inspected->port, refusal);
    co_return;
  }
  co_await handle_connect(context, parser, buffer);
}

// The client is done: its connection closed, idled past the head timeout, or sent a head that
// cannot be read (answered). An inspected connection's origin connection may be kept idle for
// another client (serve_inspected_requests decides); any other is closed now.
asio::awaitable<void> end_requests(SessionContext& context, const HeadRead& read, bool inspected) {
  boost::system::error_code ignored;
  if (!inspected || read.partial) {
    context.upstream.close(ignored);
  }
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
}

// The requests of one client connection, in turn, while both sides keep it alive. `first` is
// the head already read (a proxy client's first request), or null to read one first (an
// inspected connection).
asio::awaitable<void> serve_requests(SessionContext& context, HeadParser* first,
                                     beast::flat_buffer& buffer, Upstream& upstream) {
  std::optional<HeadParser> next;
  HeadParser* parser = first;
  boost::system::error_code ignored;
  const bool inspected = upstream.inspected != nullptr;
  for (;;) {
    // (Not in the loop's condition: GCC 12 mishandles co_await in a short-circuit operand.)
    if (parser != nullptr) {
      const Next next_step = co_await serve_one_request(context, *parser, buffer, upstream);
      if (next_step != Next::read_next) {
        break;
      }
    }
    // The next head, with the same limits as the first, waited for with the head timeout in
    // force now (a reload since the last request may have changed it).
    context.take_current_settings();
    next.emplace();
    next->header_limit(static_cast<std::uint32_t>(kHttpHeadLimit));
    next->body_limit(boost::none);
    const HeadRead read = co_await read_request_head(context.client_stream, buffer, *next,
                                                     context.settings().head_timeout);
    if (context.live.revoked) {
      // A reload denied the kept-alive destination while the connection waited for a request.
      context.upstream.close(ignored);
      context.record_revoked("-", 0, 0);
      co_return;
    }
    if (read.status != HeadRead::Status::ok) {
      co_await end_requests(context, read, inspected);
      co_return;
    }
    // The gate's token, on every request of the connection (client_session.cpp checked the
    // first); a failure has been answered with 407, logged and closed. The settings are taken
    // again now that the head is here: a connection idles between requests, and a reload in
    // that pause (a new token) must apply to the request that follows it. Inside an inspected
    // connection the tunnel's request carried the token; what follows is the tunnel's.
    if (!inspected) {
      context.take_current_settings();
      const bool authorized = co_await authorize_request(context, *next);
      if (!authorized) {
        context.upstream.close(ignored);
        co_return;
      }
    }
    if (next->get().method() == http::verb::connect) {
      co_await connect_after_requests(context, *next, buffer, upstream);
      co_return;
    }
    parser = &*next;
  }
}

}  // namespace

asio::awaitable<void> handle_http(SessionContext& context, HeadParser& parser,
                                  beast::flat_buffer& buffer) {
  // Beast reports through error codes on every path used here; anything thrown (an allocation
  // failure, say) is caught and logged against the connection by serve_client().
  Upstream upstream;
  co_await serve_requests(context, &parser, buffer, upstream);
  boost::system::error_code ignored;
  context.client.close(ignored);
  context.upstream.close(ignored);
}

InspectedOrigin::InspectedOrigin(ConnectionFacts f)
    : facts(std::move(f)),
      host(facts.served_host()),
      port(facts.port),
      authority(port == 443 ? host.display() : host.display() + ":" + std::to_string(port)) {}

bool InspectedOrigin::named_by(std::string_view host_field) const {
  const std::string name = host.display();
  if (host_field.size() > 2 && port == 443 && host_field.ends_with(":443")) {
    host_field.remove_suffix(4);
  }
  if (host_field.ends_with('.')) {
    host_field.remove_suffix(1);  // `example.com.` names example.com
  }
  return beast::iequals(host_field, port == 443 ? name : authority);
}

asio::awaitable<InspectedRequestsEnd> serve_inspected_requests(SessionContext& context,
                                                               InspectedOrigin& origin) {
  // A tunnel to an IP address is inspected under the name its ClientHello gave: its origin
  // connection leads to the address the client chose, not to where the name resolves, and is
  // never handed to a client that asked for the name.
  const bool to_an_address = origin.facts.by_address();
  Upstream upstream;
  upstream.inspected = &origin;
  // The connection the tunnel dialled (or took idle from the pool) is the first upstream,
  // already secured.
  upstream.key = origin.host.display() + ":" + std::to_string(origin.port);
  upstream.reusable = true;
  upstream.fresh = !origin.taken_idle;
  upstream.dialled = origin.facts.dialled;
  boost::system::error_code ignored;
  upstream.address = to_text(context.upstream.remote_endpoint(ignored));
  adopt_tunnels_h2(context, origin, upstream);
  beast::flat_buffer buffer(kClientBufferLimit);
  co_await serve_requests(context, nullptr, buffer, upstream);
  end_h2_stream(context, upstream);
  InspectedRequestsEnd end;
  end.bytes_up = upstream.carried_up;
  end.bytes_down = upstream.carried_down;
  end.origin_idle = upstream.reusable && upstream.shareable && !to_an_address &&
                    upstream.buffer.size() == 0 && context.upstream.is_open() &&
                    !context.live.revoked;
  end.origin_address = upstream.dialled;
  if (!end.origin_idle) {
    context.upstream.close(ignored);
  }
  co_return end;
}

}  // namespace sandgate::session
