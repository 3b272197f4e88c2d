// Plain HTTP through the proxy (absolute-form requests from `http_proxy` users).
#include <boost/asio/use_awaitable.hpp>

#include "proxy/session/handlers.hpp"

namespace sandgate::session {

namespace asio = boost::asio;

asio::awaitable<void> handle_http(SessionContext& context, HeadParser& parser,
                                  boost::beast::flat_buffer& /*buffer*/) {
  const std::string method(parser.get().method_string());
  const std::string target(parser.get().target());
  if (target.starts_with("/")) {
    co_await reply_and_log(context, ReplyKind::bad_request, "deny", method, target, 0,
                           "origin-form",
                           "this is a proxy: send CONNECT host:port, or an absolute URL "
                           "(http://host/path), not a bare path.");
    co_return;
  }
  if (target.size() >= 8 && (target.compare(0, 8, "https://") == 0)) {
    co_await reply_and_log(context, ReplyKind::bad_request, "deny", method, target, 0,
                           "https-absolute-form",
                           "https:// URLs must be tunnelled with CONNECT; the proxy will not send "
                           "them as plain text.");
    co_return;
  }
  co_await reply_and_log(context, ReplyKind::not_implemented, "deny", method, target, 0,
                         "not-implemented", "plain HTTP forwarding is not available yet.");
}

}  // namespace sandgate::session
