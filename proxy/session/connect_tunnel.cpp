// CONNECT: the tunnel. Parse the target strictly, decide, dial exactly what was checked, then
// answer 200 and relay until both sides are done. The steps after the parse are shared with
// SOCKS5 (open_tunnel, connect_tunnel.hpp); only the front end differs.
#include "proxy/session/connect_tunnel.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "proxy/session/fault_injection.hpp"
#include "proxy/session/handlers.hpp"
#include "proxy/session/parent_dial.hpp"
#include "proxy/session/tunnel_session.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "rules/host.hpp"
#include "rules/ssh_identification.hpp"
#include "rules/tls_client_hello.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";

// What the client's first bytes in a tunnel to a TLS port showed.
struct FirstBytes {
  rules::Decision decision;
  bool ssh = false;        // the client spoke SSH (the SSH rules decided)
  std::string note;        // for the allow line: something the operator should know
  std::optional<rules::Host> tls_name;  // an IP destination's SNI name, which passed the policy
};

// Reads the client's first bytes (into `buffer`, which may already hold some) until they show
// the protocol: TLS with its server name, SSH, or something else. Bounded in time, and in size by
// the buffer's maximum: a ClientHello that does not fit is refused, never grown into.
asio::awaitable<FirstBytes> inspect_first_bytes(SessionContext& context, const rules::Host& host,
                                                std::uint16_t port,
                                                boost::beast::flat_buffer& buffer) {
  using Status = rules::ClientHello::Status;
  FirstBytes mismatch;
  mismatch.decision.verdict = rules::Verdict::deny;
  mismatch.decision.reason = rules::Reason::protocol_mismatch;

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
    const std::size_t room = buffer.max_size() - buffer.size();
    if (room == 0) {
      co_return mismatch;  // larger than any ClientHello the gate reads
    }
    auto space = buffer.prepare(std::min<std::size_t>(4096, room));
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
    case Status::ssh: {
      // SSH on a TLS port is still SSH: it reaches only git hosts.
      FirstBytes ssh;
      ssh.ssh = true;
      ssh.decision = context.policy->decide_ssh(host);
      co_return ssh;
    }
    case Status::tls: {
      FirstBytes tls;
      if (hello.encrypted_client_hello) {
        // ECH (or GREASE ECH, which cannot be told apart): the name checked below is the outer
        // one, and the server dialled is the one the policy allowed; a name inside is not seen.
        tls.note = "the ClientHello carries Encrypted ClientHello; the outer name was checked";
      }
      if (hello.server_name.empty()) {
        // No name to compare. For an IP destination that is normal; for a name it would let a
        // client reach whatever the dialled server serves without naming it.
        if (!host.is_ip()) {
          tls.decision.verdict = rules::Verdict::deny;
          tls.decision.reason = rules::Reason::sni_missing;
        }
        co_return tls;
      }
      auto named = rules::parse_host(hello.server_name);
      if (!named) {
        tls.decision.verdict = rules::Verdict::deny;
        tls.decision.reason = rules::Reason::sni_mismatch;
        co_return tls;
      }
      if (!host.is_ip()) {
        if (named->name != host.name) {
          tls.decision.verdict = rules::Verdict::deny;
          tls.decision.reason = rules::Reason::sni_mismatch;
        }
        co_return tls;
      }
      // An IP destination with a name inside: the name must pass the policy too (and a reload
      // judges it again).
      tls.decision = context.policy->decide(*named, port);
      tls.tls_name = *named;
      co_return tls;
    }
    default:
      co_return mismatch;
  }
}

// Feeds the client's bytes that came before the tunnel opened (in `buffer`) to `watch`, and
// reads more only while the watch holds a prefix of an identification line ("SS"), within the
// head timeout; a client that stops there is taken for SSH, the stricter reading. Undecided
// (with nothing held) leaves the rest to the relay, which goes on watching from the same state.
asio::awaitable<void> watch_early_bytes(SessionContext& context,
                                        boost::beast::flat_buffer& buffer,
                                        rules::SshIdentificationWatch& watch) {
  using Verdict = rules::SshIdentificationWatch::Verdict;
  const auto text = [&buffer](std::size_t from) {
    const auto data = buffer.data();
    return std::string_view(static_cast<const char*>(data.data()), data.size()).substr(from);
  };
  watch.feed(text(0));
  asio::steady_timer timeout(context.client.get_executor());
  timeout.expires_after(context.settings().head_timeout);
  while (watch.verdict() == Verdict::undecided && watch.hold() > 0) {
    const std::size_t room = buffer.max_size() - buffer.size();
    if (room == 0) {
      watch.finish();
      co_return;
    }
    const std::size_t seen = buffer.size();
    auto space = buffer.prepare(std::min<std::size_t>(4096, room));
    auto outcome = co_await (context.client.async_read_some(space, use_tuple) ||
                             timeout.async_wait(use_tuple));
    if (outcome.index() == 1) {
      watch.finish();
      co_return;
    }
    auto [error, got] = std::get<0>(outcome);
    if (error) {
      watch.finish();
      co_return;
    }
    buffer.commit(got);
    watch.feed(text(seen));
  }
}

// A tunnel's log line, its verdict and reason still to be set by the caller.
log::Record connect_line(const SessionContext& context, std::string_view method,
                         std::string_view host, std::uint16_t port, std::string_view address,
                         std::string_view rule, std::string_view detail) {
  log::Record line;
  line.connection_id = context.id;
  line.client = context.client_address;
  line.method = method;
  line.host = host;
  line.port = port;
  line.rule = rule;
  line.address = address;
  line.detail = detail;
  return line;
}

// Logs a denial taken after success was sent (the client already speaks TLS or SSH, so no reply
// of the front end's can reach it) and closes both sides; its handshake fails.
void deny_established(SessionContext& context, std::string_view method, std::string_view host,
                      std::uint16_t port, std::string_view address, rules::Reason reason,
                      std::string_view rule, std::string_view detail) {
  context.record_decision(connect_line(context, method, host, port, address, rule, detail),
                          reason);
  boost::system::error_code ignored;
  context.client.close(ignored);
  context.upstream.close(ignored);
}

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

void record_refusal(SessionContext& context, std::string_view method, rules::Reason reason,
                    std::string_view host, std::uint16_t port, std::string_view sentence,
                    std::string_view rule) {
  log::Record record;
  record.connection_id = context.id;
  record.client = context.client_address;
  record.method = method;
  record.host = host;
  record.port = port;
  record.rule = rule;
  record.detail = sentence;
  context.record_decision(record, reason);
}

asio::awaitable<void> refuse_tunnel(SessionContext& context, const TunnelFrontEnd& front,
                                    rules::Reason reason, std::string_view host,
                                    std::uint16_t port, std::string_view sentence,
                                    std::string_view rule, DeniedAt at) {
  record_refusal(context, front.method, reason, host, port, sentence, rule);
  co_await front.send_refusal(context, reason, sentence, at);
  co_await close_gracefully(context.client);
}

asio::awaitable<void> handle_connect(SessionContext& context, HeadParser& parser,
                                     boost::beast::flat_buffer& buffer) {
  // The rules in force now decide this CONNECT, whatever came before on the connection. An
  // upstream kept from earlier plain requests was closed by the caller: forget it, so that a
  // reload judges this tunnel, not that old destination.
  context.begin_request();
  context.live.destination.reset();
  context.live.revoked.reset();
  const std::string raw_target(parser.get().target());
  // The head's fields are not needed past this point; drop them rather than hold them for the
  // tunnel's lifetime.
  (void)parser.release();

  // 1. Authority form only, parsed strictly: what is checked is what will be dialled.
  auto authority = rules::parse_authority(raw_target);
  if (!authority) {
    co_await refuse_tunnel(context, kHttpConnectFront, rules::Reason::invalid_host, raw_target, 0,
                           "'" + raw_target + "' is not a valid CONNECT target (host:port): " +
                               std::string(rules::to_string(authority.error())) + ".");
    co_return;
  }
  co_await open_tunnel(context, kHttpConnectFront, authority->host, authority->port, buffer);
}

asio::awaitable<void> open_tunnel(SessionContext& context, const TunnelFrontEnd& front,
                                  const rules::Host& host, std::uint16_t port,
                                  boost::beast::flat_buffer& buffer) {
  const std::string_view method = front.method;
  const std::string display = host.display();

  // 2. The policy. Report-only mode lets a policy denial through, logged as would-deny on the
  // tunnel's decision line below; a destination no rule decides may wait on a question.
  context.reported.reset();
  rules::Decision decision = context.policy->decide(host, port);
  if (decision.ask && !context.reports(decision.reason)) {
    auto answered = co_await ask_about(context, method, host, port);
    if (!answered) {
      co_return;
    }
    decision = *answered;
    if (!context.still_wanted(method, display, port)) {
      co_return;
    }
  }
  if (!decision.allowed() && !context.report_instead(decision, host, port)) {
    co_await refuse_tunnel(context, front, decision.reason, display, port,
                           context.policy->explain(decision, host, port),
                           rules::rule_text(decision));
    co_return;
  }
  fault_point("connect-decided");

  // 3. LaunchDarkly, when enabled. Its answer may come after the drain closed the connection.
  std::optional<launchdarkly::Answer> remote;
  if (launchdarkly::RemoteAllowlist* allowlist = context.worker.shared.remote_allowlist) {
    remote = co_await allowlist->check(host, port);
  }
  if (!context.still_wanted(method, display, port)) {
    co_return;
  }
  if (remote && !remote->allowed) {
    if (!context.reports(remote->reason)) {
      co_await refuse_tunnel(context, front, remote->reason, display, port, remote->detail + ".",
                             remote_allowlist_rule(*remote));
      co_return;
    }
    context.keep_reported(remote->reason, remote_allowlist_rule(*remote), remote->detail + ".");
  }

  // 4. Resolve, check the addresses, connect; or, through a parent proxy, connect to it and
  // have it connect (the parent resolves the name: the address rules on it cannot run here).
  const parent::ParentAddress* parent = parent_for(context.settings(), host, port);
  boost::beast::flat_buffer from_parent;  // the destination's first bytes, behind the parent's head
  DialResult dial;
  if (parent != nullptr) {
    dial = co_await connect_through_parent(context, *parent, host, port, from_parent);
  } else {
    dial = co_await dial_upstream(context, host, port);
  }
  if (!context.still_wanted(method, display, port)) {
    co_return;
  }
  if (!dial.connected) {
    co_await refuse_tunnel(context, front, dial.reason, display, port, dial.sentence, {},
                           dial.denied_at());
    co_return;
  }
  const std::string upstream_address = to_text(dial.endpoint);
  const std::string rule = rules::rule_text(decision);

  Destination destination;
  destination.host = host;
  destination.port = port;
  destination.answered = decision.answered;
  if (!host.is_ip() && parent == nullptr) {
    destination.address = to_rules_address(dial.endpoint.address());
  }

  // 5. Tell the client the tunnel is up. On a TLS port, look at what it sends first before a
  // byte goes upstream: the protocol actually spoken decides, not the port number. On other
  // ports the relay watches the first bytes for SSH (server-first protocols must still work, so
  // nothing waits for them here).
  boost::system::error_code write_error = co_await front.send_established(context);
  // What the parent sent behind its head came from the destination: it follows the success
  // reply, before anything else is read.
  std::uint64_t early_down = 0;
  if (!write_error && from_parent.size() > 0) {
    auto [error, written] =
        co_await asio::async_write(context.client, from_parent.data(), use_tuple);
    write_error = error;
    early_down = written;
  }
  from_parent = boost::beast::flat_buffer();
  const auto& tls_ports = context.settings().tls_ports;
  const bool inspect = context.settings().sni_check &&
                       std::find(tls_ports.begin(), tls_ports.end(), port) != tls_ports.end();
  std::string note = remote_allowlist_note(remote);
  if (parent != nullptr) {
    const std::string via = "through the parent proxy " + parent->display();
    note = note.empty() ? via : note + "; " + via;
  }
  if (!write_error && inspect) {
    const FirstBytes first = co_await inspect_first_bytes(context, host, port, buffer);
    if (!context.still_wanted(method, display, port)) {
      co_return;
    }
    if (!first.decision.allowed() &&
        !context.report_instead(first.decision, first.tls_name.value_or(host), port)) {
      deny_established(context, method, display, port, upstream_address, first.decision.reason,
                       rules::rule_text(first.decision),
                       context.policy->explain(first.decision, host, port));
      co_return;
    }
    destination.ssh = first.ssh;
    if (first.tls_name) {
      destination.tls_name = std::make_shared<const rules::Host>(*first.tls_name);
    }
    if (!first.note.empty()) {
      note = note.empty() ? first.note : note + "; " + first.note;
    }
  }
  // Every other tunnel: the client's stream is read as a tolerant SSH server reads it
  // (rules/ssh_identification.hpp); bytes that came with the head are looked at here, before
  // they go upstream, and the relay watches what follows from where they left off.
  std::optional<rules::SshIdentificationWatch> ssh_watch;
  if (!write_error && !inspect) {
    ssh_watch.emplace();
    if (buffer.size() > 0) {
      co_await watch_early_bytes(context, buffer, *ssh_watch);
      if (!context.still_wanted(method, display, port)) {
        co_return;
      }
    }
    if (ssh_watch->verdict() == rules::SshIdentificationWatch::Verdict::ssh) {
      const rules::Decision ssh_decision = context.policy->decide_ssh(host);
      if (!ssh_decision.allowed() && !context.report_instead(ssh_decision, host, port)) {
        deny_established(context, method, display, port, upstream_address, ssh_decision.reason,
                         rules::rule_text(ssh_decision),
                         context.policy->explain(ssh_decision, host, port));
        co_return;
      }
      destination.ssh = true;
    }
    if (ssh_watch->verdict() != rules::SshIdentificationWatch::Verdict::undecided) {
      ssh_watch.reset();  // decided: the relay need not look
    }
  }

  // 6. A reload while this tunnel was being set up: the rules now in force judge it again, as
  // they judged every tunnel already open. From here on a reload finds it registered.
  if (auto revoked = context.register_destination(std::move(destination))) {
    deny_established(context, method, display, port, upstream_address,
                     revocation_reason(*revoked), revoked->rule, revoked->detail);
    co_return;
  }

  // The tunnel's decision line: allowed, or (report-only mode) the first denial let through.
  if (const auto& why = context.reported) {
    context.record_decision(connect_line(context, method, display, port, upstream_address,
                                         why->rule, why->sentence),
                            why->reason, false);
  } else {
    context.record_decision(
        connect_line(context, method, display, port, upstream_address, rule, note),
        rules::Reason::allowed);
  }

  // 7. Pass on what the client sent so far: the start of the tunnelled stream (a TLS
  // ClientHello, possibly sent before our 200 arrived).
  std::uint64_t early_bytes = 0;
  if (!write_error && buffer.size() > 0) {
    auto [forward_error, forwarded] =
        co_await asio::async_write(context.upstream, buffer.data(), use_tuple);
    write_error = forward_error;
    early_bytes = forwarded;
    if (!context.still_wanted(method, display, port)) {
      co_return;
    }
  }
  // The head buffer is done with: free it before a possibly long-lived tunnel.
  buffer = boost::beast::flat_buffer();

  if (write_error) {
    boost::system::error_code ignored;
    context.client.close(ignored);
    context.upstream.close(ignored);
    const std::string detail = "the tunnel broke while it was being set up: " +
                               write_error.message() + ".";
    log::Record end = connect_line(context, method, display, port, {}, {}, detail);
    end.event = log::Record::Event::end;
    end.outcome = "reset";
    end.bytes_up = early_bytes;
    end.duration_ms = context.elapsed_ms();
    context.record_end(end);
    co_return;
  }
  // 8. Hand the sockets to a TunnelSession and let this coroutine (and its caller) finish, so a
  // long-lived tunnel holds no coroutine frames.
  Destination registered = std::move(*context.live.destination);
  context.live.destination.reset();
  TunnelSession::start(context, display, std::move(registered), early_bytes, std::move(ssh_watch),
                       std::string(method), early_down);
}

}  // namespace sandgate::session
