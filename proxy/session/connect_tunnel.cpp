// CONNECT: the tunnel. Parse the target strictly, decide, dial exactly what was checked, then
// answer 200 and relay until both sides are done.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "proxy/session/handlers.hpp"
#include "proxy/session/tunnel_session.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "rules/host.hpp"
#include "rules/tls_client_hello.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";

std::string rule_text(const rules::Decision& decision) {
  if (!decision.rule) {
    return {};
  }
  return std::string(decision.rule->source) + ":" + std::to_string(decision.rule->line) + " " +
         std::string(decision.rule->entry);
}

// Reads the client's first bytes (into `buffer`, which may already hold some) until they show
// the protocol: TLS with its server name, SSH, or something else. Bounded in size and time.
asio::awaitable<rules::Decision> inspect_first_bytes(SessionContext& context,
                                                     const rules::Host& host, std::uint16_t port,
                                                     boost::beast::flat_buffer& buffer) {
  using Status = rules::ClientHello::Status;
  rules::Decision mismatch;
  mismatch.verdict = rules::Verdict::deny;
  mismatch.reason = rules::Reason::protocol_mismatch;

  asio::steady_timer timeout(context.client.get_executor());
  timeout.expires_after(context.settings().head_timeout);
  rules::ClientHello hello;
  for (;;) {
    const auto bytes = buffer.data();
    hello = rules::read_client_hello(
        std::string_view(static_cast<const char*>(bytes.data()), bytes.size()));
    if (hello.status != Status::need_more) {
      break;
    }
    if (buffer.size() > rules::kMaxClientHello + 1024) {
      co_return mismatch;
    }
    auto space = buffer.prepare(4096);
    auto outcome = co_await (context.client.async_read_some(space, use_tuple) ||
                             timeout.async_wait(use_tuple));
    if (outcome.index() == 1) {
      co_return mismatch;  // a client that waits for the server to speak first is not TLS
    }
    auto [error, n] = std::get<0>(outcome);
    if (error) {
      co_return mismatch;
    }
    buffer.commit(n);
  }

  switch (hello.status) {
    case Status::ssh:
      // SSH on a TLS port is still SSH: it reaches only git hosts.
      co_return context.policy->decide_ssh(host);
    case Status::tls: {
      if (hello.server_name.empty()) {
        co_return rules::Decision{};  // no name to compare (common for IP destinations)
      }
      auto named = rules::parse_host(hello.server_name);
      rules::Decision sni;
      sni.verdict = rules::Verdict::deny;
      sni.reason = rules::Reason::sni_mismatch;
      if (!named) {
        co_return sni;
      }
      if (!host.is_ip()) {
        co_return named->name == host.name ? rules::Decision{} : sni;
      }
      // An IP destination with a name inside: the name must pass the policy too.
      co_return context.policy->decide(*named, port);
    }
    default:
      co_return mismatch;
  }
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

  // 3. LaunchDarkly, when enabled.
  const auto remote = co_await consult_remote_allowlist(context, "CONNECT", host, port);
  if (remote && !remote->allowed) {
    co_return;
  }

  // 4. Resolve, check the addresses, connect.
  DialResult dial = co_await dial_upstream(context, host, port);
  if (!dial.connected) {
    co_await reply_and_log(context, dial.failure, dial.denied ? "deny" : "error", "CONNECT",
                           display, port, dial.code, dial.sentence);
    co_return;
  }
  const std::string upstream_address = to_text(dial.endpoint);
  const std::string rule = rule_text(decision);

  // 5. Tell the client the tunnel is up. On a TLS port, look at what it sends first before a
  // byte goes upstream: the protocol actually spoken decides, not the port number.
  auto [write_error, written] =
      co_await asio::async_write(context.client, asio::buffer(kEstablished), use_tuple);
  if (!write_error && context.settings().sni_check &&
      std::find(context.settings().tls_ports.begin(), context.settings().tls_ports.end(), port) !=
          context.settings().tls_ports.end()) {
    const rules::Decision inspected = co_await inspect_first_bytes(context, host, port, buffer);
    if (!inspected.allowed()) {
      const std::string sentence = context.policy->explain(inspected, host, port);
      log::Record denied;
      denied.connection_id = context.id;
      denied.client = context.client_address;
      denied.method = "CONNECT";
      denied.host = display;
      denied.port = port;
      denied.verdict = "deny";
      denied.reason = rules::reason_code(inspected.reason);
      const std::string denied_rule = rule_text(inspected);
      denied.rule = denied_rule;
      denied.address = upstream_address;
      denied.detail = sentence;
      context.record(denied);
      // The client already holds a 200 and speaks TLS or SSH: no HTTP reply can reach it now.
      // Close both sides; its handshake fails.
      boost::system::error_code ignored;
      context.client.close(ignored);
      context.upstream.close(ignored);
      co_return;
    }
  }

  log::Record record;
  record.connection_id = context.id;
  record.client = context.client_address;
  record.method = "CONNECT";
  record.host = display;
  record.port = port;
  record.verdict = "allow";
  record.reason = "allowed";
  record.rule = rule;
  record.address = upstream_address;
  const std::string remote_note = remote_allowlist_note(remote);
  record.detail = remote_note;
  context.record(record);

  // 6. Pass on what the client sent so far: the start of the tunnelled stream (a TLS
  // ClientHello, possibly sent before our 200 arrived).
  std::uint64_t early_bytes = 0;
  if (!write_error && buffer.size() > 0) {
    auto [forward_error, forwarded] =
        co_await asio::async_write(context.upstream, buffer.data(), use_tuple);
    write_error = forward_error;
    early_bytes = forwarded;
  }
  // The head buffer is done with: free it before a possibly long-lived tunnel.
  buffer = boost::beast::flat_buffer();

  if (write_error) {
    boost::system::error_code ignored;
    context.client.close(ignored);
    context.upstream.close(ignored);
    co_return;
  }
  // 6. Hand the sockets to a TunnelSession and let this coroutine (and its caller) finish, so a
  // long-lived tunnel holds no coroutine frames.
  TunnelSession::start(context, display, port, early_bytes);
}

}  // namespace sandgate::session
