// The request side of a plain-HTTP exchange: the request body from the client to the origin,
// and the rewriting of the request head's Host. See http_exchange.hpp.
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/fronts/http_exchange.hpp"
#include "proxy/session/wire/http_head.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

// The whole request has gone upstream and nothing reads the client while the origin thinks: a
// client that leaves then (a timeout of its own, say) would keep its connection and the
// upstream open, and counted against max_connections, for as long as the origin stays silent.
// So the client socket is watched: the end of its stream (or an error) before the response
// began means it left, and the exchange ends (as a forward proxy's usual "half-closed clients
// off": a client that only half-closed gets no answer). Bytes mean a pipelined request, left
// for the next head read. The response side cancels the watch when it ends.
asio::awaitable<void> watch_client_leaving(Exchange& x) {
  while (x.state.response() == ResponsePhase::awaiting_head && !x.state.request_should_stop()) {
    x.watching_client = true;
    auto [error] =
        co_await x.context.client.async_wait(asio::ip::tcp::socket::wait_read, use_tuple);
    x.watching_client = false;
    if (error || x.state.response() != ResponsePhase::awaiting_head ||
        x.state.request_should_stop()) {
      co_return;  // cancelled (the response side ended, the watchdog), or the response began
    }
    char byte;
    const ssize_t n = ::recv(x.context.client.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) {
      co_return;  // a pipelined request: the client is still there
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      continue;  // a spurious wake-up
    }
    // The client left: stop waiting for a response nobody will read.
    x.state.client_read_failed({});
    boost::system::error_code ignored;
    x.context.upstream.cancel(ignored);
    co_return;
  }
}

}  // namespace

bool is_http_parse_error(const boost::system::error_code& error) {
  return error.category() == http::make_error_code(http::error::bad_chunk).category() &&
         error != http::error::partial_message && error != http::error::end_of_stream;
}

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

namespace {
// The spare pieces of this thread (BodyPiece).
thread_local std::vector<std::unique_ptr<char[]>> spare_pieces;
}  // namespace

BodyPiece::BodyPiece() {
  if (spare_pieces.empty()) {
    block_ = std::make_unique_for_overwrite<char[]>(kBodyPiece);
  } else {
    block_ = std::move(spare_pieces.back());
    spare_pieces.pop_back();
  }
}

BodyPiece::~BodyPiece() {
  if (spare_pieces.size() < kSparePieces) {
    spare_pieces.push_back(std::move(block_));
  }
}

void Exchange::cancel_both() {
  boost::system::error_code ignored;
  context.client.cancel(ignored);
  context.upstream.cancel(ignored);
}

namespace {
std::atomic<std::size_t> read_ahead_held{0};  // bytes of kReadAheadTotal taken, gate-wide
}  // namespace

ReadAheadShare::~ReadAheadShare() { read_ahead_held.fetch_sub(held_); }

bool ReadAheadShare::take(std::size_t bytes) {
  std::size_t held = read_ahead_held.load();
  do {
    if (held + bytes > kReadAheadTotal) {
      return false;
    }
  } while (!read_ahead_held.compare_exchange_weak(held, held + bytes));
  held_ += bytes;
  return true;
}

asio::awaitable<bool> read_body_ahead(Exchange& x, std::size_t limit, bool keep_first) {
  auto& body = x.request.get().body();
  const std::string too_large =
      "the request is signed (SigV4) with a masked secret and its body is larger than " +
      std::to_string(limit / (1024 * 1024)) +
      " MiB without x-amz-content-sha256: the gate reads at most that much to sign it again.";
  const std::string too_many =
      "the gate already holds " + std::to_string(kReadAheadTotal / (1024 * 1024)) +
      " MiB of request bodies it reads before sending them (MCP calls to judge, SigV4 requests "
      "with masked secrets to sign again); try again later.";
  auto length = x.request.content_length();
  if (length && *length > limit && keep_first) {
    length = limit;  // the first `limit` bytes are all the stage reads
  } else if (length && *length > limit) {
    x.state.refused(rules::Reason::secret_refused, too_large);
    co_return false;
  }
  x.body_was_read_ahead = true;
  const FieldSnapshot head_fields = snapshot_fields(x.request.get());
  const auto started = std::chrono::steady_clock::now();
  const auto deadline =
      started + std::min<std::chrono::steady_clock::duration>(kReadAheadDeadline, x.idle_limit);
  const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::min<std::chrono::seconds>(kBodyGrace, x.idle_limit));
  std::string& whole = x.body_read_ahead;
  if (length) {
    // Known up front: the whole share is taken at once, and the string never grows past it.
    if (!x.read_ahead_share.take(static_cast<std::size_t>(*length))) {
      x.state.refused(rules::Reason::connection_limit, too_many);
      co_return false;
    }
    whole.reserve(static_cast<std::size_t>(*length));
  }
  while (!x.request.is_done()) {
    const std::size_t had = whole.size();
    if (had >= limit && keep_first) {
      co_return true;
    }
    if (had >= limit) {
      x.state.refused(rules::Reason::secret_refused, too_large);
      co_return false;
    }
    const std::size_t room = std::min<std::size_t>(kBodyPiece, limit - had);
    if (!length && !x.read_ahead_share.take(room)) {
      x.state.refused(rules::Reason::connection_limit, too_many);
      co_return false;
    }
    whole.resize(had + room);
    body.data = whole.data() + had;
    body.size = room;
    // Bounded by the idle limit and the read-ahead's own deadline (the watchdog does not run
    // yet), and by the body rate.
    asio::steady_timer timer(x.context.client.get_executor());
    timer.expires_at(std::min(std::chrono::steady_clock::now() + x.idle_limit, deadline));
    timer.async_wait([&x](const boost::system::error_code& error) {
      if (!error) {
        boost::system::error_code ignored;
        x.context.client.cancel(ignored);
      }
    });
    auto [error, read] = co_await http::async_read_some(x.context.client_stream, x.client_buffer,
                                                        x.request, use_tuple);
    timer.cancel();
    whole.resize(had + (room - body.size));
    if (error == http::error::need_buffer) {
      error = {};
    }
    const auto waited = std::chrono::steady_clock::now() - started;
    if (!error && !x.request.is_done() &&
        waited > grace + std::chrono::seconds(whole.size() / kBodyMinRate)) {
      x.state.body_too_slow("the request body came at less than " + std::to_string(kBodyMinRate) +
                            " bytes/s.");
      co_return false;
    }
    if (error == asio::error::operation_aborted) {
      x.state.timed_out();
      co_return false;
    }
    if (error) {
      x.state.client_read_failed(is_http_parse_error(error)
                                     ? "the request body is malformed: " + error.message() + "."
                                     : std::string());
      co_return false;
    }
    x.touch();
  }
  // The head goes after the body: a chunked body's trailer, which the parser added to it, was
  // never decided on (a second Host, a session id) and does not go.
  restore_fields(x.request.get(), head_fields);
  co_return true;
}

asio::awaitable<bool> answer_continue(Exchange& x, bool& send_continue) {
  if (!send_continue) {
    co_return true;
  }
  send_continue = false;
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  auto [error, written] =
      co_await asio::async_write(x.context.client_stream, asio::buffer(kContinue), use_tuple);
  x.bytes_down += written;
  if (error) {
    x.state.client_write_failed();
  }
  co_return !error;
}

// The MCP stage's own answer to a request it judged (a refused call, a body it cannot read), as
// the complete response to it: nothing went upstream. The client connection goes on when its
// whole request was read (a body over the limit was not: then it closes).
asio::awaitable<void> write_gate_answer(Exchange& x, const mcp::GateAnswer& answer) {
  http::response<http::string_body> reply{static_cast<http::status>(answer.status), 11};
  if (!answer.content_type.empty()) {
    reply.set(http::field::content_type, answer.content_type);
  }
  reply.body() = answer.body;
  const bool keeps_client = x.request_keep_alive && x.request.is_done();
  reply.keep_alive(keeps_client);
  add_via(reply);
  reply.prepare_payload();
  x.state.request_side_ended(x.request.is_done());
  x.state.response_started(keeps_client);
  auto [error, written] = co_await http::async_write(x.context.client_stream, reply, use_tuple);
  x.bytes_down += written;
  x.touch();
  if (error) {
    x.state.client_write_failed();
  }
  x.state.response_ended(!error, true);
}

namespace {

// Writes `size` bytes at `data` upstream as the next piece of the request body (`last`: the body
// ends with it). False when the origin stopped reading (reported to the state: it may still have
// answered, 413 say, which the other direction relays).
asio::awaitable<bool> send_request_piece(Exchange& x, char* data, std::size_t size, bool last) {
  auto& body = x.request.get().body();
  body.data = size > 0 ? data : nullptr;
  body.size = size;
  body.more = !last;
  auto [error, written] =
      co_await http::async_write(x.context.upstream_stream, x.request_writer, use_tuple);
  x.bytes_up += written;
  if (error == http::error::need_buffer) {
    error = {};
  }
  if (error) {
    x.state.origin_stopped_reading();
    co_return false;
  }
  x.touch();
  co_return true;
}

// send_request_piece, as far as the egress budgets let it: a piece they end inside goes as far
// as they allow, and then, unless a person allows more (--unknown=ask), the exchange ends there
// (the origin gets exactly the budget).
asio::awaitable<bool> write_request_piece(Exchange& x, char* data, std::size_t size, bool last) {
  for (;;) {
    std::optional<budget::Stop> stop;
    const std::size_t allowed = x.stages.budget.take_piece(rules::BudgetKind::up, size, stop);
    if (allowed == size) {
      const bool sent = co_await send_request_piece(x, data, size, last);
      co_return sent;
    }
    if (allowed > 0) {
      // (Not in one condition with the test above: GCC 12 mishandles co_await in a
      // short-circuit operand.)
      const bool sent = co_await send_request_piece(x, data, allowed, false);
      if (!sent) {
        co_return false;
      }
    }
    data += allowed;
    size -= allowed;
    const bool more = co_await x.stages.budget.more_granted(*stop);
    if (!more) {
      budget_spent(x, std::move(*stop));
      x.cancel_both();
      co_return false;
    }
  }
}

}  // namespace

asio::awaitable<void> send_request_body(Exchange& x) {
  auto& body = x.request.get().body();
  if (x.body_was_read_ahead && !x.state.request_should_stop()) {
    // Read whole before the head went (read_body_ahead): sent in one piece.
    co_await write_request_piece(x, x.body_read_ahead.data(), x.body_read_ahead.size(), true);
  }
  std::optional<BodyPiece> piece;
  if (!x.request.is_done()) {
    piece.emplace();
  }
  // The time spent waiting for the client's body and what it sent (kBodyMinRate).
  const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::min<std::chrono::seconds>(kBodyGrace, x.idle_limit));
  std::chrono::steady_clock::duration waited{};
  std::uint64_t received = 0;
  // The state is asked before each operation starts: cancel() from the other direction only
  // reaches an operation in flight, not one about to be started.
  while (!x.request.is_done() && !x.state.request_should_stop()) {
    body.data = piece->data();
    body.size = kBodyPiece;
    const auto asked = std::chrono::steady_clock::now();
    auto [read_error, read] = co_await http::async_read_some(x.context.client_stream,
                                                             x.client_buffer, x.request, use_tuple);
    waited += std::chrono::steady_clock::now() - asked;
    received += read;
    const auto allowed = grace + std::chrono::seconds(received / kBodyMinRate);
    if (!read_error && !x.request.is_done() && waited > allowed) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(waited).count();
      x.state.body_too_slow("the request body came at " +
                            std::to_string(received / std::max<std::int64_t>(seconds, 1)) +
                            " bytes/s over " + std::to_string(seconds) + " s, below " +
                            std::to_string(kBodyMinRate) + " bytes/s.");
      x.cancel_both();
      break;
    }
    if (read_error == http::error::need_buffer) {
      read_error = {};
    }
    if (read_error && x.state.request_should_stop()) {
      break;  // stopped from the other direction or by the watchdog
    }
    if (read_error) {
      // The client left or sent a broken body: the origin can give no meaningful answer now, so
      // stop waiting for one.
      x.state.client_read_failed(is_http_parse_error(read_error)
                                     ? "the request body is malformed: " + read_error.message() +
                                           "."
                                     : std::string());
      boost::system::error_code ignored;
      x.context.upstream.cancel(ignored);
      break;
    }
    x.touch();
    const std::size_t size = kBodyPiece - body.size;
    const bool last = x.request.is_done();
    if (size == 0 && !last) {
      continue;  // a chunk header, no data yet
    }
    if (x.state.request_should_stop()) {
      break;
    }
    // (A flag, not the co_await in the condition: GCC 12.)
    const bool written = co_await write_request_piece(x, piece->data(), size, last);
    if (!written) {
      break;
    }
  }
  x.state.request_side_ended(x.request.is_done());
  if (x.state.request() == RequestPhase::sent) {
    co_await watch_client_leaving(x);
  }
  x.direction_done();
}

}  // namespace sandgate::session
