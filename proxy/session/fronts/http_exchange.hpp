// What the two directions of one plain-HTTP exchange share (http_forward.cpp runs them): the
// connection's sockets and buffers, the upstream kept between requests, the parsers and the
// exchange's state machine (http_exchange_state.hpp). The directions themselves live in
// http_request_side.cpp (client to origin) and http_response_side.cpp (origin to client).
//
// Everything runs on the session's worker thread; the coroutines below complete on the client
// socket's executor, and end (with the state saying how) when the other direction or the
// watchdog cancels their sockets' operations.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/session/exchange/h1_over_h2_upstream.hpp"
#include "proxy/session/exchange/pipeline/exchange_front.hpp"
#include "proxy/session/exchange/secrets_stage.hpp"
#include "proxy/session/fronts/http_exchange_state.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::session {

// The bodies stream through pieces of this size, so neither is ever held whole.
constexpr std::size_t kBodyPiece = 64 * 1024;

// A body piece, taken from its thread's few spare ones and given back when the exchange is
// done. A fresh block per body was zero-filled and, freed at the top of the heap, handed back
// to the kernel and faulted in again by the next one: over half of the gate's CPU per kept-alive
// inspected request (bench/results/2026-11-27-inspection/). At most kSparePieces stay spare per
// thread, so a burst of bodies leaves no more than 2 MiB behind.
class BodyPiece {
 public:
  static constexpr std::size_t kSparePieces = 32;
  BodyPiece();
  ~BodyPiece();
  BodyPiece(const BodyPiece&) = delete;
  BodyPiece& operator=(const BodyPiece&) = delete;
  char* data() const { return block_.get(); }

 private:
  std::unique_ptr<char[]> block_;
};
constexpr std::uint32_t kResponseHeadLimit = 64 * 1024;
// What the gate holds of an origin's bytes that the parser has not taken yet: a response head
// (at most kResponseHeadLimit), a chunk header line, or a trailer section. Beast 1.81 has no
// limit of its own on chunk extensions and trailers; the buffer's maximum is that limit (the
// read fails with buffer_overflow instead of growing).
constexpr std::size_t kUpstreamBufferLimit = kResponseHeadLimit + 16 * 1024;
// Interim responses passed on per request: an origin that sends nothing else never finishes.
constexpr int kMaxInterimResponses = 32;

using BodyRequestParser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;
using BodyResponseParser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;
using RequestWriter = boost::beast::http::request_serializer<boost::beast::http::buffer_body>;
using ResponseWriter = boost::beast::http::response_serializer<boost::beast::http::buffer_body>;

class InspectedOrigin;

// The upstream connection of a client connection, kept between its requests.
struct Upstream {
  // Set when the requests come from an inspected connection (inspected_connection.hpp): their
  // one origin, reached over TLS.
  InspectedOrigin* inspected = nullptr;
  std::string key;                          // "host:port" it was dialled for
  std::string address;                      // the address connected to, for the log
  std::optional<rules::IpAddress> dialled;  // the checked address of a name, for a reload
  boost::beast::flat_buffer buffer{kUpstreamBufferLimit};
  bool reusable = false;
  // Whether another client may be given this connection once this one is done with it
  // (origin_pool.hpp); see shareable_after() in http_forward.cpp for what makes it private.
  bool shareable = true;
  // Secured a moment ago by the tunnel and not used yet (an inspected connection's first
  // upstream): idle by construction. A peek at its socket would see the origin's TLS session
  // tickets and take it for a connection gone stale.
  bool fresh = false;
  // When the origin chose h2 (an inspected one): the HTTP/2 connection this client's requests go
  // on first (the tunnel's, or one dialled since; shared with the worker's other clients unless
  // reached by address), and the stream of the exchange under way, which context.upstream_stream
  // reads and writes (exchange/h1_over_h2_upstream.hpp). context.upstream is then not connected.
  std::shared_ptr<H2Origin> h2;
  std::unique_ptr<exchange::H1OverH2Upstream> over_h2;
  // The transport an MCP server answered this connection in last (proxy/mcp/answers.hpp): the
  // gate answers a refused call in it.
  std::optional<mcp::Transport> mcp_usual;
  // What every exchange of the client connection carried, heads included.
  std::uint64_t carried_up = 0;
  std::uint64_t carried_down = 0;
};

// With no idle_timeout set, an HTTP exchange (plain or inspected) on which nothing moves either
// way for this long is ended, as nginx's client_body_timeout ends a stalled body: a client that
// stops mid-body would otherwise hold the gate's buffers (and, inspected, two TLS sessions) for
// ever. Tunnels stay unbounded (an SSH session may idle for hours); idle_timeout, when set, is
// the bound of both.
inline constexpr std::chrono::seconds kExchangeIdleWithoutTimeout{300};

// A request body must come at kBodyMinRate on average once it has taken kBodyGrace (or the
// exchange's idle limit, when shorter) of the time the gate spent waiting for it, as Apache's
// mod_reqtimeout asks by default (`body=20,MinRate=500`): a client that trickles a byte now and
// then, never idle long enough for the idle bound, would otherwise hold its connection, the
// gate's buffers and (inspected) two TLS sessions for as long as it likes. Only the time spent
// waiting for the client counts: an origin that reads slowly slows nobody down here.
inline constexpr std::chrono::seconds kBodyGrace{60};
inline constexpr std::uint64_t kBodyMinRate = 500;  // bytes per second

// The most of a request body the gate reads before sending its head (to sign a SigV4 request
// again: the signature covers the body's hash), per request (exchange/secrets_stage.hpp) and for
// all requests at once: a command that starts many such bodies and never ends them holds no more
// of the gate's memory. The read has kReadAheadDeadline at most, whatever the idle limit.
using exchange::kSignedBodyLimit;
inline constexpr std::size_t kReadAheadTotal = 64 * 1024 * 1024;
inline constexpr std::chrono::seconds kReadAheadDeadline{60};

// Bytes of kReadAheadTotal held by one exchange, given back when it goes.
class ReadAheadShare {
 public:
  ReadAheadShare() = default;
  ~ReadAheadShare();
  ReadAheadShare(const ReadAheadShare&) = delete;
  ReadAheadShare& operator=(const ReadAheadShare&) = delete;
  // Takes `bytes` more of the total; false (nothing taken) when they are not left.
  bool take(std::size_t bytes);

 private:
  std::size_t held_ = 0;
};

// One exchange: what both directions read and write. The state machine holds how it is going;
// the rest is its fixed inputs and the I/O both sides use.
struct Exchange {
  Exchange(SessionContext& c, Upstream& u, boost::beast::flat_buffer& b, BodyRequestParser& r,
           RequestWriter& w)
      : context(c),
        upstream(u),
        client_buffer(b),
        request(r),
        request_writer(w),
        watchdog(c.client.get_executor()) {}

  SessionContext& context;
  Upstream& upstream;
  boost::beast::flat_buffer& client_buffer;
  BodyRequestParser& request;
  RequestWriter& request_writer;
  std::string where;  // "host:port", for sentences
  // The host and port the request was admitted for: what its budget lines and questions name
  // (decided once; the connection's registered destination may be another, an address).
  rules::Host host;
  std::uint16_t port = 0;
  std::string_view method;  // the request's, for the lines a question writes
  bool head_request = false;
  // The request carried a body; its Authorization fields authenticate it alone (see
  // shareable_after() in http_forward.cpp).
  bool request_had_body = false;
  bool per_request_auth = true;
  bool client_http11 = true;
  bool request_keep_alive = true;
  bool websocket = false;  // the client asked for a WebSocket upgrade
  // The whole request body, read before the head went (read_body_ahead); sent as it is.
  std::string body_read_ahead;
  bool body_was_read_ahead = false;
  ReadAheadShare read_ahead_share;
  // How long nothing may move either way: idle_timeout, or kExchangeIdleWithoutTimeout.
  std::chrono::seconds idle_limit = kExchangeIdleWithoutTimeout;
  // The settings of the request's arrival ask for its WebSocket's messages in the log.
  bool log_websocket_messages = false;

  // What the request pipeline's stages hand to the response (exchange/pipeline/): the
  // destination's egress budgets, heads and body bytes taken from them before they are sent; the
  // MCP stage, whose filter reads the answer of a call it judged; the secrets' real values the
  // response is cleaned of.
  exchange::ExchangeStages stages;

  ExchangeState state;
  std::optional<BodyResponseParser> response;
  std::uint64_t bytes_up = 0;    // to the origin, heads included
  std::uint64_t bytes_down = 0;  // to the client, heads included

  std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();
  int running = 2;  // directions still going; the last one stops the watchdog
  // The request side waits for the client to leave while the response is awaited (see
  // send_request_body); the response side cancels that wait when it ends.
  bool watching_client = false;
  boost::asio::steady_timer watchdog;

  void touch() { last_activity = std::chrono::steady_clock::now(); }
  void direction_done() {
    if (--running == 0) {
      watchdog.cancel();
    }
  }
  // Cancels both sockets' pending operations: the other direction (or the watchdog) ended it.
  void cancel_both();
};

// The origin failed (an operation on the upstream ended with `error`): reported to the state as
// `reason` and `sentence`, or, when the upstream says why itself (a stream of an HTTP/2
// connection: exchange/h1_over_h2_upstream.hpp, stream_failure_report()), as it says: the
// client's answer.
void origin_failed(Exchange& x, const boost::system::error_code& error, rules::Reason reason,
                   std::string sentence);

// The exchange ends at a budget's stop (the state's budget_spent, with `extra` after its
// sentence).
void budget_spent(Exchange& x, budget::Stop stop, std::string_view extra = {});

// Reads the whole request body into x.body_read_ahead, at most `limit` bytes, with the idle and
// rate bounds of send_request_body. False when it could not (reported to the state: too large,
// malformed, the client gone or too slow). `keep_first`: a longer body is not refused but read
// no further, its first `limit` bytes kept for the stage that judges it (which answers it).
boost::asio::awaitable<bool> read_body_ahead(Exchange& x, std::size_t limit,
                                             bool keep_first = false);

// Writes `100 Continue` to the client when `send_continue` (then clears it): before the gate
// reads a body it holds back from the origin. False when the client could not take it.
boost::asio::awaitable<bool> answer_continue(Exchange& x, bool& send_continue);

// The gate's own answer to a request a stage judged (the MCP stage's: a refused call, a body it
// cannot read), as the complete response to it: nothing went upstream. The client connection
// goes on when its whole request was read.
boost::asio::awaitable<void> write_gate_answer(Exchange& x, const mcp::GateAnswer& answer);

// Client to origin: the request body, piece by piece, re-framed by the serializer (chunked
// stays chunked, Content-Length stays exact); then, until the response side ends, a watch for
// the client leaving before its response began. Reports to x.state.
boost::asio::awaitable<void> send_request_body(Exchange& x);

// Origin to client: interim responses, then the final head and its body piece by piece; or the
// 101 of a WebSocket upgrade (left to the caller). Reports to x.state.
boost::asio::awaitable<void> relay_response(Exchange& x);

// Writes a response head (interim, final or 101) to the client; false when that failed.
boost::asio::awaitable<bool> write_response_head(
    Exchange& x, boost::beast::http::response<boost::beast::http::buffer_body>& head);

// Ends the exchange (x.state.timed_out(), both sockets cancelled) when neither direction moved
// a byte for `idle`; returns when both directions are done.
boost::asio::awaitable<void> watch_idle(Exchange& x, std::chrono::seconds idle);

// Host from the URL, as the first field (where RFC 9112 section 3.2 wants user agents to put
// it), whatever Host the client sent.
void set_host_first(boost::beast::http::fields& fields, std::string_view authority);

// A Beast parse error (the peer sent something that is not HTTP/1.1), as opposed to the
// connection ending or failing.
bool is_http_parse_error(const boost::system::error_code& error);

}  // namespace sandgate::session
