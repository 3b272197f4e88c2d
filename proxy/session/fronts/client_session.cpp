// A client connection's first phase: the request head, with its size and time limits, and the
// client's token when the gate requires one.
#include "proxy/session/fronts/client_session.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <chrono>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/fault_injection.hpp"
#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/fronts/socks_session.hpp"
#include "proxy/session/graceful_close.hpp"
#include "proxy/session/open_tunnel.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "proxy/session/wire/http_target.hpp"
#include "proxy/socks/socks5_wire.hpp"
#include "rules/host.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

// Host and port for the log line of a request refused before its target was looked at; "-" when
// the target does not parse (it is never acted on, so it need not).
std::pair<std::string, std::uint16_t> target_for_log(const HeadParser& parser) {
  const auto& head = parser.get();
  if (head.method() == http::verb::connect) {
    if (auto authority = rules::parse_authority(head.target())) {
      return {authority->host.display(), authority->port};
    }
    return {"-", 0};
  }
  if (auto target = parse_http_target(head.target(), head.method() == http::verb::options)) {
    return {target->host.display(), target->port};
  }
  return {"-", 0};
}

}  // namespace

asio::awaitable<bool> authorize_request(SessionContext& context, const HeadParser& parser) {
  const std::string& token = context.settings().token;
  if (token.empty()) {
    co_return true;
  }
  const AuthResult result = check_proxy_authorization(parser.get(), token);
  if (result.check == AuthCheck::ok) {
    co_return true;
  }
  // Never a word of what was sent: a wrong token may be a right token for something else.
  rules::Reason reason = rules::Reason::auth_failed;
  std::string sentence;
  switch (result.check) {
    case AuthCheck::missing:
      reason = rules::Reason::auth_required;
      sentence =
          "this gate requires a token: send Proxy-Authorization: Basic with any user name and "
          "the gate's token as the password (a proxy URL of the form "
          "http://USER:TOKEN@HOST:PORT does this).";
      break;
    case AuthCheck::malformed:
      sentence =
          "the Proxy-Authorization field is not usable: " + std::string(result.problem) + ".";
      break;
    case AuthCheck::wrong:
      sentence = "the token in Proxy-Authorization is not this gate's token.";
      break;
    case AuthCheck::ok:
      break;
  }
  const std::pair<std::string, std::uint16_t> where = target_for_log(parser);
  boost::system::error_code ignored;
  context.upstream.close(ignored);
  co_await reply_and_log(context, reason, parser.get().method_string(), where.first, where.second,
                         sentence);
  co_return false;
}

asio::awaitable<void> reply_and_log(SessionContext& context, rules::Reason reason,
                                    std::string_view method, std::string_view host,
                                    std::uint16_t port, std::string_view sentence,
                                    std::string_view rule, DeniedAt at) {
  record_refusal(context, method, host, port,
                 {reason, std::string(sentence), std::string(rule), at});
  const std::string reply = build_reply(reason, sentence, at);
  co_await asio::async_write(context.client_stream, asio::buffer(reply), use_tuple);
  co_await close_gracefully(context.client);
}

asio::awaitable<void> reply_to_failed_head(SessionContext& context, const HeadRead& read) {
  switch (read.status) {
    case HeadRead::Status::timeout:
      co_await reply_and_log(context, rules::Reason::request_timeout, "-", "-", 0,
                             "the request head did not arrive within " +
                                 std::to_string(context.settings().head_timeout.count()) + " s.");
      break;
    case HeadRead::Status::too_large:
      co_await reply_and_log(context, rules::Reason::header_too_large, "-", "-", 0,
                             "the request head is larger than 16 KiB.");
      break;
    case HeadRead::Status::malformed:
      co_await reply_and_log(context, rules::Reason::bad_request, "-", "-", 0,
                             "the request is not valid HTTP/1.1: " + read.problem + ".");
      break;
    case HeadRead::Status::ok:
    case HeadRead::Status::closed:
      break;
  }
}

namespace {

enum class FirstRead : std::uint8_t { data, closed, timeout };

// Reads the connection's first bytes (at least one) into `buffer`, by `deadline`.
asio::awaitable<FirstRead> read_first_bytes(tcp::socket& socket, beast::flat_buffer& buffer,
                                            std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(socket.get_executor());
  timer.expires_at(deadline);
  auto outcome = co_await (socket.async_read_some(buffer.prepare(4096), use_tuple) ||
                           timer.async_wait(use_tuple));
  if (outcome.index() == 1) {
    co_return FirstRead::timeout;
  }
  auto [error, n] = std::get<0>(outcome);
  if (error || n == 0) {
    // End of stream, reset, or closed by the drain: nothing to answer.
    co_return FirstRead::closed;
  }
  buffer.commit(n);
  co_return FirstRead::data;
}

// What is left until `deadline` in whole seconds (the head reader's unit), rounded up so that a
// client is never given less than the setting says, and at least one.
std::chrono::seconds time_left(std::chrono::steady_clock::time_point deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::seconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::seconds(1));
}

// The first request of a connection, and whatever follows it.
asio::awaitable<void> serve_first_request(SessionContext& context) {
  beast::flat_buffer buffer(kClientBufferLimit);
  HeadParser parser;
  parser.header_limit(kHttpHeadLimit);
  // Bodies are streamed by the handlers, never held whole: no limit here (Beast's default of
  // 1 MB would refuse every larger upload at head time).
  parser.body_limit(boost::none);

  // The first bytes, within the head timeout, tell the protocol: SOCKS starts with its version
  // byte (0x05, or 0x04 for SOCKS4, which is refused), HTTP with a method's letter or an empty
  // line. The head timeout bounds the whole request head or SOCKS handshake from here.
  const auto deadline = std::chrono::steady_clock::now() + context.settings().head_timeout;
  switch (co_await read_first_bytes(context.client, buffer, deadline)) {
    case FirstRead::data:
      break;
    case FirstRead::closed:
      context.record_no_request(false);
      co_return;
    case FirstRead::timeout: {
      HeadRead timed_out;
      timed_out.status = HeadRead::Status::timeout;
      co_await reply_to_failed_head(context, timed_out);
      co_return;
    }
  }
  const auto first = static_cast<std::uint8_t>(*static_cast<const char*>(buffer.data().data()));
  if (first == socks::kVersion) {
    co_await serve_socks5(context, buffer, deadline);
    co_return;
  }
  if (first == socks::kVersion4) {
    co_await refuse_socks4(context);
    co_return;
  }

  // Read the head within what is left of the time limit; a client that trickles bytes (slow
  // loris) is cut off. read_request_head() also refuses obsolete line folding, which Beast would
  // accept. Its bytes so far are in `buffer`.
  const HeadRead read = co_await read_request_head(context.client_stream, buffer, parser,
                                                   time_left(deadline), kHttpHeadLimit);
  switch (read.status) {
    case HeadRead::Status::ok:
      break;
    case HeadRead::Status::closed:
      // The client left (or the drain closed it) before asking anything: still a line, so that
      // no connection ends unseen.
      context.record_no_request(read.partial);
      co_return;
    case HeadRead::Status::timeout:
    case HeadRead::Status::too_large:
    case HeadRead::Status::malformed:
      co_await reply_to_failed_head(context, read);
      co_return;
  }
  fault_point("head-read");

  // The token, before anything in the request is acted on (when the gate requires one), as the
  // settings in force now have it: a reload may have changed it while the head was on its way.
  context.take_current_settings();
  if (!co_await authorize_request(context, parser)) {
    co_return;
  }

  const auto& request = parser.get();
  if (request.method() == http::verb::connect) {
    co_await handle_connect(context, parser, buffer);
    co_return;
  }
  co_await handle_http(context, parser, buffer);
}

}  // namespace

asio::awaitable<void> serve_client(WorkerContext& worker, tcp::socket socket,
                                   std::string client_label) {
  SessionContext context(worker, std::move(socket), std::move(client_label));
  // Whatever throws on the connection's path (an allocation failure, a bug) ends this connection
  // only, with a logged and counted outcome; nothing escapes into the worker's loop.
  try {
    co_await serve_first_request(context);
  } catch (const std::exception& error) {
    if (!context.handed_off) {
      context.record_internal_error(error.what());
    }
  } catch (...) {
    if (!context.handed_off) {
      context.record_internal_error({});
    }
  }
}

namespace {

// The line and count of a connection refused at the connection limit: not a session (it is not
// counted among the open connections), but still a decision. A function, not a lambda in
// refuse_busy: GCC 12 lets a lambda in a coroutine refer to the parameters' pre-copy storage.
void record_busy_refusal(WorkerContext& worker, const tcp::socket& client, bool socks5,
                         std::string_view detail) {
  boost::system::error_code ec;
  const auto peer = client.remote_endpoint(ec);
  const std::string address = ec ? std::string("unknown") : to_text(peer);
  log::Record record;  // views: what it names must outlive the write
  record.connection_id = worker.shared.next_connection_id.fetch_add(1, std::memory_order_relaxed);
  record.client = address;
  record.method = socks5 ? "SOCKS5" : "-";
  record.host = "-";
  constexpr rules::Reason reason = rules::Reason::connection_limit;
  record.verdict = rules::verdict_name(rules::reason_info(reason).verdict);
  record.reason = rules::reason_code(reason);
  record.detail = detail;
  worker.shared.log.write(record);
  worker.metrics.count_decision(rules::reason_info(reason).verdict, reason);
}

}  // namespace

asio::awaitable<void> refuse_busy(WorkerContext& worker, tcp::socket client) {
  static const std::string reply =
      build_reply(rules::Reason::connection_limit,
                  "the gate is serving its maximum number of connections; try again shortly.");
  if (worker.busy_refusals >= kMaxBusyRefusals) {
    // A flood past the limit: no peek, no graceful close, the descriptor goes at once. The 503
    // goes out if the socket takes it now (it always does, being far below a socket buffer);
    // a SOCKS5 client reads it as a malformed reply, which ends its attempt all the same.
    record_busy_refusal(worker, client, false,
                        "the gate is serving its maximum number of connections (and refusing too "
                        "many others to wait for this one).");
    boost::system::error_code ignored;
    client.non_blocking(true, ignored);
    client.write_some(asio::buffer(reply), ignored);
    client.close(ignored);
    co_return;
  }
  ++worker.busy_refusals;
  struct Release {
    std::size_t& count;
    ~Release() { --count; }
  } release{worker.busy_refusals};
  // A SOCKS5 client reads no HTTP: peek its first byte, briefly (a client that waits for the
  // server to speak gets the 503 after the wait; both speak first, so the wait is rare).
  constexpr auto kPeek = std::chrono::milliseconds(250);
  std::array<std::uint8_t, 1> first{};
  asio::steady_timer peek_timer(client.get_executor());
  peek_timer.expires_after(kPeek);
  auto peeked =
      co_await (client.async_receive(asio::buffer(first), tcp::socket::message_peek, use_tuple) ||
                peek_timer.async_wait(use_tuple));
  const bool socks5 = peeked.index() == 0 && !std::get<0>(std::get<0>(peeked)) &&
                      std::get<1>(std::get<0>(peeked)) == 1 && first[0] == socks::kVersion;
  record_busy_refusal(worker, client, socks5,
                      "the gate is serving its maximum number of connections.");
  if (socks5) {
    co_await answer_socks5_busy(client, std::chrono::seconds(1));
  } else {
    co_await asio::async_write(client, asio::buffer(reply), use_tuple);
  }
  co_await close_gracefully(client);
}

}  // namespace sandgate::session
