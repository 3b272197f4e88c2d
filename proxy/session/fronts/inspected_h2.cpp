// An inspected HTTP/2 connection (inspected_h2.hpp).
//
// Shape: two loops share the connection (the client's bytes read into the server codec, and its
// output written to the client), and each client stream is a coroutine of its own: first the
// request pipeline (exchange/pipeline/: its admission, MCP judgement, secrets and budgets, through
// StreamFront), then its two directions at once, up (the client's body to the origin) and down (the
// origin's response to the client, with the pipeline's response stages). The streams are admitted
// at once, each with its own DecisionState (decision_state.hpp), so a stream waiting on a question
// holds no other. The origin side is the worker's: each stream borrows a stream of an HTTP/2
// connection to the origin that the worker's clients of its host:port share
// (session/h2_origin_pool.hpp), whose own loops hand the stream its events. The loops hand each
// stream its events through two inboxes; nothing blocks another stream. What is the connection's
// stays the connection's: its origin (every stream registers the same destination for reloads), its
// byte counts, and its end (a reload that denies the host, or the drain, ends every stream with its
// line, and resets its streams on the shared origin connections, and only those).
#include "proxy/session/fronts/inspected_h2.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/message.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/log/record.hpp"
#include "proxy/secrets/redaction.hpp"
#include "proxy/secrets/request_secrets.hpp"
#include "proxy/session/admission.hpp"
#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/exchange/h2/server_codec.hpp"
#include "proxy/session/exchange/pipeline/end_line.hpp"
#include "proxy/session/exchange/pipeline/message_lines.hpp"
#include "proxy/session/exchange/pipeline/request_pipeline.hpp"
#include "proxy/session/exchange/pipeline/response_stages.hpp"
#include "proxy/session/exchange/request_admission.hpp"
#include "proxy/session/exchange/secrets_stage.hpp"
#include "proxy/session/fronts/http_exchange.hpp"
#include "proxy/session/fronts/inspected_h2_stream.hpp"
#include "proxy/session/fronts/inspected_h2_websocket.hpp"
#include "proxy/session/h2_origin.hpp"
#include "proxy/session/h2_origin_pool.hpp"
#include "proxy/session/origin_pool.hpp"
#include "proxy/session/upstream_source.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/ascii.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace h2 = exchange::h2;
using h2_front::Closed;
using h2_front::Inbox;
using h2_front::Item;
using h2_front::Stream;
using namespace asio::experimental::awaitable_operators;
using clock = std::chrono::steady_clock;

// How long a stream's response from a bound host may pause before the bytes its redaction holds
// back (a tail that could still become a value's echo) are sent as they are: as on HTTP/1.1.
constexpr std::chrono::milliseconds kRedactionPause{20};
// The most the gate reads of one socket at a time.
constexpr std::size_t kReadPiece = 16 * 1024;

std::size_t head_size(const h2::FieldList& fields) {
  // As HPACK counts a header list (RFC 7541 section 4.1): name, value and 32 per field.
  std::size_t size = 0;
  for (const auto& field : fields) {
    size += field.name.size() + field.value.size() + 32;
  }
  return size;
}

// Cleans what the origin sent of the real values of the secrets bound to its host: every head
// it sends (interim ones, the response's, its trailers), each field's name and value.
void redact_fields(h2::FieldList& fields, const std::vector<secrets::Redaction>* redactions) {
  if (redactions == nullptr) {
    return;
  }
  for (auto& field : fields) {
    secrets::redact(field.name, *redactions);
    secrets::redact(field.value, *redactions);
  }
}

// The first content coding of a response other than identity, in any of its content-encoding
// fields; "" when it has none.
std::string compression_of(const h2::FieldList& fields) {
  for (const auto& field : fields) {
    if (field.name == "content-encoding") {
      if (std::string coding = secrets::coding_other_than(field.value, "identity");
          !coding.empty()) {
        return coding;
      }
    }
  }
  return {};
}

// `fields` without any field named `name` (lowercase).
void without_field(h2::FieldList& fields, std::string_view name) {
  std::erase_if(fields, [name](const h2::Field& field) { return field.name == name; });
}

// What the MCP stage reads of an answer's head (exchange/mcp_exchange.hpp).
exchange::McpExchange::AnswerHead mcp_answer_head(const h2::ResponseHeadEvent& event) {
  exchange::McpExchange::AnswerHead answer;
  answer.status = event.head.status;
  for (const auto& field : event.head.fields) {
    if (field.name == "content-type") {
      answer.content_type = answer.content_types++ == 0 ? field.value : answer.content_type;
    }
  }
  answer.coding = compression_of(event.head.fields);
  answer.has_body = !event.end_stream;
  return answer;
}

bool is_grpc(const h2::FieldList& fields) {
  const std::string* type = h2::find_field(fields, "content-type");
  return type != nullptr && type->starts_with("application/grpc");
}

// gRPC's status for the gate's reply (grpc/doc/statuscodes.md, and http-grpc-status-mapping.md
// for what a client reads from an HTTP status).
int grpc_status_for(unsigned status) {
  switch (status) {
    case 400:
      return 3;  // INVALID_ARGUMENT
    case 401:
    case 407:
      return 16;  // UNAUTHENTICATED
    case 403:
      return 7;  // PERMISSION_DENIED
    case 429:
      return 8;  // RESOURCE_EXHAUSTED
    case 504:
      return 4;  // DEADLINE_EXCEEDED
    default:
      return 14;  // UNAVAILABLE
  }
}

// grpc-message is percent-encoded UTF-8 (PROTOCOL-HTTP2.md): what is not printable ASCII, and
// '%' itself, goes as %XX.
std::string percent_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte <= 0x7e && byte != '%') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

// The request as the admission and secrets stages read it (their one model of a head).
http::request_header<> to_head(const h2::RequestHead& request) {
  http::request_header<> head;
  head.method_string(request.method);
  head.target(request.path);
  head.version(11);
  head.set(http::field::host, request.authority);
  for (const auto& field : request.fields) {
    head.insert(field.name, field.value);
  }
  return head;
}

// The field of `fields` named `name` (any case), the first; nullptr when there is none.
const h2::Field* field_named(const h2::FieldList& fields, std::string_view name) {
  const std::string lower = rules::ascii_lower(name);
  for (const auto& field : fields) {
    if (field.name == lower) {
      return &field;
    }
  }
  return nullptr;
}

// Back to HTTP/2 after the stages: the regular fields lowercased, Host as :authority. The
// body's declared length is the client's, carried: the budgets took a body of known length whole
// with its head (the MCP stage's smaller batch goes with a content-length field of its own).
h2::RequestHead to_request(const h2::RequestHead& original, const http::request_header<>& head) {
  h2::RequestHead request;
  request.method = original.method;
  request.scheme = original.scheme;
  request.authority = original.authority;
  request.path = original.path;
  request.protocol = original.protocol;
  request.content_length = original.content_length;
  for (const auto& field : head) {
    std::string name = rules::ascii_lower(field.name_string());
    if (name == "host") {
      continue;
    }
    const h2::Field* sent = field_named(original.fields, name);
    request.fields.push_back(
        {name, std::string(field.value()), sent != nullptr && sent->never_index});
  }
  return request;
}

// What became of an attempt to open a stream's request at its origin.
enum class Placed : std::uint8_t { opened, refused, gone };

class H2Connection final : private H2OriginWatcher, private h2_front::OriginEventsOwner {
 public:
  H2Connection(SessionContext& context, InspectedOrigin& origin)
      : context_(context),
        origin_(origin),
        server_(server_options()),
        client_signal_(context.client.get_executor()),
        streams_done_(context.client.get_executor()),
        watchdog_(context.client.get_executor()),
        key_(origin.host.display() + ":" + std::to_string(origin.port)),
        shareable_(!origin.facts.by_address()) {
    client_signal_.expires_at(clock::time_point::max());
    streams_done_.expires_at(clock::time_point::max());
    if (context.settings().idle_timeout.count() > 0) {
      idle_limit_ = context.settings().idle_timeout;
    }
    pool().watch(key_, *this);
    adopt_tunnels_origin();
    on_origin_settings();  // (its SETTINGS may have come already)
  }
  ~H2Connection() {
    pool().unwatch(key_, *this);
    if (own_ != nullptr) {
      own_->retire();  // nobody else may use it: it goes once its streams are released
    }
  }
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  asio::awaitable<InspectedRequestsEnd> serve() {
    co_await (read_client() && write_client() && watch_idle());
    // The loops are over: every stream still running is told so, and waited for.
    for (auto& [id, stream] : streams_) {
      stream->up.push(Closed{true, h2::ErrorCode::cancel, false});
      stream->down.push(Closed{true, h2::ErrorCode::cancel, false});
    }
    while (running_streams_ > 0) {
      co_await streams_done_.async_wait(use_tuple);
      streams_done_.expires_at(clock::time_point::max());
    }
    InspectedRequestsEnd end;
    end.bytes_up = bytes_up_;
    end.bytes_down = bytes_down_;
    end.origin_idle = false;
    boost::system::error_code ignored;
    context_.upstream.close(ignored);
    if (context_.live.revoked && !revocation_logged_) {
      // A reload closed the connection between its streams: its line says so.
      context_.record_revoked("-", bytes_up_, bytes_down_);
    }
    co_return end;
  }

 private:
  // Stage 4 of a stream's admission: the origin connection it will go on (find_origin: this
  // client's own, a shared one with room, or one dialled now), and for a tunnel opened to an
  // address the address judged again, as an HTTP/1.1 request's is.
  class StreamReach final : public exchange::OriginReach {
   public:
    StreamReach(H2Connection& connection, Stream& stream)
        : connection_(connection), stream_(stream) {}
    asio::awaitable<void> reach(SessionContext&, DecisionState& decided, Admission& admission,
                                const exchange::AdmittedRequest&) override {
      const ConnectionFacts& facts = connection_.origin_.facts;
      if (facts.by_address()) {
        if (auto refused = exchange::refuse_address(decided, facts)) {
          admission.status = Admission::Status::refused;
          admission.refusal = std::move(*refused);
          co_return;
        }
      }
      stream_.origin.connection = co_await connection_.find_origin(stream_, decided, admission);
    }
    std::optional<rules::IpAddress> dialled() const override {
      const auto& connection = stream_.origin.connection;
      return connection ? connection->dialled() : connection_.origin_.facts.dialled;
    }
    std::string address() const override {
      const auto& connection = stream_.origin.connection;
      return connection ? to_text(connection->endpoint()) : std::string();
    }
    const ConnectionFacts* inspected() const override { return &connection_.origin_.facts; }

   private:
    H2Connection& connection_;
    Stream& stream_;
  };

  h2::ServerOptions server_options() const {
    h2::ServerOptions options;
    options.scheme = "https";
    return options;
  }

  void touch() { last_activity_ = clock::now(); }
  // What a stream's WebSocket takes of the connection (inspected_h2_websocket.hpp).
  h2_front::ConnectionLinks links() {
    return {server_, client_, [this] { wake_writers(); }, stopping_,
            context_.settings().idle_timeout};
  }
  void wake_writers() { client_signal_.cancel(); }

  // Ends the connection: the loops stop, the streams are told.
  void stop() {
    if (stopping_) {
      return;
    }
    stopping_ = true;
    boost::system::error_code ignored;
    context_.client.cancel(ignored);
    context_.upstream.cancel(ignored);  // a dial of an origin connection in progress
    watchdog_.cancel();
    wake_writers();
    // No stream's client is there any more: a stream waiting on a question, or for room at its
    // origin, stops waiting.
    for (auto& [id, stream] : streams_) {
      stream->departure.gone(false);
      stream->room.wake();
    }
  }

  // --- the connection's loops ---

  asio::awaitable<void> read_client() {
    std::vector<char> buffer(kReadPiece);
    while (!stopping_) {
      auto [error, n] =
          co_await context_.client_stream.async_read_some(asio::buffer(buffer), use_tuple);
      if (error || stopping_) {
        stop();  // the client is gone: so is every stream of its connection
        break;
      }
      touch();
      bytes_up_ += n;
      const h2::ConnectionError failed = server_.receive(std::string_view(buffer.data(), n));
      take_server_events();
      wake_writers();
      if (failed != h2::ConnectionError::none) {
        connection_problem_ =
            std::string("the client broke HTTP/2: ") + std::string(h2::describe(failed)) + ".";
        break;  // its GOAWAY is written by write_client, which then stops
      }
    }
  }

  asio::awaitable<void> write_client() {
    std::string out;
    while (!stopping_) {
      const std::string_view pending = server_.pending_output();
      take_server_events();
      if (pending.empty()) {
        if (server_.finished() || (connection_problem_.size() > 0 && !server_.wants_read())) {
          stop();
          break;
        }
        co_await client_signal_.async_wait(use_tuple);
        client_signal_.expires_at(clock::time_point::max());
        continue;
      }
      out.assign(pending);
      auto [error, n] =
          co_await asio::async_write(context_.client_stream, asio::buffer(out), use_tuple);
      if (error) {
        stop();
        break;
      }
      touch();
      bytes_down_ += n;
      server_.consume_output(n);
      take_server_events();
    }
  }

  // Nothing moving either way for the idle limit ends the connection, as on HTTP/1.1.
  asio::awaitable<void> watch_idle() {
    while (!stopping_) {
      watchdog_.expires_at(last_activity_ + idle_limit_);
      auto [error] = co_await watchdog_.async_wait(use_tuple);
      if (stopping_) {
        break;
      }
      if (!error && clock::now() - last_activity_ >= idle_limit_) {
        if (websockets_ > 0 && context_.settings().idle_timeout.count() > 0) {
          // Each WebSocket ends itself at the same limit, with its close frames (1001): the
          // connection idles out after them, not in their place.
          touch();
          continue;
        }
        timed_out_ = true;
        server_.shutdown();
        stop();
        break;
      }
    }
  }

  // --- events to streams ---

  Stream* by_client(h2::StreamId id) {
    auto found = streams_.find(id);
    return found == streams_.end() ? nullptr : found->second.get();
  }

  void take_server_events() {
    while (auto event = server_.next_event()) {
      std::visit([this](auto& e) { on_server_event(e); }, *event);
    }
  }

  void on_server_event(h2::RequestHeadEvent& event) {
    // A request arriving now: decided with the rules and settings the worker serves with now.
    auto stream =
        std::make_unique<Stream>(context_.client.get_executor(), event.stream,
                                 DecisionState(context_.worker, context_.worker.settings));
    stream->request = std::move(event.head);
    stream->request_ended = event.end_stream;
    stream->grpc = is_grpc(stream->request.fields);
    Stream* raw = stream.get();
    raw->sink.owner = this;
    raw->sink.stream = raw;
    streams_.emplace(event.stream, std::move(stream));
    ++running_streams_;
    asio::co_spawn(context_.client.get_executor(), serve_stream(*raw),
                   [this](const std::exception_ptr&) {
                     if (--running_streams_ == 0) {
                       streams_done_.cancel();
                     }
                   });
  }
  void on_server_event(h2::RequestRejectedEvent& event) {
    // Refused by the codec: malformed (reset already), or one the gate answers itself.
    Refusal refusal(rules::Reason::bad_request, "the HTTP/2 request broke the protocol: " +
                                                    std::string(h2::describe(event.problem)) + ".");
    if (event.problem == h2::StreamProblem::plain_connect) {
      refusal.sentence = "CONNECT inside an inspected connection is refused.";
    } else if (event.problem == h2::StreamProblem::head_too_large) {
      refusal = Refusal(rules::Reason::header_too_large,
                        "the request's header list is larger than the gate reads.");
    }
    record_refusal(context_, "-", origin_.host.display(), origin_.port, refusal);
    if (event.must_answer) {
      answer(event.stream, refusal, false);
    }
  }
  void on_server_event(h2::DataEvent& event) {
    if (Stream* s = by_client(event.stream)) {
      s->up.push(std::move(event));
    } else {
      server_.consume(event.stream, event.bytes.size());
    }
  }
  void on_server_event(h2::TrailersEvent& event) {
    if (Stream* s = by_client(event.stream)) {
      s->up.push(std::move(event));
    }
  }
  void on_server_event(h2::EndEvent& event) {
    if (Stream* s = by_client(event.stream)) {
      s->up.push(event);
    }
  }
  void on_server_event(h2::SendReadyEvent& event) {
    if (Stream* s = by_client(event.stream)) {
      s->client_room = true;
      s->down.wake();
    }
  }
  void on_server_event(h2::StreamClosedEvent& event) {
    if (Stream* s = by_client(event.stream)) {
      s->client_closed = true;
      s->client_reset = event.by == h2::Closer::peer || event.by == h2::Closer::codec;
      s->departure.gone(s->client_reset);
      const Closed closed{true, event.code, event.by == h2::Closer::finished,
                          event.by == h2::Closer::owner};
      s->up.push(closed);
      s->down.push(closed);
      s->room.wake();
    }
  }
  void on_server_event(h2::GoawayEvent&) {
    // The client opens no new stream; those open go on.
  }

  // --- the origin side: shared origin connections, a stream borrowed on one ---

  // An event of the stream's origin connection for it (its StreamSink). (What it brings is
  // written to the client, whose writes are the connection's activity: no clock read here.)
  void on_origin_event(Stream& s, h2::ClientEvent& event) override {
    std::visit([&](auto& e) { on_client_event(s, e); }, event);
  }

  void on_client_event(Stream& s, h2::InterimHeadEvent& event) { s.down.push(std::move(event)); }
  void on_client_event(Stream& s, h2::ResponseHeadEvent& event) { s.down.push(std::move(event)); }
  void on_client_event(Stream& s, h2::DataEvent& event) { s.down.push(std::move(event)); }
  void on_client_event(Stream& s, h2::TrailersEvent& event) { s.down.push(std::move(event)); }
  void on_client_event(Stream& s, h2::EndEvent& event) { s.down.push(event); }
  void on_client_event(Stream& s, h2::SendReadyEvent&) {
    s.origin_room = true;
    s.up.wake();
  }
  void on_client_event(Stream& s, h2::StreamClosedEvent& event) {
    if (event.retry_safe && may_send_again(s)) {
      // The origin never processed it (its GOAWAY left it out), and nothing but its head went:
      // sent again on another connection, once.
      s.sent_again = true;
      s.origin = BorrowedStream{};
      s.origin.reopening = true;
      asio::co_spawn(context_.client.get_executor(), reopen(s, event.code), asio::detached);
      return;
    }
    s.origin_closed = true;
    s.origin_reset = event.by != h2::Closer::finished && event.by != h2::Closer::owner;
    Closed closed{false, event.code, event.by == h2::Closer::finished,
                  event.by == h2::Closer::owner};
    if (event.by == h2::Closer::codec) {
      closed.codec_problem = event.problem;
    }
    s.down.push(closed);
    s.up.push(closed);
  }
  // (The connection's own events, GOAWAY and SETTINGS, are its pool's: on_origin_room.)
  void on_client_event(Stream&, h2::GoawayEvent&) {}
  void on_client_event(Stream&, h2::PeerSettingsEvent&) {}
  void on_client_event(Stream&, h2::PingAckEvent&) {}

  bool may_send_again(const Stream& s) const {
    return !s.sent_again && !s.origin.sent_after_head && !s.client_closed && !s.reason &&
           !stopping_;
  }

  // An origin connection of host:port may take a stream it could not before: the streams
  // waiting for one look again.
  void on_origin_room() override { slot_freed(); }
  // One sent SETTINGS: once one takes WebSockets over HTTP/2 (RFC 8441), so does the gate, from
  // then on.
  void on_origin_settings() override {
    if (!server_.connect_protocol_enabled() && origin_takes_websockets()) {
      server_.enable_connect_protocol();
      wake_writers();
    }
  }
  bool origin_takes_websockets() const {
    return (own_ != nullptr && own_->allows_connect_protocol()) ||
           (shareable_ && context_.worker.h2_origins->allows_connect_protocol(key_));
  }

  // Wakes the streams waiting for an origin connection. (Told on every origin stream's end of
  // every client of the host: it looks only when some stream waits.)
  void slot_freed() {
    if (waiting_for_origin_ == 0) {
      return;
    }
    for (auto& [id, stream] : streams_) {
      if (!stream->origin) {
        stream->room.wake();
      }
    }
  }

  H2OriginPool& pool() { return *context_.worker.h2_origins; }

  // Waits until an origin connection may take `s` (slot_freed) or `deadline`; true when the
  // deadline passed first.
  asio::awaitable<bool> wait_for_origin(Stream& s, clock::time_point deadline) {
    ++waiting_for_origin_;
    const bool late = co_await s.room.wait(deadline);
    --waiting_for_origin_;
    co_return late;
  }

  // The tunnel's origin connection is where the first streams go: the shared one it took (in the
  // pool already), or the one it secured, which the worker's other clients of host:port share
  // from now on unless they may not (adopt).
  void adopt_tunnels_origin() {
    if (context_.shared_h2_origin) {
      context_.shared_h2_origin.reset();  // the pool hands it out (find_origin)
      return;
    }
    if (std::unique_ptr<SecuredOrigin> secured = origin_.release_origin(origin_.facts.dialled)) {
      adopt(std::move(secured));
    }
  }

  // A connection this client secured, started: shared when its client did not reach it by
  // address, it was secured under the rules and settings the worker serves with and the pool's
  // bounds allow; otherwise this client's own.
  std::shared_ptr<H2Origin> adopt(std::unique_ptr<SecuredOrigin> secured) {
    auto adopted =
        pool().adopt(key_, std::move(secured), shareable_, context_.worker.origins->epoch());
    if (!adopted->shared()) {
      if (own_ != nullptr) {
        own_->retire();
      }
      own_ = adopted;
    }
    return adopted;
  }

  // The connection a stream goes on: this client's own while it has room, else the one way to
  // an upstream (get_upstream): a shared one of host:port with room, else one dialled now (one
  // dial at a time per client connection; the others wait for it): shared while the pool's
  // bounds allow, otherwise this client's own, so that the bounds limit what is shared and kept,
  // never how many streams go. Its address is held to the rules the stream is decided with.
  // Null, with `admission` refused or over, when none can be had.
  asio::awaitable<std::shared_ptr<H2Origin>> find_origin(Stream& s, DecisionState& decided,
                                                         Admission& admission) {
    const clock::time_point give_up = clock::now() + H2OriginPool::kRoomWait;
    for (;;) {
      if (own_ != nullptr && own_->available_streams() > 0) {
        co_return checked(own_, decided, admission);
      }
      UpstreamWish wish = origin_wish(s);
      wish.may_borrow_h2 = shareable_;
      wish.may_dial = !dialling_;
      dialling_ = dialling_ || wish.may_dial;
      boost::beast::flat_buffer from_parent;
      const UpstreamFrom from =
          co_await get_upstream(context_, decided, admission, wish, from_parent);
      std::shared_ptr<H2Origin> found;
      if (from == UpstreamFrom::shared_h2) {
        found = std::move(context_.shared_h2_origin);
      } else if (from == UpstreamFrom::dialled) {
        found = co_await secure_and_adopt(decided, admission);
      }
      if (wish.may_dial) {
        dialling_ = false;
        slot_freed();  // the streams that waited for this dial look again
      }
      if (found != nullptr || !admission.admitted()) {
        revocation_logged_ = revocation_logged_ || context_.live.revoked != nullptr;
        co_return found;
      }
      // Another stream of this connection is dialling: its connection may serve this one too.
      const bool late = co_await wait_for_origin(s, give_up);
      if (!context_.still_wanted(s.request.method, origin_.host.display(), origin_.port)) {
        admission.status = Admission::Status::over;  // the drain's or the reload's line written
        revocation_logged_ = revocation_logged_ || context_.live.revoked != nullptr;
        co_return nullptr;
      }
      if (s.client_closed || stopping_ || late) {
        admission.status = Admission::Status::refused;
        admission.refusal =
            Refusal(late ? rules::Reason::destination_unavailable : rules::Reason::client_closed,
                    late ? "no connection to " + key_ + " could be had within " +
                               std::to_string(H2OriginPool::kRoomWait.count()) + " s."
                         : "the stream ended while it waited for a connection to " + key_ + ".");
        co_return nullptr;
      }
    }
  }

  // What a stream asks of its upstream: the origin as the tunnel named it, reached as a tunnel's
  // is, where the gate speaks TLS first and h2.
  UpstreamWish origin_wish(const Stream& s) const {
    UpstreamWish wish;
    wish.method = s.request.method;
    wish.host = origin_.facts.requested;
    wish.port = origin_.port;
    wish.use = UpstreamUse::tunnel;
    wish.alpn = ClientAlpn::h2;
    wish.tls_first = true;
    return wish;
  }

  // `connection`, its address held to the rules the stream is decided with.
  std::shared_ptr<H2Origin> checked(std::shared_ptr<H2Origin> connection, DecisionState& decided,
                                    Admission& admission) {
    if (!keep_open_upstream(decided, admission, origin_.facts.requested, origin_.port,
                            connection->dialled())) {
      return nullptr;
    }
    return connection;
  }

  // The origin connection just dialled for a stream, verified with the rules it is decided with
  // as the tunnel's was, offering h2: adopted (shared, or this client's own). An origin that now
  // declines h2 leaves a connection an HTTP/1.1 client can take (kept idle for one); this stream
  // is refused, as no request is carried from one version to the other.
  asio::awaitable<std::shared_ptr<H2Origin>> secure_and_adopt(DecisionState& decided,
                                                              Admission& admission) {
    origin_.offer_h2();
    std::shared_ptr<H2Origin> adopted;
    if (auto refused = co_await origin_.secure_upstream(decided)) {
      admission.status = Admission::Status::refused;
      admission.refusal = std::move(*refused);
    } else if (auto secured = origin_.release_origin(admission.dialled);
               secured != nullptr && !secured->h2_chosen) {
      if (shareable_) {
        context_.worker.origins->park(key_, std::move(secured));
      }
      admission.status = Admission::Status::refused;
      admission.refusal = Refusal(rules::Reason::bad_response,
                                  origin_.host.display() +
                                      " chose HTTP/1.1 on a new connection where it had chosen h2: "
                                      "the gate carries no request between versions.");
    } else if (secured != nullptr) {
      adopted = adopt(std::move(secured));
    }
    boost::system::error_code ignored;
    context_.upstream.close(ignored);  // (its socket moved to the connection when secured)
    co_return adopted;
  }

  // Opens the stream's request on an origin connection: the one its reach chose, or another
  // (find_origin) when that one is full or gone. When every one is full the stream waits for a
  // stream of theirs to end, H2OriginPool::kRoomWait at most, then is refused with the codec's
  // refusal. `refusal` says why when it is refused.
  asio::awaitable<Placed> place_stream(Stream& s, std::optional<Refusal>& refusal) {
    const clock::time_point give_up = clock::now() + H2OriginPool::kRoomWait;
    for (;;) {
      if (s.client_closed || stopping_ || s.reason) {
        co_return Placed::gone;
      }
      std::shared_ptr<H2Origin> connection = std::move(s.origin.connection);
      if (connection == nullptr || connection->available_streams() == 0) {
        Admission admission;
        admission.status = Admission::Status::admitted;
        connection = co_await find_origin(s, s.decided, admission);
        if (admission.refused()) {
          refusal = std::move(admission.refusal);
          co_return Placed::refused;
        }
        if (connection == nullptr) {
          co_return Placed::gone;
        }
      }
      auto opened = client_.open(s.origin, connection, s.request, s.request_ended, s.sink);
      if (opened) {
        wake_writers();
        co_return Placed::opened;
      }
      const h2::SubmitError error = opened.error();
      // (A connection dialled a moment ago has not said yet whether it takes extended CONNECT.)
      const bool full = error == h2::SubmitError::stream_limit_reached ||
                        error == h2::SubmitError::going_away ||
                        (error == h2::SubmitError::connect_protocol_not_supported &&
                         !connection->settings_received());
      if (!full || clock::now() >= give_up) {
        refusal = Refusal(rules::Reason::upstream_closed,
                          "the origin takes no more streams on its connections to " + key_ + " (" +
                              std::string(h2::describe(error)) + ").");
        co_return Placed::refused;
      }
      co_await wait_for_origin(s, give_up);  // a stream of its connections ends, or one joins
    }
  }

  // The origin's GOAWAY left the stream unprocessed: it is opened again elsewhere, while what
  // its client sends waits (BorrowedStream::reopening). One that cannot be ends as if the origin
  // had refused it.
  asio::awaitable<void> reopen(Stream& s, h2::ErrorCode code) {
    std::optional<Refusal> refusal;
    const Placed placed = co_await place_stream(s, refusal);
    if (placed == Placed::opened) {
      s.origin_room = true;  // what the client sent meanwhile goes now
    } else {
      s.origin.reopening = false;
      s.origin_closed = true;
      const Closed refused{false, code, false, false};
      s.down.push(refused);
      s.up.push(refused);
    }
    s.up.wake();
    s.room.wake();  // serve_stream waits for this before the stream goes
  }

  // --- one stream ---

  // The gate's own answer on a stream: its reply for the refusal, or for gRPC a trailers-only
  // response with the matching gRPC status.
  void answer(h2::StreamId id, const Refusal& refusal, bool grpc) {
    const Reply reply = reply_for(refusal.reason, refusal.sentence, refusal.at);
    h2::ResponseHead head;
    head.fields.push_back({"proxy-status", reply.proxy_status, false});
    if (grpc) {
      head.status = 200;
      head.fields.push_back({"content-type", "application/grpc", false});
      head.fields.push_back({"grpc-status", std::to_string(grpc_status_for(reply.status)), false});
      head.fields.push_back({"grpc-message", percent_encoded(reply.body), false});
      server_.submit_response(id, head, true);
    } else {
      head.status = reply.status;
      head.fields.push_back({"content-type", std::string(kReplyContentType), false});
      head.fields.push_back({"content-length", std::to_string(reply.body.size()), false});
      if (server_.submit_response(id, head, false) == h2::SubmitError::none) {
        server_.send_data(id, reply.body);  // far below a stream's send buffer
        server_.end_stream(id);
      }
    }
    wake_writers();
  }

  // A stream's request as the request pipeline sees it (exchange/pipeline/exchange_front.hpp):
  // its head in the stages' model, answered and ended on the stream.
  class StreamFront final : public exchange::ExchangeFront {
   public:
    StreamFront(H2Connection& connection, Stream& s)
        : c_(connection), s_(s), head_(to_head(s.request)) {}

    http::request_header<>& head() override { return head_; }
    asio::awaitable<void> refuse_admission(const exchange::AdmittedRequest&,
                                           const Refusal& refusal) override {
      c_.refuse_stream(s_, refusal);
      co_return;
    }
    void admission_over() override {
      // Its line is written (the client left while it waited, the drain, a reload that closed
      // the connection).
      c_.revocation_logged_ = c_.revocation_logged_ || c_.context_.live.revoked != nullptr;
      c_.server_.reset_stream(s_.client, h2::ErrorCode::cancel);
      c_.wake_writers();
    }
    exchange::ExchangeStages& admitted(const exchange::AdmittedRequest& request) override {
      s_.admitted = request;
      return s_.stages;
    }

    // Without a content-length, any stream its head did not end may carry DATA.
    bool has_body() const override {
      return s_.request.content_length ? *s_.request.content_length > 0 : !s_.request_ended;
    }
    void rewrite_for_origin() override {}  // the head goes as it came (to_request)
    void head_ready() override {}
    std::optional<mcp::Transport> mcp_usual() const override { return c_.mcp_usual_; }
    exchange::HeadCost head_cost() const override {
      // As the head goes (to_request): its regular fields, Host as :authority.
      exchange::HeadCost cost;
      for (const auto& field : head_) {
        if (field.name() != http::field::host) {
          cost.head_bytes += field.name_string().size() + field.value().size() + 32;
        }
      }
      cost.body_length = s_.request.content_length;
      return cost;
    }

    // HTTP/2 has no 100 Continue to answer: the body comes as the stream's window allows.
    asio::awaitable<bool> answer_continue() override { co_return true; }
    asio::awaitable<bool> read_body_ahead(std::size_t limit, exchange::BodyAheadFor why) override {
      return c_.read_body_ahead(s_, limit, why);
    }
    const std::string& body_ahead() const override { return s_.body_ahead; }
    void send_instead(std::string body) override {
      head_.set(http::field::content_length, std::to_string(body.size()));
      s_.body_ahead = std::move(body);
    }

    asio::awaitable<void> answer(const mcp::GateAnswer& answer) override {
      return c_.answer_made(s_, answer);
    }
    void refuse(const Refusal& refusal) override { c_.end_early(s_, refusal); }
    void budget_spent(budget::Stop stop) override {
      c_.end_early(s_, Refusal(rules::Reason::budget_exhausted, stop.sentence, stop.rule));
    }
    void client_left() override {
      if (!c_.client_gone(s_)) {
        admission_over();
      }
    }
    bool client_gone() override { return c_.client_gone(s_); }

   private:
    H2Connection& c_;
    Stream& s_;
    http::request_header<> head_;
  };

  // Whether this stream's request goes on: its :authority checked (an extended CONNECT made the
  // HTTP/1.1 upgrade it is judged as), then the request pipeline (exchange/pipeline/), at once
  // with the connection's other streams, with the stream's own DecisionState; answered and
  // logged there when refused or over. When it goes on, its head is as the stages left it, and
  // a body they read ahead waits in its inbox.
  asio::awaitable<bool> admit(Stream& s) {
    StreamFront front(*this, s);
    std::optional<Refusal> refusal;
    if (s.request.extended_connect()) {
      refusal = h2_front::as_upgrade_request(s.request, front.head());
    }
    if (!refusal && !origin_.named_by(s.request.authority)) {
      refusal = Refusal(rules::Reason::bad_request,
                        "the request's :authority '" + s.request.authority.substr(0, 100) +
                            "' is not the host this connection was opened to (" +
                            origin_.authority + ").");
    }
    if (refusal) {
      refuse_stream(s, std::move(*refusal));
      co_return false;
    }
    HttpTarget target;
    target.host = origin_.host;
    target.port = origin_.port;
    target.authority = origin_.authority;
    target.origin_form = s.request.path;
    StreamReach reach(*this, s);
    const exchange::PipelineEnd ran = co_await exchange::run_request_pipeline(
        context_, s.decided, front, std::move(target), reach);
    if (ran != exchange::PipelineEnd::send) {
      co_return false;
    }
    s.request = to_request(s.request, front.head());
    if (s.body_was_read_ahead && !s.request_ended) {
      s.up.push(h2::DataEvent{s.client, std::move(s.body_ahead)});  // sent after the head
      s.up.push(h2::EndEvent{s.client});
    }
    co_return true;
  }

  // Refused before its exchange (its :authority, its admission): logged (an extended CONNECT as
  // the GET it is judged as) and answered.
  void refuse_stream(Stream& s, Refusal refusal) {
    const std::string display = origin_.host.display();
    if (refusal.path.empty()) {
      refusal.path = std::string(logged_path(s.request.path));
    }
    record_refusal(context_, h2_front::judged_method(s.request), display, origin_.port, refusal);
    answer(s.client, refusal, s.grpc);
  }

  // The whole request body read before its head goes (exchange/pipeline/): false when it could
  // not be (the client gone, or refused: too large to sign, or not whole).
  asio::awaitable<bool> read_body_ahead(Stream& s, std::size_t limit, exchange::BodyAheadFor why) {
    const bool judging = why == exchange::BodyAheadFor::judging;
    std::optional<std::string> body = co_await read_whole_body(s, limit, judging);
    if (client_gone(s)) {
      co_return false;
    }
    if (!body && s.read_ahead_full) {
      end_early(
          s, Refusal(rules::Reason::connection_limit,
                     "the gate already holds " + std::to_string(kReadAheadTotal / (1024 * 1024)) +
                         " MiB of request bodies it reads before sending them (MCP calls "
                         "to judge, SigV4 requests with masked secrets to sign again); try "
                         "again later."));
      co_return false;
    }
    if (!body) {
      end_early(s,
                Refusal(rules::Reason::secret_refused,
                        "the request body to sign again is larger than " +
                            std::to_string(kSignedBodyLimit) + " bytes, or did not come whole."));
      co_return false;
    }
    s.body_ahead = std::move(*body);
    s.body_was_read_ahead = true;
    co_return true;
  }

  // The gate's own answer to a stream a stage judged (the MCP stage's): the whole response,
  // nothing sent upstream.
  asio::awaitable<void> answer_made(Stream& s, const mcp::GateAnswer& made) {
    h2::ResponseHead head;
    head.status = made.status;
    if (!made.content_type.empty()) {
      head.fields.push_back({"content-type", made.content_type, false});
    }
    head.fields.push_back({"content-length", std::to_string(made.body.size()), false});
    s.answered = true;
    s.status = made.status;
    s.bytes_down += head_size(head.fields);
    co_await send_made(s, head, made.body);
  }

  // A head and a body the gate made, sent whole as the stream's room allows.
  asio::awaitable<void> send_made(Stream& s, const h2::ResponseHead& head, std::string_view body) {
    if (!taken_by_client(s, server_.submit_response(s.client, head, body.empty()),
                         "the gate's answer", true)) {
      co_return;
    }
    s.response_started = true;
    wake_writers();
    if (body.empty()) {
      co_return;
    }
    const bool sent =
        co_await send_all(server_, s.client, body, s.client_room, s.down, s.client_closed);
    s.bytes_down += body.size();
    if (sent) {
      server_.end_stream(s.client);
      wake_writers();
    }
  }

  // After its admission, or a wait of an admitted stream's: true when its client is gone
  // meanwhile (it reset the stream, or the connection ended); its end line will say so. (A
  // stream gone while its admission waited on a question has its line from the wait.)
  bool client_gone(Stream& s) {
    if (!s.client_closed && !stopping_) {
      return false;
    }
    s.outcome = s.client_reset ? "reset" : "closed";
    s.reason = context_.stopping() ? rules::Reason::shutting_down : rules::Reason::client_closed;
    s.detail = s.client_reset ? "the client reset the stream before its request was sent."
                              : "the connection ended before the stream's request was sent.";
    return true;
  }

  // A stream refused after its admission's allow line: the refusal is its end line, as a
  // budget's or a secret's on HTTP/1.1.
  void end_early(Stream& s, const Refusal& refusal) {
    s.reason = refusal.reason;
    s.detail = refusal.sentence;
    s.rule = refusal.rule;
    s.outcome = "refused";
    answer(s.client, refusal, s.grpc);
  }

  // The whole request body, at most `limit` bytes, within the gate-wide total of bodies read
  // ahead: nothing past either, or when it did not come whole (trailers cannot be signed; a close
  // ends it). `keep_first`: a longer body is read no
  // further, its first `limit` bytes kept, and trailers end it (they never go, as on HTTP/1.1).
  asio::awaitable<std::optional<std::string>> read_whole_body(Stream& s, std::size_t limit,
                                                              bool keep_first) {
    std::string body;
    if (s.request_ended) {
      co_return body;
    }
    for (;;) {
      while (s.up.empty()) {
        co_await s.up.wait();
      }
      Item item = s.up.pop();
      if (auto* data = std::get_if<h2::DataEvent>(&item)) {
        server_.consume(s.client, data->bytes.size());
        wake_writers();
        const std::size_t room = limit - body.size();
        if (!s.read_ahead_share.take(std::min(data->bytes.size(), room))) {
          s.read_ahead_full = true;
          co_return std::nullopt;
        }
        if (data->bytes.size() > room) {
          if (!keep_first) {
            co_return std::nullopt;
          }
          body.append(data->bytes, 0, room);
          co_return body;  // the rest is drained once the stage has answered
        }
        body += data->bytes;
      } else if (std::holds_alternative<h2::EndEvent>(item)) {
        co_return body;  // its end is pushed again behind the body
      } else if (keep_first && std::holds_alternative<h2::TrailersEvent>(item)) {
        co_return body;
      } else {
        co_return std::nullopt;
      }
    }
  }

  asio::awaitable<void> serve_stream(Stream& s) {
    const bool admitted = co_await admit(s);
    if (admitted) {
      const bool opened = co_await open_origin_stream(s);
      if (opened) {
        if (s.request.extended_connect()) {
          co_await relay_down(s);  // the origin's answer; a 2xx opens the WebSocket
          if (s.websocket_open) {
            ++websockets_;
            std::optional<exchange::MessageLines> messages = message_lines(s);
            co_await h2_front::relay_websocket(links(), s, messages ? &*messages : nullptr);
            --websockets_;
          }
        } else {
          co_await (relay_up(s) && relay_down(s));
        }
      }
      log_end(s);
    } else {
      if (s.reason || s.answered) {
        log_end(s);
      }
      co_await drain(s);
    }
    while (s.origin.reopening) {
      co_await s.room.wait();  // (reopen() ends soon once the stream is over)
    }
    // Nobody reads its origin stream any more (the client reset its stream once its request was
    // sent, the gate ended it, or the connection is over): the origin stops, and what it sent
    // goes back to the window of the shared connection's other streams.
    client_.release(s.origin, h2::ErrorCode::cancel);
    streams_.erase(s.client);
  }

  // After the gate answered: waits until the stream is over, giving the client back the window
  // of whatever body it still sends.
  asio::awaitable<void> drain(Stream& s) {
    while (!s.client_closed && !stopping_) {
      while (!s.up.empty()) {
        Item item = s.up.pop();
        if (auto* data = std::get_if<h2::DataEvent>(&item)) {
          server_.consume(s.client, data->bytes.size());
          wake_writers();
        }
      }
      if (s.client_closed || stopping_) {
        break;
      }
      co_await s.up.wait();
    }
  }

  // The request's head on a stream of an origin connection (place_stream).
  asio::awaitable<bool> open_origin_stream(Stream& s) {
    std::optional<Refusal> refusal;
    const Placed placed = co_await place_stream(s, refusal);
    if (client_gone(s)) {
      co_return false;
    }
    if (placed != Placed::opened) {
      end_early(s, refusal.value_or(Refusal(rules::Reason::upstream_closed,
                                            "no connection to " + key_ + " took the request.")));
      co_return false;
    }
    s.bytes_up += head_size(s.request.fields);
    co_return true;
  }

  // Sends `bytes` on one side's stream as its room allows; false when the stream ended first,
  // or the other side's did (`given_up`: a client that reset its upload is not kept waiting on
  // an origin that takes nothing more).
  template <typename Codec, typename Id>
  asio::awaitable<bool> send_all(Codec& codec, Id& id, std::string_view bytes, bool& room,
                                 Inbox& inbox, const bool& closed, const bool* given_up = nullptr) {
    const auto over = [&] { return closed || stopping_ || (given_up != nullptr && *given_up); };
    while (!bytes.empty()) {
      if (over()) {
        co_return false;
      }
      auto taken = codec.send_data(id, bytes);
      if (!taken) {
        co_return false;
      }
      bytes.remove_prefix(*taken);
      wake_writers();
      if (!bytes.empty()) {
        room = false;
        while (!room && !over()) {
          co_await inbox.wait();
        }
      }
    }
    co_return true;
  }

  // Client to origin: the body (taken from the budgets), trailers, the end; the client's window
  // opened only by what the origin took.
  asio::awaitable<void> relay_up(Stream& s) {
    bool done = s.request_ended;
    while (!done && !stopping_) {
      while (s.up.empty() && !stopping_) {
        co_await s.up.wait();
      }
      if (stopping_) {
        break;
      }
      Item item = s.up.pop();
      if (auto* data = std::get_if<h2::DataEvent>(&item)) {
        const std::size_t size = data->bytes.size();
        std::optional<budget::Stop> stop;
        const std::size_t allowed =
            co_await take_piece_or_ask(s, rules::BudgetKind::up, size, stop);
        const bool sent =
            co_await send_all(client_, s.origin, std::string_view(data->bytes).substr(0, allowed),
                              s.origin_room, s.up, s.origin_closed, &s.client_closed);
        s.bytes_up += allowed;
        server_.consume(s.client, size);
        wake_writers();
        if (stop) {
          cut(s, *stop);
          break;
        }
        if (!sent) {
          break;
        }
      } else if (auto* trailers = std::get_if<h2::TrailersEvent>(&item)) {
        if (auto refused = fill_trailers(s, trailers->fields)) {
          fail_response(
              s, Refusal(rules::Reason::secret_refused, "in the request's trailers: " + *refused));
          s.outcome = "refused";
          break;
        }
        client_.submit_trailers(s.origin, std::move(trailers->fields));
        wake_writers();
        done = true;
      } else if (std::holds_alternative<h2::EndEvent>(item)) {
        client_.end_stream(s.origin);
        wake_writers();
        done = true;
      } else if (auto* closed = std::get_if<Closed>(&item)) {
        if (closed->by_client && !closed->finished && !s.origin_closed) {
          client_.reset_stream(s.origin, h2::ErrorCode::cancel);  // the client gave up
          wake_writers();
        }
        break;
      }
    }
  }

  // The request's trailers are a head of its own for the masked secrets: a sentinel goes where
  // it would in the request's head (filled in for a host it is bound to, in a field that carries
  // credentials), and nowhere else. Why they are refused, when they are.
  std::optional<std::string> fill_trailers(Stream& s, h2::FieldList& fields) {
    const secrets::MaskedSecrets* secrets = context_.worker.shared.secrets;
    if (secrets == nullptr) {
      return std::nullopt;
    }
    http::request_header<> head;
    head.method_string(s.request.method);
    head.target("/");
    for (const auto& field : fields) {
      head.insert(field.name, field.value);
    }
    const bool may_fill = origin_.facts.may_fill_secrets();
    if (auto misplaced = secrets::misplaced_secret(*secrets, head, origin_.host.name, may_fill)) {
      return misplaced;
    }
    if (may_fill && secrets::fill_secrets(*secrets, head)) {
      s.stages.carried_secret = true;
      h2::FieldList filled;
      for (const auto& field : head) {
        const h2::Field* sent = field_named(fields, field.name_string());
        filled.push_back({rules::ascii_lower(field.name_string()), std::string(field.value()),
                          sent == nullptr || sent->never_index});
      }
      fields = std::move(filled);
    }
    return std::nullopt;
  }

  // A budget ended the stream: both sides reset, the stop the end line's reason.
  void cut(Stream& s, const budget::Stop& stop) {
    s.reason = rules::Reason::budget_exhausted;
    s.detail = stop.sentence;
    s.rule = stop.rule;
    s.outcome = "budget-exhausted";
    if (!s.origin_closed) {
      client_.reset_stream(s.origin, h2::ErrorCode::cancel);
    }
    if (!s.client_closed) {
      if (s.response_started) {
        server_.reset_stream(s.client, h2::ErrorCode::cancel);
      } else {
        answer(s.client, Refusal(rules::Reason::budget_exhausted, stop.sentence, stop.rule),
               s.grpc);
      }
    }
    wake_writers();
  }

  // The origin's response head, cleaned and checked as on HTTP/1.1 (exchange/pipeline/
  // response_stages.hpp); false when it is refused, or when the MCP stage's filter takes the
  // answer over (`filtered`: how).
  asio::awaitable<bool> pass_response_head(Stream& s, h2::ResponseHeadEvent& event,
                                           std::optional<exchange::McpAnswer>& filtered,
                                           mcp::ResponseFilter::Mode& mode) {
    h2::ResponseHead& head = event.head;
    redact_fields(head.fields, s.stages.redactions);
    const std::string* type = h2::find_field(head.fields, "content-type");
    if (auto refused = exchange::refuse_unsearchable(
            s.stages, head.status, type ? *type : "",
            s.stages.carried_secret ? compression_of(head.fields) : std::string(),
            !event.end_stream, origin_.host.display())) {
      fail_response(s, *refused);
      co_return false;
    }
    if (s.stages.mcp.filters_response()) {
      // An MCP server's answer to a call the stage judged (or its GET stream): filtered.
      filtered.emplace(s.stages, s.admitted.where);
      std::optional<Refusal> unreadable;
      mode = filtered->start(mcp_answer_head(event), unreadable, mcp_usual_);
      if (unreadable) {
        fail_response(s, *unreadable);
        co_return false;
      }
      if (mode != mcp::ResponseFilter::Mode::pass) {
        co_return false;
      }
    }
    if (s.stages.budget.active()) {
      const exchange::HeadCost cost{head_size(head.fields), head.content_length};
      if (auto stop =
              co_await exchange::take_head(s.stages.budget, rules::BudgetKind::down, cost)) {
        cut(s, *stop);
        co_return false;
      }
    }
    if (s.request.extended_connect() && head.status / 100 == 2 && !event.end_stream) {
      if (auto problem = h2_front::answer_problem(s.request, head)) {
        fail_response(s, Refusal(rules::Reason::bad_response,
                                 origin_.host.display() +
                                     " answered the WebSocket's extended CONNECT wrongly: " +
                                     *problem + "."));
        co_return false;
      }
      s.websocket_open = true;
    }
    s.status = head.status;
    s.bytes_down += head_size(head.fields);
    if (!taken_by_client(s, server_.submit_response(s.client, head, event.end_stream),
                         "the response's head")) {
      co_return false;
    }
    s.response_started = true;
    wake_writers();
    co_return true;
  }

  // Whether the server codec took what the gate submitted on the client's stream. It checks the
  // gate's heads and trailers on the way out as it checks the peer's on the way in; a refusal
  // ends the stream as failed, with its line saying why, never leaves it open unanswered. Before
  // a response began the client gets the gate's answer, unless `answering` (that answer was what
  // failed): then, as after, its stream is reset.
  bool taken_by_client(Stream& s, h2::SubmitError error, std::string_view what,
                       bool answering = false) {
    if (error == h2::SubmitError::none) {
      return true;
    }
    if (s.client_closed || error == h2::SubmitError::unknown_stream ||
        error == h2::SubmitError::connection_ended) {
      return false;  // the stream or the connection is over already, and its line says why
    }
    s.response_started = s.response_started || answering;
    fail_response(s, Refusal(rules::Reason::internal_error,
                             "the gate could not pass " + std::string(what) +
                                 " to the client: " + std::string(h2::describe(error)) + "."));
    return false;
  }

  // The origin failed the exchange before a response began: the client gets the gate's answer.
  void fail_response(Stream& s, const Refusal& refusal) {
    s.reason = refusal.reason;
    s.detail = refusal.sentence;
    s.outcome = "failed";
    if (!s.origin_closed) {
      client_.reset_stream(s.origin, h2::ErrorCode::cancel);
    }
    if (!s.client_closed) {
      if (s.response_started) {
        server_.reset_stream(s.client, h2::ErrorCode::internal_error);
      } else {
        answer(s.client, refusal, s.grpc);
      }
    }
    wake_writers();
  }

  // What a stream's response direction carries from one event to the next: the redaction of a
  // body from a host masked secrets are bound to, and the buffer it cleans in.
  struct DownState {
    std::optional<secrets::StreamRedaction> redaction;
    std::vector<char> buffer;
  };
  enum class Down : std::uint8_t { more, over };

  // Origin to client: interim heads, the head, the body (budgets, redaction), trailers, the end.
  asio::awaitable<void> relay_down(Stream& s) {
    DownState d;
    for (Down next = Down::more; next == Down::more;) {
      const bool waited = co_await await_down(s, d);
      if (!waited) {
        break;
      }
      Item item = s.down.pop();
      if (s.origin_reset && !std::holds_alternative<Closed>(item)) {
        continue;  // the origin's reset ends the response: what came before it is dropped
      }
      if (auto* interim = std::get_if<h2::InterimHeadEvent>(&item)) {
        redact_fields(interim->head.fields, s.stages.redactions);
        if (!taken_by_client(s, server_.submit_interim(s.client, interim->head),
                             "an interim response")) {
          break;
        }
        wake_writers();
      } else if (auto* response = std::get_if<h2::ResponseHeadEvent>(&item)) {
        next = co_await down_head(s, d, *response);
      } else if (auto* data = std::get_if<h2::DataEvent>(&item)) {
        next = co_await down_data(s, d, *data);
      } else if (auto* trailers = std::get_if<h2::TrailersEvent>(&item)) {
        next = co_await down_end(s, d, &trailers->fields);
      } else if (std::holds_alternative<h2::EndEvent>(item)) {
        next = co_await down_end(s, d, nullptr);
      } else if (auto* closed = std::get_if<Closed>(&item)) {
        down_closed(s, *closed);
        next = Down::over;
      }
    }
    // The response is over (or the stream is): the other direction stops waiting for room.
    s.up.wake();
  }

  // Waits for the origin's next event on the stream; a pause of the origin's sends what the
  // redaction held back. False when the stream or the connection is over.
  asio::awaitable<bool> await_down(Stream& s, DownState& d) {
    while (s.down.empty() && !stopping_) {
      if (d.redaction && d.redaction->held() > 0) {
        const bool paused = co_await s.down.wait(clock::now() + kRedactionPause);
        if (paused && s.down.empty()) {
          const bool sent = co_await send_released(s, d, d.redaction->on_pause());
          if (!sent) {
            co_return false;
          }
        }
        continue;
      }
      co_await s.down.wait();
    }
    co_return !stopping_;
  }

  // Sends what the redaction released (in the buffer); false when the stream ended.
  asio::awaitable<bool> send_released(Stream& s, DownState& d,
                                      secrets::StreamRedaction::Ready ready) {
    const bool sent = co_await send_all(server_, s.client,
                                        std::string_view(d.buffer.data() + ready.from, ready.size),
                                        s.client_room, s.down, s.client_closed, &s.origin_reset);
    s.bytes_down += ready.size;
    d.redaction->to_front(d.buffer.data());
    co_return sent;
  }

  // The response head: checked, passed on (or taken over by the MCP stage's filter).
  asio::awaitable<Down> down_head(Stream& s, DownState& d, h2::ResponseHeadEvent& response) {
    std::optional<exchange::McpAnswer> filtered;
    mcp::ResponseFilter::Mode mode = mcp::ResponseFilter::Mode::pass;
    const bool passed = co_await pass_response_head(s, response, filtered, mode);
    if (!passed && mode != mcp::ResponseFilter::Mode::pass) {
      const bool over = co_await relay_mcp_answer(s, response, *filtered, mode);
      co_return over ? Down::over : Down::more;  // more: a close came first, handled next
    }
    if (!passed || s.websocket_open) {
      co_return Down::over;  // (open: the stream's DATA are the WebSocket's frames from now on)
    }
    if (s.stages.redactions != nullptr && !response.end_stream) {
      d.redaction.emplace(*s.stages.redactions);
      d.buffer.resize(d.redaction->front_limit() + kReadPiece);
    }
    co_return response.end_stream ? Down::over : Down::more;
  }

  // A piece of the body: taken from the budgets, cleaned, sent; the origin's window opened by
  // what it sent.
  asio::awaitable<Down> down_data(Stream& s, DownState& d, h2::DataEvent& data) {
    const std::size_t size = data.bytes.size();
    std::optional<budget::Stop> stop;
    const std::size_t allowed = co_await take_piece_or_ask(s, rules::BudgetKind::down, size, stop);
    bool sent = true;
    std::string_view piece = std::string_view(data.bytes).substr(0, allowed);
    if (d.redaction) {
      // In pieces the buffer holds beside what the redaction carries.
      while (sent && !piece.empty()) {
        const std::size_t fresh = std::min(piece.size(), kReadPiece);
        std::memcpy(d.buffer.data() + d.redaction->carried(), piece.data(), fresh);
        piece.remove_prefix(fresh);
        sent = co_await send_released(s, d, d.redaction->pass(d.buffer.data(), fresh, false));
      }
    } else {
      sent = co_await send_all(server_, s.client, piece, s.client_room, s.down, s.client_closed,
                               &s.origin_reset);
      s.bytes_down += allowed;
    }
    client_.consume(s.origin, size);
    wake_writers();
    if (stop) {
      cut(s, *stop);
      co_return Down::over;
    }
    // (Cut short by the origin's reset: the reset, queued behind, is passed on next.)
    co_return sent || s.origin_reset ? Down::more : Down::over;
  }

  // The end of the response: what the redaction holds, then its trailers (cleaned) or its end.
  asio::awaitable<Down> down_end(Stream& s, DownState& d, h2::FieldList* trailers) {
    if (d.redaction) {
      const bool sent = co_await send_released(s, d, d.redaction->pass(d.buffer.data(), 0, true));
      if (!sent) {
        co_return Down::over;
      }
    }
    if (trailers != nullptr) {
      redact_fields(*trailers, s.stages.redactions);
      taken_by_client(s, server_.submit_trailers(s.client, std::move(*trailers)),
                      "the response's trailers");
    } else {
      taken_by_client(s, server_.end_stream(s.client), "the response's end");
    }
    wake_writers();
    co_return Down::over;
  }

  // The stream closed on either side before its response was over.
  void down_closed(Stream& s, const Closed& closed) {
    if (closed.by_gate) {
      return;  // whoever reset it wrote the stream's end (cut(), fail_response())
    }
    if (!closed.by_client && !closed.finished && !s.client_closed) {
      if (s.response_started) {
        server_.reset_stream(s.client, closed.code == h2::ErrorCode::no_error
                                           ? h2::ErrorCode::internal_error
                                           : closed.code);
        s.outcome = "reset";
        if (closed.codec_problem) {
          s.detail =
              "The gate reset the stream: " + std::string(h2::describe(*closed.codec_problem)) +
              ".";
        }
      } else if (closed.codec_problem) {
        fail_response(
            s, Refusal(rules::Reason::bad_response,
                       origin_.host.display() + "'s response on its HTTP/2 stream was refused: " +
                           std::string(h2::describe(*closed.codec_problem)) + "."));
      } else {
        fail_response(s,
                      Refusal(rules::Reason::upstream_closed,
                              origin_.host.display() + " ended the stream before its response (" +
                                  std::string(h2::describe(closed.code)) + ")."));
      }
      wake_writers();
    } else if (closed.by_client && !closed.finished) {
      s.outcome = "client-reset";
    }
  }

  // How many of a piece's `size` bytes of `kind` may be sent: all of them when no budget ends
  // inside it or a person granted more (--unknown=ask); fewer, with `stop` set, otherwise. What a
  // yes grants is taken from the budgets for the rest of the piece like any bytes (as HTTP/1.1's
  // relay does), so a grant is spent once, and a piece larger than the grant asks again.
  asio::awaitable<std::size_t> take_piece_or_ask(Stream& s, rules::BudgetKind kind,
                                                 std::size_t size,
                                                 std::optional<budget::Stop>& stop) {
    std::size_t taken = 0;
    for (;;) {
      taken += s.stages.budget.take_piece(kind, size - taken, stop);
      if (!stop) {
        co_return taken;
      }
      const bool granted = co_await s.stages.budget.more_granted(*stop);
      if (!granted) {
        co_return taken;
      }
      stop.reset();
    }
  }

  // --- the MCP stage's answer filter (exchange/pipeline/response_stages.hpp), as on HTTP/1.1 ---

  // The answer of a stream the MCP stage judged: read whole and filtered (or replaced by the
  // gate's own), or passed event by event. True when the stream's response is over; false when
  // the stream closed first (the close is back in the inbox, for relay_down).
  asio::awaitable<bool> relay_mcp_answer(Stream& s, h2::ResponseHeadEvent& event,
                                         exchange::McpAnswer& answer,
                                         mcp::ResponseFilter::Mode mode) {
    h2::ResponseHead head = std::move(event.head);
    without_field(head.fields, "content-length");  // the filter changes the length
    if (mode == mcp::ResponseFilter::Mode::sse) {
      const bool over = co_await relay_mcp_events(s, std::move(head), event.end_stream, answer);
      co_return over;
    }
    std::string body;
    const bool replace = mode == mcp::ResponseFilter::Mode::replace;
    const std::optional<bool> whole =
        co_await read_answer_body(s, replace ? nullptr : &body, answer.limit(), event.end_stream);
    if (!whole) {
      co_return false;
    }
    if (!*whole) {
      fail_response(s, answer.unread());
      co_return true;
    }
    auto made = answer.finish(body);
    if (!made) {
      fail_response(s, made.error());
      co_return true;
    }
    if (made->replaced) {
      head.status = made->answer.status;
      without_field(head.fields, "content-type");
      without_field(head.fields, "content-encoding");  // the gate's own body, or none
      if (!made->answer.content_type.empty()) {
        head.fields.push_back({"content-type", made->answer.content_type, false});
      }
    }
    head.fields.push_back({"content-length", std::to_string(made->answer.body.size()), false});
    if (s.stages.budget.active()) {
      const exchange::HeadCost cost{head_size(head.fields), made->answer.body.size()};
      if (auto stop =
              co_await exchange::take_head(s.stages.budget, rules::BudgetKind::down, cost)) {
        cut(s, *stop);
        co_return true;
      }
    }
    s.status = head.status;
    s.bytes_down += head_size(head.fields);
    co_await send_made(s, head, made->answer.body);
    co_return true;
  }

  // The rest of an answer's body from the origin: whole into `into` (at most `limit` bytes),
  // or dropped when `into` is null. True when it all came (its trailers, never read by the
  // filter, do not go); false past the limit; nothing when the stream closed first (the close
  // put back).
  asio::awaitable<std::optional<bool>> read_answer_body(Stream& s, std::string* into,
                                                        std::size_t limit, bool ended) {
    while (!ended && !stopping_) {
      while (s.down.empty() && !stopping_) {
        co_await s.down.wait();
      }
      if (stopping_) {
        break;
      }
      Item item = s.down.pop();
      if (auto* data = std::get_if<h2::DataEvent>(&item)) {
        client_.consume(s.origin, data->bytes.size());
        wake_writers();
        if (into != nullptr && into->size() + data->bytes.size() > limit) {
          co_return false;
        }
        if (into != nullptr) {
          *into += data->bytes;
        }
      } else if (std::holds_alternative<h2::EndEvent>(item) ||
                 std::holds_alternative<h2::TrailersEvent>(item)) {
        ended = true;
      } else if (std::holds_alternative<Closed>(item)) {
        s.down.put_back(std::move(item));
        co_return std::nullopt;
      }
    }
    if (!ended) {
      co_return std::nullopt;
    }
    co_return true;
  }

  // An MCP server's event stream, event by event through the filter (lists filtered, the gate's
  // answers first), its length unknown. A message the filter cannot read cuts the stream: the
  // client sees it break, never a message the gate misread.
  asio::awaitable<bool> relay_mcp_events(Stream& s, h2::ResponseHead head, bool ended,
                                         exchange::McpAnswer& answer) {
    if (s.stages.budget.active()) {
      const exchange::HeadCost cost{head_size(head.fields), std::nullopt};
      if (auto stop =
              co_await exchange::take_head(s.stages.budget, rules::BudgetKind::down, cost)) {
        cut(s, *stop);
        co_return true;
      }
    }
    s.status = head.status;
    s.bytes_down += head_size(head.fields);
    if (!taken_by_client(s, server_.submit_response(s.client, head, ended),
                         "the response's head")) {
      co_return true;
    }
    s.response_started = true;
    wake_writers();
    while (!ended && !stopping_) {
      while (s.down.empty() && !stopping_) {
        co_await s.down.wait();
      }
      if (stopping_) {
        co_return true;
      }
      Item item = s.down.pop();
      if (auto* data = std::get_if<h2::DataEvent>(&item)) {
        client_.consume(s.origin, data->bytes.size());
        wake_writers();
        auto out = answer.pass_events(data->bytes);
        if (!out) {
          fail_response(s, Refusal(rules::Reason::bad_response,
                                   s.admitted.where + " sent an MCP event the gate cannot read."));
          co_return true;
        }
        const bool sent = co_await send_counted(s, *out);
        if (!sent) {
          co_return true;
        }
      } else if (std::holds_alternative<h2::EndEvent>(item) ||
                 std::holds_alternative<h2::TrailersEvent>(item)) {
        const bool sent = co_await send_counted(s, answer.end_events());
        if (sent) {
          server_.end_stream(s.client);  // its trailers, never read by the filter, do not go
          wake_writers();
        }
        co_return true;
      } else if (std::holds_alternative<Closed>(item)) {
        s.down.put_back(std::move(item));
        co_return false;
      }
    }
    co_return true;
  }

  // Sends `bytes` the gate made on the stream, taken from the budgets piece by piece (a person
  // asked for more under --unknown=ask); false when the stream ended, or a budget cut it.
  asio::awaitable<bool> send_counted(Stream& s, std::string_view bytes) {
    std::optional<budget::Stop> stop;
    const std::size_t allowed =
        co_await take_piece_or_ask(s, rules::BudgetKind::down, bytes.size(), stop);
    const bool sent = co_await send_all(server_, s.client, bytes.substr(0, allowed), s.client_room,
                                        s.down, s.client_closed);
    s.bytes_down += allowed;
    if (stop) {
      cut(s, *stop);
      co_return false;
    }
    co_return sent;
  }

  // The lines of a WebSocket stream's messages, where the settings of its arrival ask for them.
  std::optional<exchange::MessageLines> message_lines(const Stream& s) {
    if (!s.decided.settings().log_websocket_messages) {
      return std::nullopt;
    }
    const std::string host = origin_.host.display();
    const std::string path(logged_path(s.request.path));
    return exchange::MessageLines(context_, line_of(s, host, path));  // copies the strings
  }

  // What every line of an admitted stream names: the request, its origin and its start. `host`
  // and `path` (the origin's name and the logged path) outlive the line.
  exchange::EndLine line_of(const Stream& s, const std::string& host, const std::string& path) {
    exchange::EndLine line;
    line.method = h2_front::judged_method(s.request);
    line.host = host;
    line.port = origin_.port;
    line.path = path;
    line.started = s.started;
    return line;
  }

  // The end line of an admitted stream (repeating its allow). A stream a reload ended with its
  // connection (LiveConnection::revoked) ends `revoked`, with the new rules' reason, counted as a
  // denial: the connection's only line about the revocation when streams were open.
  void log_end(const Stream& s) {
    const std::string host = origin_.host.display();
    const std::string path(logged_path(s.request.path));
    exchange::EndLine line = line_of(s, host, path);
    line.outcome = s.outcome;
    line.reason = s.reason;
    line.detail = s.detail;
    line.rule = s.rule;
    line.bytes_up = s.bytes_up;
    line.bytes_down = s.bytes_down;
    if (const Revocation* why = context_.live.revoked.get()) {
      log::Record end = exchange::end_record(context_, line);
      end.rule = why->rule;
      end.detail = why->detail;
      end.outcome = "revoked";
      revocation_logged_ = true;
      record_late_denial(context_.worker, end, revocation_reason(*why));
      return;
    }
    exchange::write_end_line(context_, line);
  }

  SessionContext& context_;
  InspectedOrigin& origin_;
  h2::ServerCodec server_;
  // The gate as the origin's client: each stream's calls go to its own shared origin connection.
  BorrowedStreams client_;
  asio::steady_timer client_signal_;
  asio::steady_timer streams_done_;
  asio::steady_timer watchdog_;
  const std::string key_;  // host:port, as the pool keys its connections
  const bool shareable_;   // not reached by address: the worker's shared connections serve it
  std::shared_ptr<H2Origin> own_;  // a connection only this client may use, while it has one
  bool dialling_ = false;
  std::size_t waiting_for_origin_ = 0;  // streams waiting for a connection to take them
  std::map<h2::StreamId, std::unique_ptr<Stream>> streams_;
  std::size_t running_streams_ = 0;
  std::size_t websockets_ = 0;  // streams relaying a WebSocket now
  // A line says the connection was revoked (a stream's end line, or the line of a stream whose
  // wait the revocation ended).
  bool revocation_logged_ = false;
  // The transport an MCP server answered this connection in last (proxy/mcp/answers.hpp): the
  // gate answers a refused call in it.
  std::optional<mcp::Transport> mcp_usual_;
  bool stopping_ = false;
  bool timed_out_ = false;
  std::string connection_problem_;
  std::chrono::seconds idle_limit_ = kExchangeIdleWithoutTimeout;
  clock::time_point last_activity_ = clock::now();
  std::uint64_t bytes_up_ = 0;
  std::uint64_t bytes_down_ = 0;
};

}  // namespace

asio::awaitable<InspectedRequestsEnd> serve_inspected_h2(SessionContext& context,
                                                         InspectedOrigin& origin) {
  H2Connection connection(context, origin);
  co_return co_await connection.serve();
}

}  // namespace sandgate::session
