// The response side of a plain-HTTP exchange: interim responses, the final head with framing the
// client can trust, and the body, from the origin to the client; and the idle watchdog over both
// directions. See http_exchange.hpp.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/secrets/redaction.hpp"
#include "proxy/secrets/request_secrets.hpp"
#include "proxy/session/exchange/pipeline/response_stages.hpp"
#include "proxy/session/exchange/websocket_handshake.hpp"
#include "proxy/session/fronts/http_exchange.hpp"
#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/wire/http_head.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using clock = std::chrono::steady_clock;
using namespace asio::experimental::awaitable_operators;

// How long a bound host's response may pause before the bytes its redaction holds back (a tail
// that only might begin a secret's echo) go to the client anyway: short against the gaps of a
// streamed reply, long against the gaps inside one burst.
constexpr std::chrono::milliseconds kRedactionPause{20};
// How much of a response from a bound host that keeps coming is gathered before it is cleaned and
// passed on (less when the origin has to be waited for).
constexpr std::size_t kGatherBeforePass = 16 * 1024;

// The first coding of a response's Content-Encoding other than identity, or of its
// Transfer-Encoding other than chunked; "" when it has none.
std::string compression_of(const http::response<http::buffer_body>& response) {
  for (const auto& [field, plain] : {std::pair{http::field::content_encoding, "identity"},
                                     std::pair{http::field::transfer_encoding, "chunked"}}) {
    const auto [first, last] = response.equal_range(field);
    for (auto header = first; header != last; ++header) {
      if (std::string coding = secrets::coding_other_than(header->value(), plain);
          !coding.empty()) {
        return coding;
      }
    }
  }
  return {};
}

// A response head's size as it is written.
std::uint64_t head_bytes(const http::response<http::buffer_body>& head) {
  std::ostringstream serialized;
  serialized << head.base();
  return serialized.str().size();
}

// What the MCP stage reads of an answer's head (exchange/mcp_exchange.hpp).
exchange::McpExchange::AnswerHead mcp_answer_head(const BodyResponseParser& parser) {
  const auto& response = parser.get();
  exchange::McpExchange::AnswerHead answer;
  answer.status = response.result_int();
  answer.content_type = response[http::field::content_type];
  answer.content_types = response.count(http::field::content_type);
  answer.coding = compression_of(response);
  answer.has_body = !parser.is_done();
  return answer;
}

// Cleans a response head from a host masked secrets are bound to of their real values (its
// reason phrase and every field's name and value), keeping each one's length.
void redact_head(const Exchange& x, http::response<http::buffer_body>& head) {
  if (x.stages.redactions == nullptr) {
    return;
  }
  std::string reason(head.reason());
  if (secrets::redact(reason, *x.stages.redactions) > 0) {
    head.reason(reason);
  }
  std::vector<std::pair<std::string, std::string>> fields;
  bool any = false;
  for (const auto& field : head) {
    // The name too: an origin may echo a value in one (`X-Seen-<value>: 1`); letters and digits
    // replaced by letters and digits keep it a token.
    std::string name(field.name_string());
    std::string value(field.value());
    any = secrets::redact(name, *x.stages.redactions) > 0 || any;
    any = secrets::redact(value, *x.stages.redactions) > 0 || any;
    fields.emplace_back(std::move(name), std::move(value));
  }
  if (any) {
    // Rebuilt in the same order: Beast cannot change a field's value in place.
    head.clear();
    for (const auto& [name, value] : fields) {
      head.insert(name, value);
    }
  }
}

// An interim (1xx) head passed on to the client, cleaned, and taken from the budgets first: it is
// bytes towards the client like any other (an origin could otherwise send megabytes of them
// uncounted). False when the exchange ends here (reported to the state).
asio::awaitable<bool> pass_interim(Exchange& x, http::response<http::buffer_body>& head) {
  redact_head(x, head);
  strip_hop_by_hop(head, false);
  add_via(head);
  head.version(11);
  if (x.stages.budget.active()) {
    if (auto stop =
            co_await x.stages.budget.take_whole_or_ask(rules::BudgetKind::down, head_bytes(head))) {
      budget_spent(x, std::move(*stop));
      co_return false;
    }
  }
  const bool written = co_await write_response_head(x, head);
  if (!written) {
    x.state.client_write_failed();
    co_return false;
  }
  co_return true;
}

// Reads interim responses until the final (or 101) head has arrived. Returns false on failure
// (reported to the state) or when the exchange was stopped.
asio::awaitable<bool> read_final_head(Exchange& x) {
  for (int interim = 0;; ++interim) {
    if (interim > kMaxInterimResponses) {
      x.state.origin_failed(rules::Reason::bad_response,
                            x.where + " sent more than " + std::to_string(kMaxInterimResponses) +
                                " interim (1xx) responses to one request.");
      co_return false;
    }
    if (x.state.response_should_stop()) {
      co_return false;  // stopped by the other direction or the watchdog
    }
    x.response.emplace();
    BodyResponseParser& parser = *x.response;
    parser.header_limit(kResponseHeadLimit);
    parser.body_limit(boost::none);
    if (x.head_request) {
      parser.skip(true);  // a response to HEAD has no body, whatever its framing fields say
    }
    auto [error, read] = co_await http::async_read_header(x.context.upstream_stream,
                                                          x.upstream.buffer, parser, use_tuple);
    x.touch();
    if (error) {
      if (error == http::error::header_limit || error == http::error::buffer_overflow) {
        x.state.origin_failed(rules::Reason::bad_response,
                              x.where + " sent a response head larger than 64 KiB.");
      } else if (is_http_parse_error(error)) {
        x.state.origin_failed(
            rules::Reason::bad_response,
            x.where + " sent a response that is not valid HTTP/1.1: " + error.message() + ".");
      } else {
        origin_failed(
            x, error, rules::Reason::upstream_closed,
            x.where + " closed the connection before its response head: " + error.message() + ".");
      }
      co_return false;
    }
    auto& head = parser.get();
    const unsigned status = head.result_int();
    if (status == 101) {
      if (!x.websocket || !has_token(head[http::field::upgrade], "websocket")) {
        x.state.origin_failed(rules::Reason::bad_response,
                              x.where + " switched protocols without a WebSocket upgrade.");
        co_return false;
      }
      if (x.upstream.inspected != nullptr) {
        // Cleaned first: the refusal below quotes the head in the gate's own answer.
        redact_head(x, head);
        // The gate relays this WebSocket frame by frame: only a handshake that answers the
        // request as the gate sent it (its key, no extension) is one it can read.
        if (auto problem = exchange::upgrade_problem(x.request.get(), head)) {
          x.state.origin_failed(
              rules::Reason::bad_response,
              x.where + " answered the WebSocket upgrade wrongly: " + *problem + ".");
          co_return false;
        }
      }
      x.state.upgraded();
      co_return true;
    }
    if (status >= 200) {
      co_return true;
    }
    // 1xx: pass it on to HTTP/1.1 clients (HTTP/1.0 ones cannot read it), then read on.
    if (x.client_http11) {
      const bool passed = co_await pass_interim(x, head);
      if (!passed) {
        co_return false;
      }
    }
  }
}

// Reads the next piece of the response body into `into` (room for `room` bytes, kBodyPiece at
// most). Returns how many bytes came (0 for a chunk header alone), or nothing when the origin
// broke off or sent an oversized chunk header or trailer (reported to the state).
asio::awaitable<std::optional<std::size_t>> read_body_piece(Exchange& x, BodyResponseParser& parser,
                                                            char* into,
                                                            std::size_t room = kBodyPiece) {
  auto& body = parser.get().body();
  body.data = into;
  body.size = room;
  auto [error, read] = co_await http::async_read_some(x.context.upstream_stream, x.upstream.buffer,
                                                      parser, use_tuple);
  if (error == http::error::need_buffer) {
    error = {};
  }
  if (error == http::error::buffer_overflow) {
    // A chunk header or trailer section that would not end: the gate does not hold more.
    x.state.response_oversized();
    co_return std::nullopt;
  }
  if (error) {
    // The origin broke off mid-response. An upstream that says why itself (a stream of an
    // HTTP/2 connection) has it on the end line.
    if (auto said = exchange::stream_failure_report(error, x.where)) {
      x.state.origin_failed(said->reason, std::move(said->sentence));
    }
    co_return std::nullopt;
  }
  x.touch();
  co_return room - body.size;
}

// Writes `size` bytes at `data` as the next piece of the body to the client (`last`: the body
// ends with it). False when the client stopped taking it.
asio::awaitable<bool> send_body_piece(Exchange& x, BodyResponseParser& parser,
                                      ResponseWriter& writer, char* data, std::size_t size,
                                      bool last) {
  auto& body = parser.get().body();
  body.data = size > 0 ? data : nullptr;
  body.size = size;
  body.more = !last;
  auto [error, written] = co_await http::async_write(x.context.client_stream, writer, use_tuple);
  x.bytes_down += written;
  if (error == http::error::need_buffer) {
    error = {};
  }
  if (!error) {
    x.touch();
  }
  co_return !error;
}

// send_body_piece, as far as the egress budgets let it: a piece they end inside goes as far as
// they allow, and then, unless a person allows more (--unknown=ask), the response is cut there
// (the client gets exactly the budget, then a reset).
asio::awaitable<bool> write_body_piece(Exchange& x, BodyResponseParser& parser,
                                       ResponseWriter& writer, char* data, std::size_t size,
                                       bool last) {
  for (;;) {
    std::optional<budget::Stop> stop;
    const std::size_t allowed = x.stages.budget.take_piece(rules::BudgetKind::down, size, stop);
    if (allowed == size) {
      const bool sent = co_await send_body_piece(x, parser, writer, data, size, last);
      co_return sent;
    }
    if (allowed > 0) {
      // (Not in one condition with the test above: GCC 12 mishandles co_await in a
      // short-circuit operand.)
      const bool sent = co_await send_body_piece(x, parser, writer, data, allowed, false);
      if (!sent) {
        co_return false;
      }
    }
    data += allowed;
    size -= allowed;
    const bool more = co_await x.stages.budget.more_granted(*stop);
    if (!more) {
      budget_spent(x, std::move(*stop));
      co_return false;
    }
  }
}

// Waits up to `pause` for the origin's next bytes: true when none came (the origin paused), false
// when some did or the exchange is being stopped. Only waits: the socket's data stays where it is,
// for the read that follows (a TLS stream's read is never cancelled half-way).
asio::awaitable<bool> origin_paused(Exchange& x, std::chrono::milliseconds pause) {
  if (x.upstream.over_h2 != nullptr) {
    co_return co_await x.upstream.over_h2->paused(pause);
  }
  asio::steady_timer timer(x.context.upstream.get_executor(), pause);
  const auto first =
      co_await (x.context.upstream.async_wait(asio::ip::tcp::socket::wait_read, use_tuple) ||
                timer.async_wait(use_tuple));
  co_return first.index() == 1 && !std::get<0>(std::get<1>(first));
}

// Whether the origin has sent bytes the exchange has not read yet: held by the TLS layer
// (decrypted, or a record read ahead) or waiting on the socket. (What is in the exchange's own
// buffer is parsed by parse_buffered() instead: it may be only the start of the next chunk.)
bool origin_has_more(Exchange& x) {
  if (x.upstream.over_h2 != nullptr) {
    return x.upstream.over_h2->has_unread();
  }
  if (x.upstream.inspected != nullptr && x.upstream.inspected->origin_bytes_held()) {
    return true;
  }
  boost::system::error_code ignored;
  return x.context.upstream.available(ignored) > 0;
}

// Parses what the exchange's buffer already holds into up to `room` bytes of body at `into`,
// without reading: how many it gave; nothing when the response is malformed (reported).
std::optional<std::size_t> parse_buffered(Exchange& x, BodyResponseParser& parser, char* into,
                                          std::size_t room) {
  auto& body = parser.get().body();
  body.data = into;
  body.size = room;
  while (x.upstream.buffer.size() > 0 && body.size > 0 && !parser.is_done()) {
    boost::system::error_code error;
    const std::size_t used = parser.put(x.upstream.buffer.data(), error);
    x.upstream.buffer.consume(used);
    if (error == http::error::need_more || error == http::error::need_buffer) {
      if (used == 0) {
        break;  // a part of a chunk header, or the body buffer is full
      }
      continue;
    }
    if (error == http::error::buffer_overflow) {
      x.state.response_oversized();
      return std::nullopt;
    }
    if (error) {
      x.state.origin_failed(rules::Reason::bad_response,
                            x.where + " sent a malformed body: " + error.message() + ".");
      return std::nullopt;
    }
    if (used == 0) {
      break;
    }
  }
  return room - body.size;
}

// relay_body for a host masked secrets are bound to: each piece is cleaned of their real values
// (redaction.hpp) and goes on at once but for a tail that could still become a value's echo;
// that tail goes with the next piece, or when the origin pauses (StreamRedaction::on_pause), so
// a streamed reply streams.
asio::awaitable<bool> relay_redacted_body(Exchange& x, BodyResponseParser& parser,
                                          ResponseWriter& writer) {
  secrets::StreamRedaction redaction(*x.stages.redactions);
  std::vector<char> buffer(redaction.front_limit() + kBodyPiece);
  // Whether the last pass took everything the exchange could read without waiting: only then
  // does a quiet socket mean the origin paused.
  bool drained = true;
  for (bool more = !parser.is_done(); more;) {
    if (x.state.response_should_stop()) {
      co_return false;
    }
    if (redaction.carried() > redaction.front_limit()) {
      // StreamRedaction keeps every hold within its window; a read past the buffer is never
      // risked should that ever fail.
      x.state.origin_failed(rules::Reason::internal_error,
                            "the gate's redaction of " + x.where + " held more than its window.");
      co_return false;
    }
    if (drained && redaction.held() > 0 && !parser.is_done() && !origin_has_more(x)) {
      const bool paused = co_await origin_paused(x, kRedactionPause);
      if (paused) {
        const auto ready = redaction.on_pause();
        if (ready.size > 0) {
          const bool sent = co_await write_body_piece(x, parser, writer, buffer.data() + ready.from,
                                                      ready.size, false);
          if (!sent) {
            co_return false;
          }
        }
        redaction.to_front(buffer.data());
      }
    }
    // What can be read at once is gathered into one pass (up to kGatherBeforePass): an origin
    // sending a byte a record would otherwise cost a pass over the whole window per byte. A read
    // that would wait is not started while data is in hand: it would hold that data back until
    // the origin's next piece (one event behind, on a stream of events).
    std::size_t fresh = 0;
    drained = false;
    while (!parser.is_done()) {
      const auto parsed = parse_buffered(x, parser, buffer.data() + redaction.carried() + fresh,
                                         kBodyPiece - fresh);
      if (!parsed) {
        co_return false;
      }
      fresh += *parsed;
      if (fresh >= kGatherBeforePass || parser.is_done()) {
        break;
      }
      if (fresh > 0 && !origin_has_more(x)) {
        drained = true;
        break;
      }
      const auto read = co_await read_body_piece(
          x, parser, buffer.data() + redaction.carried() + fresh, kBodyPiece - fresh);
      if (!read) {
        co_return false;
      }
      fresh += *read;
      if (fresh >= kGatherBeforePass) {
        break;
      }
    }
    const bool last = parser.is_done();
    const auto ready = redaction.pass(buffer.data(), fresh, last);
    more = !last;
    if (ready.size > 0 || last) {
      const bool sent = co_await write_body_piece(x, parser, writer, buffer.data() + ready.from,
                                                  ready.size, last);
      if (!sent) {
        co_return false;
      }
    }
    redaction.to_front(buffer.data());
  }
  co_return true;
}

// The final response's body, piece by piece, after its head. Returns whether all of it reached
// the client; an oversized chunk header or trailer is reported to the state.
asio::awaitable<bool> relay_body(Exchange& x, BodyResponseParser& parser, ResponseWriter& writer) {
  if (x.stages.redactions != nullptr) {
    const bool complete = co_await relay_redacted_body(x, parser, writer);
    co_return complete;
  }
  std::optional<BodyPiece> piece;
  if (!parser.is_done()) {
    piece.emplace();
  }
  while (!parser.is_done()) {
    if (x.state.response_should_stop()) {
      co_return false;
    }
    const auto read = co_await read_body_piece(x, parser, piece->data());
    if (!read) {
      co_return false;
    }
    const bool last = parser.is_done();
    if (*read == 0 && !last) {
      continue;  // a chunk header, no data yet
    }
    if (!co_await write_body_piece(x, parser, writer, piece->data(), *read, last)) {
      co_return false;
    }
  }
  co_return true;
}

// Writes an answer the gate made (an MCP answer filtered, merged or replaced) after `response`'s
// head: its length known, taken from the budgets with its head. Reported to the state.
asio::awaitable<void> send_made_answer(Exchange& x, BodyResponseParser& parser, std::string body,
                                       bool origin_keep_alive) {
  auto& response = parser.get();
  const bool keeps_client = x.request_keep_alive && x.request.is_done() && !x.state.client_failed();
  response.chunked(false);
  response.content_length(body.size());
  response.keep_alive(keeps_client);
  if (x.stages.budget.active()) {
    const exchange::HeadCost cost{head_bytes(response), body.size()};
    if (auto stop = co_await exchange::take_head(x.stages.budget, rules::BudgetKind::down, cost)) {
      budget_spent(x, std::move(*stop));
      co_return;
    }
  }
  x.state.response_started(keeps_client);
  ResponseWriter writer{response};
  auto [head_error, head_written] =
      co_await http::async_write_header(x.context.client_stream, writer, use_tuple);
  x.bytes_down += head_written;
  x.touch();
  // (Not in one expression with the test: GCC 12 mishandles co_await in a short-circuit operand.)
  bool complete = false;
  if (!head_error) {
    complete = co_await write_body_piece(x, parser, writer, body.data(), body.size(), true);
  }
  x.state.response_ended(complete, origin_keep_alive);
}

// Reads the rest of the origin's body: whole into `into` (at most `limit` bytes; false past it,
// or when the origin broke off), or dropped when `into` is null.
asio::awaitable<bool> read_whole_body(Exchange& x, BodyResponseParser& parser, std::string* into,
                                      std::size_t limit) {
  BodyPiece piece;
  while (!parser.is_done()) {
    if (x.state.response_should_stop()) {
      co_return false;
    }
    const auto read = co_await read_body_piece(x, parser, piece.data());
    if (!read) {
      co_return false;
    }
    if (into != nullptr && into->size() + *read > limit) {
      co_return false;
    }
    if (into != nullptr) {
      into->append(piece.data(), *read);
    }
  }
  co_return true;
}

// An MCP server's event stream, event by event through the filter (lists filtered, the gate's
// answers first), chunked to the client: lengths change. A message the filter cannot read cuts
// the stream.
asio::awaitable<void> relay_mcp_events(Exchange& x, BodyResponseParser& parser,
                                       exchange::McpAnswer& answer) {
  auto& response = parser.get();
  const bool keeps_client =
      x.request_keep_alive && x.request.is_done() && x.client_http11 && !x.state.client_failed();
  response.content_length(boost::none);
  response.chunked(x.client_http11);  // HTTP/1.0: to the end of the stream
  response.keep_alive(keeps_client);
  if (x.stages.budget.active()) {
    const exchange::HeadCost cost{head_bytes(response), std::nullopt};
    if (auto stop = co_await exchange::take_head(x.stages.budget, rules::BudgetKind::down, cost)) {
      budget_spent(x, std::move(*stop));
      co_return;
    }
  }
  x.state.response_started(keeps_client);
  ResponseWriter writer{response};
  auto [head_error, head_written] =
      co_await http::async_write_header(x.context.client_stream, writer, use_tuple);
  x.bytes_down += head_written;
  x.touch();
  bool ok = !head_error;
  BodyPiece piece;
  while (ok && !parser.is_done() && !x.state.response_should_stop()) {
    const auto read = co_await read_body_piece(x, parser, piece.data());
    if (!read) {
      ok = false;
      break;
    }
    auto out = answer.pass_events(std::string_view(piece.data(), *read));
    if (!out) {
      ok = false;  // cut: the client sees the stream break, never a message the gate misread
      break;
    }
    if (!out->empty()) {
      ok = co_await write_body_piece(x, parser, writer, out->data(), out->size(), false);
    }
  }
  if (ok && parser.is_done()) {
    std::string tail = answer.end_events();
    ok = co_await write_body_piece(x, parser, writer, tail.data(), tail.size(), true);
  }
  x.state.response_ended(ok && parser.is_done(), parser.keep_alive());
}

// The answer of a request the MCP stage judged (or of its GET stream), as its filter's mode
// says: read whole and filtered, relayed event by event, or replaced by the gate's own.
asio::awaitable<void> relay_mcp_response(Exchange& x, BodyResponseParser& parser,
                                         exchange::McpAnswer& answer,
                                         mcp::ResponseFilter::Mode mode) {
  auto& response = parser.get();
  strip_hop_by_hop(response, false);
  add_via(response);
  response.version(11);
  if (mode == mcp::ResponseFilter::Mode::sse) {
    co_await relay_mcp_events(x, parser, answer);
    co_return;
  }
  std::string body;
  const bool replace = mode == mcp::ResponseFilter::Mode::replace;
  const FieldSnapshot head_fields = snapshot_fields(response);
  if (!co_await read_whole_body(x, parser, replace ? nullptr : &body, answer.limit())) {
    const Refusal unread = answer.unread();
    x.state.origin_failed(unread.reason, unread.sentence);
    co_return;
  }
  // The head goes after the body: a trailer the parser added to it was never read by the
  // filter (nor cleaned of secrets), and does not go.
  restore_fields(response, head_fields);
  auto made = answer.finish(body);
  if (!made) {
    x.state.origin_failed(made.error().reason, made.error().sentence);
    co_return;
  }
  if (made->replaced) {
    response.result(made->answer.status);
    response.erase(http::field::content_type);
    response.erase(http::field::content_encoding);  // the gate's own body, or none
    if (!made->answer.content_type.empty()) {
      response.set(http::field::content_type, made->answer.content_type);
    }
  }
  body = std::move(made->answer.body);
  co_await send_made_answer(x, parser, std::move(body), parser.keep_alive());
}

// An MCP server's answer to a call the stage judged (or to its GET stream), through the filter
// (exchange/pipeline/response_stages.hpp). True when the filter took the answer over (relayed,
// or refused); false when it passes as it is.
asio::awaitable<bool> relay_filtered(Exchange& x, BodyResponseParser& parser) {
  if (!x.stages.mcp.filters_response()) {
    co_return false;
  }
  exchange::McpAnswer answer(x.stages, x.where);
  std::optional<Refusal> unreadable;
  const auto mode = answer.start(mcp_answer_head(parser), unreadable, x.upstream.mcp_usual);
  if (unreadable) {
    x.state.origin_failed(unreadable->reason, std::move(unreadable->sentence));
    co_return true;
  }
  if (mode == mcp::ResponseFilter::Mode::pass) {
    co_return false;
  }
  co_await relay_mcp_response(x, parser, answer, mode);
  co_return true;
}

// The final head (framing the client can trust) and its body.
asio::awaitable<void> relay_final_response(Exchange& x) {
  BodyResponseParser& parser = *x.response;
  auto& response = parser.get();

  // Framing the client can trust: one Content-Length, or chunked, or (for codings that do not
  // end in chunked) the end of the stream. Both at once is refused, as in requests.
  const bool has_length = response.count(http::field::content_length) > 0;
  const bool has_coding = response.count(http::field::transfer_encoding) > 0;
  if (has_length && has_coding && !parser.is_done()) {
    x.state.origin_failed(rules::Reason::bad_response,
                          x.where + " sent both Content-Length and Transfer-Encoding.");
    co_return;
  }
  // Cleaned first: what follows may quote the head in the gate's own answer.
  redact_head(x, response);
  if (auto refused = exchange::refuse_unsearchable(
          x.stages, response.result_int(), response[http::field::content_type],
          x.stages.carried_secret ? compression_of(response) : std::string(), !parser.is_done(),
          x.where)) {
    x.state.origin_failed(refused->reason, std::move(refused->sentence));
    co_return;
  }
  const bool filtered = co_await relay_filtered(x, parser);
  if (filtered) {
    co_return;
  }
  const bool to_eof = parser.need_eof();
  const bool unchunk = !x.client_http11 && parser.chunked();  // HTTP/1.0 cannot read chunks
  const bool keeps_client = x.request_keep_alive && !to_eof && !unchunk && x.request.is_done() &&
                            !x.state.client_failed();
  strip_hop_by_hop(response, false);
  add_via(response);
  if (response.count(http::field::content_length) > 1 && parser.content_length()) {
    response.content_length(*parser.content_length());  // one field, even if sent twice
  }
  if (unchunk) {
    response.chunked(false);
  }
  response.version(11);
  response.keep_alive(keeps_client);
  if (keeps_client && !x.client_http11) {
    response.set(http::field::connection, "keep-alive");
  }

  if (x.stages.budget.active()) {
    // The head, with a body of known length, is taken from the budgets whole: a response that
    // does not fit is answered 429 instead, before any of it reaches the client. Under
    // --unknown=ask a person is asked for what the response lacks: a yes sends it.
    const auto length = parser.content_length();
    exchange::HeadCost cost{head_bytes(response), std::nullopt};
    if (length || parser.is_done()) {
      cost.body_length = length.value_or(0);
    }
    if (auto stop = co_await exchange::take_head(x.stages.budget, rules::BudgetKind::down, cost)) {
      budget_spent(x, std::move(*stop));
      co_return;
    }
  }
  x.state.response_started(keeps_client);
  ResponseWriter writer{response};
  auto [head_error, head_written] =
      co_await http::async_write_header(x.context.client_stream, writer, use_tuple);
  x.bytes_down += head_written;
  x.touch();
  // (Not in one expression with the test: GCC 12 mishandles co_await in a short-circuit operand.)
  bool complete = false;
  if (!head_error) {
    complete = co_await relay_body(x, parser, writer);
  }
  x.state.response_ended(complete && parser.is_done(), parser.keep_alive());
}

}  // namespace

void origin_failed(Exchange& x, const boost::system::error_code& error, rules::Reason reason,
                   std::string sentence) {
  if (auto said = exchange::stream_failure_report(error, x.where)) {
    x.state.origin_failed(said->reason, std::move(said->sentence));
  } else {
    x.state.origin_failed(reason, std::move(sentence));
  }
}

asio::awaitable<bool> write_response_head(Exchange& x, http::response<http::buffer_body>& head) {
  ResponseWriter writer{head};
  auto [error, written] =
      co_await http::async_write_header(x.context.client_stream, writer, use_tuple);
  x.bytes_down += written;
  x.touch();
  co_return !error;
}

asio::awaitable<void> relay_response(Exchange& x) {
  const bool have_head = co_await read_final_head(x);
  if (have_head && x.state.response() != ResponsePhase::upgraded) {
    co_await relay_final_response(x);
  }
  // An origin that answered (or failed) before the upload ended: the rest of the body has
  // nowhere to go, so stop reading it; the client connection is not kept.
  if (x.state.abandon_request(x.request.is_done())) {
    x.cancel_both();
  }
  if (x.watching_client) {
    // The request side waits for the client to leave before a response began; there is
    // nothing of this side's own pending on the client now.
    boost::system::error_code ignored;
    x.context.client.cancel(ignored);
  }
  x.direction_done();
}

asio::awaitable<void> watch_idle(Exchange& x, std::chrono::seconds idle) {
  for (;;) {
    x.watchdog.expires_at(x.last_activity + idle);
    auto [error] = co_await x.watchdog.async_wait(use_tuple);
    if (error || x.running == 0) {
      co_return;
    }
    if (clock::now() >= x.last_activity + idle) {
      x.state.timed_out();
      x.cancel_both();
      co_return;
    }
  }
}

}  // namespace sandgate::session
