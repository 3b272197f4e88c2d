// A client connection's first phase: the request head, with its size and time limits.
#include "proxy/session/client_session.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "proxy/session/handlers.hpp"
#include "proxy/session/http_head.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr std::size_t kHeadLimit = 16 * 1024;

}  // namespace

asio::awaitable<void> reply_and_log(SessionContext& context, ReplyKind kind,
                                    std::string_view verdict, std::string_view method,
                                    std::string_view host, std::uint16_t port,
                                    std::string_view code, std::string_view sentence,
                                    std::string_view rule) {
  log::Record record;
  record.connection_id = context.id;
  record.client = context.client_address;
  record.method = method;
  record.host = host;
  record.port = port;
  record.verdict = verdict;
  record.reason = code;
  record.rule = rule;
  record.detail = sentence;
  context.record(record);

  const std::string reply = build_reply(kind, code, sentence);
  co_await asio::async_write(context.client, asio::buffer(reply), use_tuple);
  co_await close_gracefully(context.client);
}

asio::awaitable<void> reply_to_failed_head(SessionContext& context, const HeadRead& read) {
  switch (read.status) {
    case HeadRead::Status::timeout:
      co_await reply_and_log(context, ReplyKind::request_timeout, "deny", "-", "-", 0,
                             "request-timeout",
                             "the request head did not arrive within " +
                                 std::to_string(context.settings().head_timeout.count()) + " s.");
      break;
    case HeadRead::Status::too_large:
      co_await reply_and_log(context, ReplyKind::header_too_large, "deny", "-", "-", 0,
                             "header-too-large", "the request head is larger than 16 KiB.");
      break;
    case HeadRead::Status::malformed:
      co_await reply_and_log(context, ReplyKind::bad_request, "deny", "-", "-", 0, "bad-request",
                             "the request is not valid HTTP/1.1: " + read.problem + ".");
      break;
    case HeadRead::Status::ok:
    case HeadRead::Status::closed:
      break;
  }
}

asio::awaitable<void> close_gracefully(tcp::socket& socket) {
  // Closing a socket with unread input makes the kernel send a reset, which can destroy the
  // reply before the client reads it. So: end our side, then read and discard what the client
  // still sends, for a bounded time and amount, until it closes too.
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  asio::steady_timer timeout(socket.get_executor());
  timeout.expires_after(std::chrono::seconds(2));
  std::array<char, 1024> sink;
  for (std::size_t total = 0; total < 64 * 1024;) {
    auto outcome =
        co_await (socket.async_read_some(asio::buffer(sink), use_tuple) || timeout.async_wait(use_tuple));
    if (outcome.index() == 1) {
      break;
    }
    auto [error, n] = std::get<0>(outcome);
    if (error) {
      break;
    }
    total += n;
  }
  socket.close(ignored);
}

asio::awaitable<void> serve_client(server::Worker& worker, tcp::socket socket) {
  SessionContext context(worker, std::move(socket));
  beast::flat_buffer buffer(kHeadLimit + 1024);
  HeadParser parser;
  parser.header_limit(kHeadLimit);
  // Bodies are streamed by the handlers, never held whole: no limit here (Beast's default of
  // 1 MB would refuse every larger upload at head time).
  parser.body_limit(boost::none);

  // Read the head within the time limit; a client that trickles bytes (slow loris) is cut off.
  // read_request_head() also refuses obsolete line folding, which Beast would accept.
  const HeadRead read = co_await read_request_head(context.client, buffer, parser,
                                                   context.settings().head_timeout, kHeadLimit);
  switch (read.status) {
    case HeadRead::Status::ok:
      break;
    case HeadRead::Status::closed:
      co_return;  // the client left (or the drain closed it) before asking anything
    case HeadRead::Status::timeout:
    case HeadRead::Status::too_large:
    case HeadRead::Status::malformed:
      co_await reply_to_failed_head(context, read);
      co_return;
  }

  const auto& request = parser.get();
  if (request.method() == http::verb::connect) {
    co_await handle_connect(context, parser, buffer);
    co_return;
  }
  co_await handle_http(context, parser, buffer);
}

asio::awaitable<void> refuse_busy(tcp::socket client) {
  static const std::string reply =
      build_reply(ReplyKind::connection_limit, "connection-limit",
                  "the gate is serving its maximum number of connections; try again shortly.");
  co_await asio::async_write(client, asio::buffer(reply), use_tuple);
  co_await close_gracefully(client);
}

}  // namespace sandgate::session
