// An inspected TLS connection: both TLS sides, then the plain-HTTP request loop over them
// (inspected_connection.hpp).
#include "proxy/session/fronts/inspected_connection.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <optional>
#include <string>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/inspect/inspection.hpp"
#include "proxy/session/admission.hpp"
#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/fronts/inspected_h2.hpp"
#include "proxy/session/graceful_close.hpp"
#include "proxy/session/origin_pool.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/policy.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

// The client's socket, read through the bytes the gate already read from it (the ClientHello
// it checked for its server name) before the socket itself: what the client-facing TLS stream
// sits on.
class PrefixedSocket {
 public:
  using executor_type = tcp::socket::executor_type;
  using lowest_layer_type = tcp::socket::lowest_layer_type;

  explicit PrefixedSocket(tcp::socket& socket) : socket_(socket) {}
  lowest_layer_type& lowest_layer() { return socket_.lowest_layer(); }
  const lowest_layer_type& lowest_layer() const { return socket_.lowest_layer(); }
  executor_type get_executor() { return socket_.get_executor(); }
  beast::flat_buffer& prefix() { return prefix_; }

  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    return asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBufferSequence& into) {
          if (prefix_.size() == 0) {
            socket_.async_read_some(into, std::move(handler));
            return;
          }
          const std::size_t n = asio::buffer_copy(into, prefix_.data());
          prefix_.consume(n);
          if (prefix_.size() == 0) {
            prefix_ = beast::flat_buffer();  // done with: its memory goes
          }
          // Never inline: a handler may start the next read from inside itself.
          asio::post(socket_.get_executor(),
                     beast::bind_front_handler(std::move(handler), boost::system::error_code{}, n));
        },
        token, buffers);
  }
  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    return socket_.async_write_some(buffers, std::forward<Token>(token));
  }

 private:
  tcp::socket& socket_;
  beast::flat_buffer prefix_;
};

using ClientTls = asio::ssl::stream<PrefixedSocket>;

class InspectedTls final : public InspectedOrigin {
 public:
  InspectedTls(SessionContext& c, inspect::Inspection& i, const ConnectionFacts& facts)
      : InspectedOrigin(facts),
        context_(c),
        inspection_(i),
        client_tls_(c.client, i.client_facing()) {}
  // The exchange's streams point into this object: back to the sockets before it goes.
  ~InspectedTls() override {
    context_.client_stream.detach();
    context_.upstream_stream.detach();
  }
  InspectedTls(const InspectedTls&) = delete;
  InspectedTls& operator=(const InspectedTls&) = delete;

  asio::awaitable<std::optional<Refusal>> secure_upstream(const DecisionState& decided) override;
  void offer_h2() override { offer_h2_ = true; }
  std::unique_ptr<SecuredOrigin> release_origin(
      const std::optional<rules::IpAddress>& dialled) override;
  // Both sides chose h2 by ALPN (after secure_client).
  bool speaks_h2() const { return origin_h2_ && client_h2_; }
  bool origin_chose_h2() const { return origin_h2_; }
  bool origin_bytes_held() override { return origin_tls_ && !nothing_unread(*origin_tls_); }
  // Hands the origin connection, idle and reusable, to the worker's pool for another client.
  void keep_origin(const std::optional<rules::IpAddress>& dialled);
  // The client's handshake with the host's leaf; nothing when it succeeded, otherwise the
  // reason and sentence for the connection's end line.
  asio::awaitable<std::optional<Refusal>> secure_client(beast::flat_buffer& hello);
  // Ends the client's TLS with a close_notify, within a bound (best effort: a client that does
  // not read it is not waited for).
  asio::awaitable<void> close_client();

 private:
  SessionContext& context_;
  inspect::Inspection& inspection_;
  ClientTls client_tls_;
  std::optional<OriginTls> origin_tls_;
  // The pool's epoch when the origin connection was secured, 0 when it was secured under rules
  // or settings the worker no longer serves with (never kept then).
  std::uint64_t epoch_ = 0;
  // Why the origin's certificate failed verification (the first failure of its chain).
  int verify_error_ = X509_V_OK;
  std::string verify_subject_;
  bool offer_h2_ = false;
  // What the origin connection's handshake settled by ALPN (kept with it in the pool).
  bool offered_h2_ = false;
  bool origin_h2_ = false;
  bool client_h2_ = false;
};

// Runs `operation` (an awaitable of a tuple whose first element is an error code) against the
// head timeout; a timeout is reported as timed_out.
template <typename Operation>
asio::awaitable<boost::system::error_code> within(SessionContext& context, Operation operation) {
  asio::steady_timer timer(context.client.get_executor());
  timer.expires_after(context.settings().head_timeout);
  auto outcome = co_await (std::move(operation) || timer.async_wait(use_tuple));
  if (outcome.index() == 1) {
    co_return asio::error::timed_out;
  }
  co_return std::get<0>(std::get<0>(outcome));
}

std::string where(const InspectedOrigin& origin) {
  return origin.host.display() + ":" + std::to_string(origin.port);
}

asio::awaitable<std::optional<Refusal>> InspectedTls::secure_upstream(
    const DecisionState& decided) {
  context_.upstream_stream.detach();
  taken_idle = false;
  if (context_.shared_h2_origin) {
    // A shared HTTP/2 connection the tunnel took (open_tunnel.cpp), for a client that offers h2:
    // verified already, and its origin chose h2. The HTTP/2 exchange borrows its streams.
    offered_h2_ = true;
    origin_h2_ = true;
    taken_idle = true;
    co_return std::nullopt;
  }
  if (context_.secured_origin) {
    // An idle connection the tunnel took from the pool (open_tunnel.cpp): verified already.
    std::unique_ptr<SecuredOrigin> idle = std::move(context_.secured_origin);
    origin_tls_.emplace(std::move(*idle->tls));
    origin_tls_->next_layer().point_at(context_.upstream);
    epoch_ = idle->epoch;
    offered_h2_ = idle->h2_offered;
    origin_h2_ = idle->h2_chosen;
    taken_idle = true;
    context_.upstream_stream.attach(*origin_tls_);
    co_return std::nullopt;
  }
  const bool current =
      decided.current(context_.worker) && decided.settings_current(context_.worker);
  epoch_ = current ? context_.worker.origins->epoch() : 0;
  origin_tls_.emplace(context_.upstream, inspection_.origin_facing());
  SSL* ssl = origin_tls_->native_handle();
  inspection_.expect_origin(ssl, host, port);
  // Only the connection's first handshake may offer h2: a later one (a request's new dial on an
  // HTTP/1.1 connection) serves a client that speaks HTTP/1.1 already.
  offered_h2_ = std::exchange(offer_h2_, false);
  if (offered_h2_) {
    inspect::Inspection::offer_origin_h2(ssl);
  }
  verify_error_ = X509_V_OK;
  verify_subject_.clear();
  origin_tls_->set_verify_callback([this](bool preverified, asio::ssl::verify_context& verify) {
    if (!preverified && verify_error_ == X509_V_OK) {
      X509_STORE_CTX* store = verify.native_handle();
      verify_error_ = X509_STORE_CTX_get_error(store);
      verify_subject_ = inspect::subject_of(X509_STORE_CTX_get_current_cert(store));
    }
    return preverified;
  });
  const boost::system::error_code error = co_await within(
      context_, origin_tls_->async_handshake(asio::ssl::stream_base::client, use_tuple));
  if (verify_error_ != X509_V_OK || error) {
    inspection_.forget_origin_session(ssl);
  }
  if (verify_error_ != X509_V_OK) {
    co_return Refusal(rules::Reason::origin_certificate,
                      "the certificate of " + where(*this) + " could not be verified: " +
                          X509_verify_cert_error_string(verify_error_) +
                          " (subject: " + verify_subject_ + ").");
  }
  if (error) {
    co_return Refusal(
        rules::Reason::destination_unavailable,
        "the TLS handshake with " + where(*this) + " failed: " + error.message() + ".");
  }
  origin_h2_ = inspect::Inspection::origin_chose_h2(ssl);
  // Verified: the callback, which points into this object, is not kept with a connection that
  // may outlive it in the pool (no handshake runs on it again: renegotiation is refused).
  origin_tls_->set_verify_callback(
      [](bool preverified, asio::ssl::verify_context&) { return preverified; });
  context_.upstream_stream.attach(*origin_tls_);
  co_return std::nullopt;
}

std::unique_ptr<SecuredOrigin> InspectedTls::release_origin(
    const std::optional<rules::IpAddress>& dialled) {
  context_.upstream_stream.detach();
  if (!origin_tls_) {
    return nullptr;
  }
  boost::system::error_code ignored;
  auto origin = std::make_unique<SecuredOrigin>(std::move(context_.upstream));
  origin->endpoint = origin->socket.remote_endpoint(ignored);
  origin->dialled = dialled;
  origin->epoch = epoch_;
  origin->h2_offered = offered_h2_;
  origin->h2_chosen = origin_h2_;
  origin_tls_->next_layer().point_at(origin->socket);
  origin->tls.emplace(std::move(*origin_tls_));
  origin_tls_.reset();
  return origin;
}

void InspectedTls::keep_origin(const std::optional<rules::IpAddress>& dialled) {
  if (epoch_ == 0 || context_.stopping()) {
    context_.upstream_stream.detach();
    return;  // the caller closes context.upstream
  }
  if (std::unique_ptr<SecuredOrigin> idle = release_origin(dialled)) {
    context_.worker.origins->park(where(*this), std::move(idle));
  }
}

asio::awaitable<std::optional<Refusal>> InspectedTls::secure_client(beast::flat_buffer& hello) {
  auto& buffered = client_tls_.next_layer().prefix();
  const std::size_t size = hello.size();
  asio::buffer_copy(buffered.prepare(size), hello.data());
  buffered.commit(size);
  hello = beast::flat_buffer();
  if (origin_h2_) {
    inspect::Inspection::answer_client_with_h2(client_tls_.native_handle());
  }
  if (auto failure = inspection_.present_leaf(client_tls_.native_handle(), host)) {
    co_return Refusal(
        rules::Reason::internal_error,
        "inspection could not present a certificate for " + where(*this) + ": " + *failure);
  }
  const boost::system::error_code error = co_await within(
      context_, client_tls_.async_handshake(asio::ssl::stream_base::server, use_tuple));
  if (error) {
    co_return Refusal(rules::Reason::client_tls_failed,
                      "the client ended the TLS handshake with the gate's certificate for " +
                          where(*this) + ": " + error.message() +
                          " (does it trust the gate's CA? see `sandgate ca`).");
  }
  client_h2_ = inspect::Inspection::origin_chose_h2(client_tls_.native_handle());
  context_.client_stream.attach(client_tls_);
  co_return std::nullopt;
}

asio::awaitable<void> InspectedTls::close_client() {
  if (!context_.client.is_open()) {
    co_return;
  }
  asio::steady_timer timer(context_.client.get_executor());
  timer.expires_after(std::chrono::seconds(2));
  co_await (client_tls_.async_shutdown(use_tuple) || timer.async_wait(use_tuple));
}

// The connection's end line: how it ended, what it carried (every request's bytes).
void record_connection_end(SessionContext& context, std::string_view method,
                           const InspectedOrigin& origin, std::string_view outcome,
                           const std::optional<Refusal>& failure, std::uint64_t up,
                           std::uint64_t down) {
  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = context.id;
  end.client = context.client_address;
  end.method = method;
  const std::string host = origin.host.display();
  end.host = host;
  end.port = origin.port;
  end.verdict = rules::verdict_name(rules::Verdict::allow);
  end.outcome = outcome;
  if (failure) {
    end.reason = rules::reason_code(failure->reason);
    end.detail = failure->sentence;
  }
  end.bytes_up = up;
  end.bytes_down = down;
  end.repeats_requests = true;
  end.duration_ms = context.elapsed_ms();
  context.record_end(end);
}

// An origin that failed verification is never talked to: the client's first request gets the
// refusal as its answer (a 502 it can read), then the connection ends.
asio::awaitable<void> answer_first_request(SessionContext& context, const InspectedOrigin& origin,
                                           const Refusal& refusal) {
  HeadParser parser;
  parser.header_limit(static_cast<std::uint32_t>(kHttpHeadLimit));
  beast::flat_buffer buffer;
  const HeadRead read = co_await read_request_head(context.client_stream, buffer, parser,
                                                   context.settings().head_timeout);
  Refusal answered = refusal;
  std::string method = "-";
  if (read.status == HeadRead::Status::ok) {
    method = std::string(parser.get().method_string());
    answered.path = std::string(logged_path(parser.get().target()));
  }
  record_refusal(context, method, origin.host.display(), origin.port, answered);
  if (read.status == HeadRead::Status::ok) {
    const std::string reply = build_reply(refusal.reason, refusal.sentence, refusal.at);
    co_await asio::async_write(context.client_stream, asio::buffer(reply), use_tuple);
  }
}

}  // namespace

asio::awaitable<void> serve_inspected(SessionContext& context, const DecisionState& tunnel,
                                      const ConnectionFacts& facts, std::string_view method,
                                      beast::flat_buffer& hello) {
  InspectedTls tls(context, *context.worker.shared.inspection, facts);
  const rules::Host& host = tls.host;
  const std::uint16_t port = tls.port;
  if (facts.offers_h2) {
    tls.offer_h2();  // (decided with the tunnel: open_tunnel.cpp)
  }
  boost::system::error_code ignored;
  // The origin first: a client is only ever shown a certificate for a host whose own
  // certificate the gate verified (or is told why not, inside the connection).
  const std::optional<Refusal> origin_failure = co_await tls.secure_upstream(tunnel);
  if (!context.still_wanted(method, host.display(), port)) {
    co_return;
  }
  if (origin_failure) {
    context.upstream.close(ignored);
  }
  if (auto client_failure = co_await tls.secure_client(hello)) {
    context.client.close(ignored);
    context.upstream.close(ignored);
    record_connection_end(context, method, tls, "closed", client_failure, 0, 0);
    co_return;
  }
  InspectedRequestsEnd served;
  if (origin_failure) {
    co_await answer_first_request(context, tls, *origin_failure);
  } else if (tls.speaks_h2()) {
    served = co_await serve_inspected_h2(context, tls);
  } else if (tls.origin_chose_h2()) {
    // The client was offered h2 (its ClientHello asked for it) and took HTTP/1.1: no request is
    // carried from one version to the other.
    context.upstream.close(ignored);
    const Refusal refusal(rules::Reason::bad_request,
                          "the client offered h2 and then chose HTTP/1.1, while " + where(tls) +
                              " speaks h2: the gate carries no request between versions.");
    co_await answer_first_request(context, tls, refusal);
  } else {
    served = co_await serve_inspected_requests(context, tls);
  }
  if (context.live.revoked) {
    co_return;  // the revocation's line is written
  }
  if (served.origin_idle) {
    tls.keep_origin(served.origin_address);
  }
  co_await tls.close_client();
  context.client.close(ignored);
  context.upstream.close(ignored);
  record_connection_end(context, method, tls, "closed", std::nullopt, served.bytes_up,
                        served.bytes_down);
}

}  // namespace sandgate::session
