// CONNECT: the tunnel. Parse the target strictly, decide, dial exactly what was checked, then
// answer 200 and relay until both sides are done.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "proxy/session/handlers.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "rules/host.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";

std::string rule_text(const rules::Decision& decision) {
  if (!decision.rule) {
    return {};
  }
  return std::string(decision.rule->source) + ":" + std::to_string(decision.rule->line) + " " +
         std::string(decision.rule->entry);
}

}  // namespace

asio::awaitable<void> handle_connect(SessionContext& context, HeadParser& parser,
                                     boost::beast::flat_buffer& buffer) {
  const std::string raw_target(parser.get().target());
  // The head's fields are not needed past this point; drop them rather than hold them for the
  // tunnel's lifetime.
  (void)parser.release();

  // 1. Authority form only, parsed strictly: what is checked is what will be dialled.
  auto authority = rules::parse_authority(raw_target);
  if (!authority) {
    co_await reply_and_log(context, ReplyKind::bad_request, "deny", "CONNECT", raw_target, 0,
                           "invalid-host",
                           "'" + raw_target + "' is not a valid CONNECT target (host:port): " +
                               std::string(rules::to_string(authority.error())) + ".");
    co_return;
  }
  const rules::Host& host = authority->host;
  const std::uint16_t port = authority->port;
  const std::string display = host.display();

  // 2. The policy.
  const rules::Decision decision = context.policy->decide(host, port);
  if (!decision.allowed()) {
    const bool address_rule = decision.reason == rules::Reason::loopback ||
                              decision.reason == rules::Reason::ip_address ||
                              decision.reason == rules::Reason::metadata_address ||
                              decision.reason == rules::Reason::private_address ||
                              decision.reason == rules::Reason::reserved_address;
    co_await reply_and_log(context, address_rule ? ReplyKind::denied_address : ReplyKind::denied,
                           "deny", "CONNECT", display, port, rules::reason_code(decision.reason),
                           context.policy->explain(decision, host, port), rule_text(decision));
    co_return;
  }

  // 3. Resolve, check the addresses, connect.
  DialResult dial = co_await dial_upstream(context, host, port);
  if (!dial.connected) {
    co_await reply_and_log(context, dial.failure, dial.denied ? "deny" : "error", "CONNECT",
                           display, port, dial.code, dial.sentence);
    co_return;
  }
  const std::string upstream_address = to_text(dial.endpoint);
  log::Record record;
  record.connection_id = context.id;
  record.client = context.client_address;
  record.method = "CONNECT";
  record.host = display;
  record.port = port;
  record.verdict = "allow";
  record.reason = "allowed";
  const std::string rule = rule_text(decision);
  record.rule = rule;
  record.address = upstream_address;
  context.log().write(record);

  // 4. Tell the client, then pass on what it sent after its head: those bytes are the start of
  // the tunnelled stream (a TLS ClientHello sent optimistically, for instance).
  auto [write_error, written] =
      co_await asio::async_write(context.client, asio::buffer(kEstablished), use_tuple);
  std::uint64_t early_bytes = 0;
  if (!write_error && buffer.size() > 0) {
    auto [forward_error, forwarded] =
        co_await asio::async_write(context.upstream, buffer.data(), use_tuple);
    write_error = forward_error;
    early_bytes = forwarded;
  }
  // The head buffer is done with: free it before a possibly long-lived tunnel.
  buffer = boost::beast::flat_buffer();

  relay::Result result;
  if (write_error) {
    result.outcome = relay::Outcome::reset;
  } else {
    result = co_await relay::relay(context.client, context.upstream, context.worker.pipes,
                                   context.settings().idle_timeout);
  }
  result.bytes_up += early_bytes;

  boost::system::error_code ignored;
  context.client.close(ignored);
  context.upstream.close(ignored);

  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = context.id;
  end.client = context.client_address;
  end.method = "CONNECT";
  end.host = display;
  end.port = port;
  end.outcome = relay::to_string(result.outcome);
  end.bytes_up = result.bytes_up;
  end.bytes_down = result.bytes_down;
  end.duration_ms = context.elapsed_ms();
  context.log().write(end);
}

}  // namespace sandgate::session
