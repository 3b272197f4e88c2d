// CONNECT, the HTTP front end's tunnel: parse the target strictly (what is checked is what will
// be dialled), then open the tunnel on the path every front end shares (open_tunnel.hpp); only
// the replies are HTTP's: 200 Connection Established, or the gate's own reply with Proxy-Status.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <string>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/fronts/inspected_connection.hpp"
#include "proxy/session/open_tunnel.hpp"
#include "rules/host.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;

constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";

asio::awaitable<void> send_http_refusal(SessionContext& context, rules::Reason reason,
                                        std::string_view sentence, DeniedAt at) {
  const std::string reply = build_reply(reason, sentence, at);
  co_await asio::async_write(context.client, asio::buffer(reply), use_tuple);
}

asio::awaitable<boost::system::error_code> send_http_established(SessionContext& context) {
  auto [error, written] =
      co_await asio::async_write(context.client, asio::buffer(kEstablished), use_tuple);
  co_return error;
}

constexpr TunnelFrontEnd kHttpConnectFront{"CONNECT", &send_http_refusal, &send_http_established};

}  // namespace

asio::awaitable<void> handle_connect(SessionContext& context, HeadParser& parser,
                                     boost::beast::flat_buffer& buffer) {
  // The rules in force now decide this CONNECT, whatever came before on the connection. An
  // upstream kept from earlier plain requests was closed by the caller: forget it, so that a
  // reload judges this tunnel, not that old destination.
  DecisionState decided = context.arriving_request();
  context.live.destination.reset();
  context.live.revoked.reset();
  const std::string raw_target(parser.get().target());
  // The head's fields are not needed past this point; drop them rather than hold them for the
  // tunnel's lifetime.
  (void)parser.release();

  // 1. Authority form only, parsed strictly: what is checked is what will be dialled.
  auto authority = rules::parse_authority(raw_target);
  if (!authority) {
    co_await refuse_tunnel(context, kHttpConnectFront, raw_target, 0,
                           {rules::Reason::invalid_host,
                            "'" + raw_target + "' is not a valid CONNECT target (host:port): " +
                                std::string(rules::to_string(authority.error())) + "."});
    co_return;
  }
  const std::optional<ConnectionFacts> inspected = co_await open_tunnel(
      context, decided, kHttpConnectFront, authority->host, authority->port, buffer);
  if (inspected) {
    co_await serve_inspected(context, decided, *inspected, kHttpConnectFront.method, buffer);
  }
}

}  // namespace sandgate::session
