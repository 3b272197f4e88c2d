// A tunnel from admission to its relay, for every front end that asks for one (HTTP CONNECT,
// SOCKS5, capture): the admission pipeline, success sent, the client's first bytes judged, the
// destination registered, the decision logged, and the sockets handed to a TunnelSession. See
// open_tunnel.hpp.
#include "proxy/session/open_tunnel.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/budget/destination_budgets.hpp"
#include "proxy/session/graceful_close.hpp"
#include "proxy/session/origin_pool.hpp"
#include "proxy/session/parent_dial.hpp"
#include "proxy/session/tunnel_session.hpp"
#include "proxy/session/upstream_dial.hpp"
#include "proxy/session/upstream_source.hpp"
#include "rules/host.hpp"
#include "rules/ssh_identification.hpp"
#include "rules/tls_client_hello.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

// What the client's first bytes in a tunnel to a TLS port showed.
struct FirstBytes {
  rules::Decision decision;
  bool ssh = false;                     // the client spoke SSH (the SSH rules decided)
  bool tls = false;                     // the client sent a TLS ClientHello
  bool offers_h2 = false;               // and it offered h2 by ALPN
  std::string note;                     // for the allow line: something the operator should know
  std::optional<rules::Host> tls_name;  // an IP destination's SNI name, still to be decided
};

// First bytes that are neither TLS nor SSH, or that never showed which.
FirstBytes protocol_mismatch() {
  FirstBytes mismatch;
  mismatch.decision.verdict = rules::Verdict::deny;
  mismatch.decision.reason = rules::Reason::protocol_mismatch;
  return mismatch;
}

// What a complete read of the client's first bytes (`hello`) says about a tunnel to `host`: SSH
// (the SSH rules decide), TLS with its server name held to the host asked for (an IP
// destination's name still to be decided), or a protocol mismatch.
FirstBytes judge_first_bytes(const DecisionState& decided, const rules::Host& host,
                             const rules::ClientHello& hello) {
  using Status = rules::ClientHello::Status;
  switch (hello.status) {
    case Status::ssh: {
      // SSH on a TLS port is still SSH: it reaches only git hosts.
      FirstBytes ssh;
      ssh.ssh = true;
      ssh.decision = decided.policy().decide_ssh(host);
      return ssh;
    }
    case Status::tls: {
      FirstBytes tls;
      tls.tls = true;
      tls.offers_h2 = hello.offers_h2;
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
        return tls;
      }
      auto named = rules::parse_host(hello.server_name);
      if (!named) {
        tls.decision.verdict = rules::Verdict::deny;
        tls.decision.reason = rules::Reason::sni_mismatch;
        return tls;
      }
      if (!host.is_ip()) {
        if (named->name != host.name) {
          tls.decision.verdict = rules::Verdict::deny;
          tls.decision.reason = rules::Reason::sni_mismatch;
        }
        return tls;
      }
      // An IP destination with a name inside: the name must pass the admission too, as any
      // destination does (decide_name_given, after this; a reload judges it again).
      tls.tls_name = *named;
      return tls;
    }
    default:
      return protocol_mismatch();
  }
}

// Reads the client's first bytes (into `buffer`, which may already hold some) until they show
// the protocol: TLS with its server name, SSH, or something else. Bounded in time, and in size by
// the buffer's maximum: a ClientHello that does not fit is refused, never grown into.
asio::awaitable<FirstBytes> inspect_first_bytes(SessionContext& context,
                                                const DecisionState& decided,
                                                const rules::Host& host,
                                                boost::beast::flat_buffer& buffer) {
  using Status = rules::ClientHello::Status;

  asio::steady_timer timeout(context.client.get_executor());
  timeout.expires_after(decided.settings().head_timeout);
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
      co_return protocol_mismatch();  // larger than any ClientHello the gate reads
    }
    auto space = buffer.prepare(std::min<std::size_t>(4096, room));
    auto outcome = co_await (context.client.async_read_some(space, use_tuple) ||
                             timeout.async_wait(use_tuple));
    if (outcome.index() == 1) {
      co_return protocol_mismatch();  // a client that waits for the server to speak first is not
                                      // TLS
    }
    auto [error, n] = std::get<0>(outcome);
    if (error) {
      co_return protocol_mismatch();
    }
    buffer.commit(n);
  }

  co_return judge_first_bytes(decided, host, hello);
}

// Feeds the client's bytes that came before the tunnel opened (in `buffer`) to `watch`, and
// reads more only while the watch holds a prefix of an identification line ("SS"), within the
// head timeout; a client that stops there is taken for SSH, the stricter reading. Undecided
// (with nothing held) leaves the rest to the relay, which goes on watching from the same state.
asio::awaitable<void> watch_early_bytes(SessionContext& context, const DecisionState& decided,
                                        boost::beast::flat_buffer& buffer,
                                        rules::SshIdentificationWatch& watch) {
  using Verdict = rules::SshIdentificationWatch::Verdict;
  const auto text = [&buffer](std::size_t from) {
    const auto data = buffer.data();
    return std::string_view(static_cast<const char*>(data.data()), data.size()).substr(from);
  };
  watch.feed(text(0));
  asio::steady_timer timeout(context.client.get_executor());
  timeout.expires_after(decided.settings().head_timeout);
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

// A tunnel between admission and its relay: what its steps share.
struct TunnelSetup {
  TunnelSetup(SessionContext& c, DecisionState& d, std::string_view m, const rules::Host& h,
              std::uint16_t p, std::string address, std::string admission_note)
      : context(c),
        decided(d),
        method(m),
        host(h),
        display(h.display()),
        port(p),
        upstream_address(std::move(address)),
        note(std::move(admission_note)) {}

  SessionContext& context;
  DecisionState& decided;   // what the tunnel's request is decided with
  std::string_view method;  // the front end's, for the log
  const rules::Host& host;
  std::string display;  // host as the log names it
  std::uint16_t port;
  std::string upstream_address;  // what was connected to, for the log
  // What the set-up learns of the connection (how the client named it, its ClientHello's name,
  // what was dialled, SSH, inspected), each decided once; registered for reloads once the first
  // bytes were judged, and carried to the inspected connection's requests.
  ConnectionFacts facts;
  // What a parent proxy sent behind its reply head: the destination's first bytes. Held until
  // the tunnel is known to be spliced (then they follow the success reply); an inspected
  // tunnel's origin speaks only after the gate's own ClientHello.
  boost::beast::flat_buffer from_parent;
  std::string note;                       // for the allow line: what the operator should know
  boost::system::error_code write_error;  // a write to either side failed during the set-up
  std::uint64_t early_up = 0;             // bytes passed on before the relay took over
  std::uint64_t early_down = 0;
  std::optional<rules::SshIdentificationWatch> ssh_watch;  // undecided: the relay goes on
  bool tls = false;        // the client's first bytes were a TLS ClientHello (checked)
  bool offers_h2 = false;  // which offered h2

  void add_note(std::string_view more) {
    if (!more.empty()) {
      note = note.empty() ? std::string(more) : note + "; " + std::string(more);
    }
  }
};

// A tunnel's log line, its verdict and reason still to be set by the caller.
log::Record connect_line(const TunnelSetup& setup, std::string_view address, std::string_view rule,
                         std::string_view detail) {
  log::Record line;
  line.connection_id = setup.context.id;
  line.client = setup.context.client_address;
  line.method = setup.method;
  line.host = setup.display;
  line.port = setup.port;
  line.rule = rule;
  line.address = address;
  line.detail = detail;
  return line;
}

// Logs a denial taken after success was sent (the client already speaks TLS or SSH, so no reply
// of the front end's can reach it) and closes both sides; its handshake fails.
void deny_established(TunnelSetup& setup, rules::Reason reason, std::string_view rule,
                      std::string_view detail) {
  setup.context.record_decision(connect_line(setup, setup.upstream_address, rule, detail), reason);
  boost::system::error_code ignored;
  setup.context.client.close(ignored);
  setup.context.upstream.close(ignored);
}

// A denial of the client's first bytes, unless report-only mode lets it through: false when the
// tunnel was denied (logged, closed).
bool first_bytes_pass(TunnelSetup& setup, const rules::Decision& decision,
                      const rules::Host& judged) {
  DecisionState& decided = setup.decided;
  if (decision.allowed() || decided.report_instead(decision, judged, setup.port)) {
    return true;
  }
  deny_established(setup, decision.reason, rules::rule_text(decision),
                   decided.policy().explain(decision, setup.host, setup.port));
  return false;
}

// What the parent sent behind its head came from the destination: on a spliced tunnel it is the
// first thing the client reads from it.
asio::awaitable<void> pass_parent_bytes(TunnelSetup& setup) {
  if (!setup.write_error && setup.from_parent.size() > 0) {
    auto [error, written] =
        co_await asio::async_write(setup.context.client, setup.from_parent.data(), use_tuple);
    setup.write_error = error;
    setup.early_down = written;
  }
  setup.from_parent = boost::beast::flat_buffer();
}

// A tunnel to an address whose ClientHello named `name`: the name is a destination like any
// other, decided by the same stages (admission.hpp: the policy, a person's answer or an earlier
// one, LaunchDarkly), and then the connection is counted against the name's budgets too (the
// limits its address and requested name did not already count): an upload to the name through
// its address meets the name's budgets. False when the tunnel is over (denied: logged, closed).
asio::awaitable<bool> decide_name_given(TunnelSetup& setup, const rules::Host& name) {
  SessionContext& context = setup.context;
  DecisionState& decided = setup.decided;
  // (A denial report-only mode let through earlier stays the request's; decide_admission starts
  // its own.)
  const std::optional<Reported> earlier = decided.reported();
  Admission admission = co_await decide_admission(context, decided, setup.method, name, setup.port);
  if (earlier) {
    decided.forget_reported();
    decided.keep_reported(earlier->reason, earlier->rule, earlier->sentence);
  }
  if (admission.status == Admission::Status::over) {
    co_return false;
  }
  if (admission.refused()) {
    deny_established(setup, admission.refusal.reason, admission.refusal.rule,
                     "the TLS name: " + admission.refusal.sentence);
    co_return false;
  }
  setup.facts.tls_name_answered = admission.decision.answered;
  BudgetCheck counted =
      co_await count_against_budgets(context, decided, setup.method, rules::BudgetKind::connections,
                                     setup.host, setup.port, setup.facts.dialled, &name);
  if (counted.over) {
    co_return false;
  }
  if (counted.refusal) {
    deny_established(setup, counted.refusal->reason, counted.refusal->rule,
                     counted.refusal->sentence);
    co_return false;
  }
  co_return context.still_wanted(setup.method, setup.display, setup.port);
}

// On a TLS port, what the client sends first decides before a byte goes upstream: the protocol
// actually spoken, not the port number (inspect_first_bytes). On other ports the client's stream
// is read as a tolerant SSH server reads it (rules/ssh_identification.hpp): bytes that came with
// the request are looked at here, and the relay watches what follows from where they left off
// (server-first protocols must still work, so nothing waits for them here). False when the
// tunnel is over (denied, or the drain or a reload ended it; logged either way).
asio::awaitable<bool> look_at_first_bytes(TunnelSetup& setup, boost::beast::flat_buffer& buffer) {
  SessionContext& context = setup.context;
  const DecisionState& decided = setup.decided;
  const auto& tls_ports = decided.settings().tls_ports;
  const bool tls_port =
      decided.settings().sni_check &&
      std::find(tls_ports.begin(), tls_ports.end(), setup.port) != tls_ports.end();
  if (tls_port) {
    const FirstBytes first = co_await inspect_first_bytes(context, decided, setup.host, buffer);
    if (!context.still_wanted(setup.method, setup.display, setup.port) ||
        !first_bytes_pass(setup, first.decision, first.tls_name.value_or(setup.host))) {
      co_return false;
    }
    setup.facts.ssh = first.ssh;
    setup.tls = first.tls;
    setup.offers_h2 = first.offers_h2;
    if (first.tls_name) {
      if (!co_await decide_name_given(setup, *first.tls_name)) {
        co_return false;
      }
      setup.facts.tls_name = std::make_shared<const rules::Host>(*first.tls_name);
    }
    setup.add_note(first.note);
    co_return true;
  }
  auto& watch = setup.ssh_watch.emplace();
  if (buffer.size() > 0) {
    co_await watch_early_bytes(context, decided, buffer, watch);
    if (!context.still_wanted(setup.method, setup.display, setup.port)) {
      co_return false;
    }
  }
  if (watch.verdict() == rules::SshIdentificationWatch::Verdict::ssh) {
    if (!first_bytes_pass(setup, decided.policy().decide_ssh(setup.host), setup.host)) {
      co_return false;
    }
    setup.facts.ssh = true;
  }
  if (watch.verdict() != rules::SshIdentificationWatch::Verdict::undecided) {
    setup.ssh_watch.reset();  // decided: the relay need not look
  }
  co_return true;
}

// The tunnel's decision line: allowed, or (report-only mode) the first denial let through.
void record_tunnel_decision(TunnelSetup& setup, const std::string& rule) {
  SessionContext& context = setup.context;
  if (const auto& why = setup.decided.reported()) {
    context.record_decision(connect_line(setup, setup.upstream_address, why->rule, why->sentence),
                            why->reason, false);
  } else {
    context.record_decision(connect_line(setup, setup.upstream_address, rule, setup.note),
                            rules::Reason::allowed);
  }
}

// Passes on what the parent sent behind its head, and what the client sent so far (the start of
// the tunnelled stream: a TLS ClientHello, possibly sent before our 200 arrived), then hands the
// sockets to a TunnelSession and lets the set-up's coroutines finish, so a long-lived tunnel
// holds no coroutine frames. A write that failed during the set-up ends the tunnel here, with
// its end line.
asio::awaitable<void> hand_over(TunnelSetup& setup, boost::beast::flat_buffer& buffer) {
  SessionContext& context = setup.context;
  const DecisionState& decided = setup.decided;
  co_await pass_parent_bytes(setup);
  if (!setup.write_error && buffer.size() > 0) {
    // These bytes leave before the relay counts anything: taken from the budgets first, and
    // only as many as they allow (the origin gets exactly the budget, as from the relay).
    std::size_t allowed = buffer.size();
    std::optional<budget::Stop> stop;
    if (budget::Ledger* ledger = context.worker.shared.budgets;
        ledger != nullptr && !decided.policy().budgets().empty()) {
      budget::DestinationBudgets budgets(*ledger, decided.policy().shared_budgets(), setup.host,
                                         setup.port, setup.facts.dialled,
                                         setup.facts.tls_name.get());
      if (decided.reports(rules::Reason::budget_exhausted)) {
        (void)budgets.charge(rules::BudgetKind::up, allowed);  // the relay reports a spent one
      } else {
        allowed = static_cast<std::size_t>(budgets.reserve(rules::BudgetKind::up, allowed));
        if (allowed < buffer.size()) {
          stop = budgets.stop(rules::BudgetKind::up);
        }
      }
    }
    auto [error, forwarded] = co_await asio::async_write(
        context.upstream, asio::buffer(buffer.data().data(), allowed), use_tuple);
    setup.write_error = error;
    setup.early_up = forwarded;
    if (!context.still_wanted(setup.method, setup.display, setup.port)) {
      co_return;
    }
    if (stop && !setup.write_error) {
      // Cut where the budget ended, before the relay began: the origin gets the end of the
      // stream there; the client's connection closes. One end line, the denial.
      boost::system::error_code ignored;
      context.upstream.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      context.client.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      context.upstream.close(ignored);
      context.client.close(ignored);
      log::Record end = connect_line(setup, {}, stop->rule, stop->sentence);
      end.event = log::Record::Event::end;
      end.outcome = "budget-exhausted";
      end.bytes_up = setup.early_up;
      end.bytes_down = setup.early_down;
      end.duration_ms = context.elapsed_ms();
      record_late_denial(context.worker, end, rules::Reason::budget_exhausted);
      co_return;
    }
  }
  // The head buffer is done with: free it before a possibly long-lived tunnel.
  buffer = boost::beast::flat_buffer();

  if (setup.write_error) {
    boost::system::error_code ignored;
    context.client.close(ignored);
    context.upstream.close(ignored);
    const std::string detail =
        "the tunnel broke while it was being set up: " + setup.write_error.message() + ".";
    log::Record end = connect_line(setup, {}, {}, detail);
    end.event = log::Record::Event::end;
    end.outcome = "reset";
    end.bytes_up = setup.early_up;
    end.duration_ms = context.elapsed_ms();
    context.record_end(end);
    co_return;
  }
  Destination registered = std::move(*context.live.destination);
  context.live.destination.reset();
  TunnelSession::start(context, setup.display, std::move(registered), setup.early_up,
                       std::move(setup.ssh_watch), std::string(setup.method), setup.early_down);
}

// Whether tunnels to `port` have their first bytes looked at (a TLS port, with the SNI check on):
// only those can be inspected.
bool is_tls_port(const DecisionState& decided, std::uint16_t port) {
  const auto& tls_ports = decided.settings().tls_ports;
  return decided.settings().sni_check &&
         std::find(tls_ports.begin(), tls_ports.end(), port) != tls_ports.end();
}

// What a tunnel asks of its upstream (upstream_source.hpp): a tunnel counts as a connection;
// one that will be inspected if its client speaks TLS (a name on a TLS port the inspection
// patterns name) may take a verified connection the worker keeps for host:port instead of a
// dial. `alpn`: what the client asks by ALPN, unknown before its ClientHello (fit_taken_origin()
// then checks).
UpstreamWish tunnel_wish(SessionContext& context, const DecisionState& decided,
                         std::string_view method, const rules::Host& host, std::uint16_t port,
                         ClientAlpn alpn) {
  const bool may_inspect = context.worker.shared.inspection != nullptr && !host.is_ip() &&
                           is_tls_port(decided, port) &&
                           decided.policy().requests().inspects(host, port);
  UpstreamWish wish;
  wish.method = method;
  wish.host = host;
  wish.port = port;
  wish.use = UpstreamUse::tunnel;
  wish.may_take_idle = may_inspect;
  wish.may_borrow_h2 = may_inspect;
  wish.alpn = alpn;
  return wish;
}

// Stages 1-4 for a tunnel, the one composition of admission for every front end that opens one:
// the decision (decide_admission: the policy, a question, LaunchDarkly); a tunnel that must not
// be spliced (a host with request rules, an address while they are in force) refused, before
// anything is dialled, on a port whose tunnels are not looked into; the connection budgets looked
// at; the upstream (get_upstream: one the worker keeps, else a dial); and the connection counted
// once the address is known (an entry for it counts names that lead there), before the client
// hears the tunnel is up. `from_parent` receives what a parent sent behind its reply head.
asio::awaitable<Admission> admit_tunnel(SessionContext& context, DecisionState& decided,
                                        std::string_view method, const rules::Host& host,
                                        std::uint16_t port,
                                        boost::beast::flat_buffer& from_parent) {
  Admission admission = co_await decide_admission(context, decided, method, host, port);
  if (admission.admitted() && !is_tls_port(decided, port) &&
      !decided.reports(rules::Reason::not_inspectable)) {
    if (const SpliceBar bar = splice_bar(decided.policy(), host, nullptr, port);
        bar != SpliceBar::none) {
      admission.status = Admission::Status::refused;
      admission.refusal = {rules::Reason::not_inspectable,
                           splice_bar_sentence(bar, host, nullptr, port)};
    }
  }
  if (admission.admitted()) {
    UpstreamWish wish = tunnel_wish(context, decided, method, host, port, ClientAlpn::unknown);
    wish.count_connection = true;
    co_await get_upstream(context, decided, admission, wish, from_parent);
  }
  co_return admission;
}

// A connection taken before the client spoke (admit_tunnel) is kept only for a client the gate
// inspects and that it serves as a fresh one would (serves(); a shared HTTP/2 one only a client
// that offers h2): a client that offers h2 is never answered in HTTP/1.1 by an origin that speaks
// h2, nor SSH on port 443 sent into a TLS connection. Otherwise an idle one goes back to the pool
// for a client it serves, and the tunnel takes one that serves this client, or dials; the success
// was sent, so a dial that fails closes the tunnel with its reason. False when the tunnel is over
// (logged).
asio::awaitable<bool> fit_taken_origin(TunnelSetup& setup, Admission& admission) {
  SessionContext& context = setup.context;
  const ClientAlpn alpn = setup.facts.offers_h2 ? ClientAlpn::h2 : ClientAlpn::http1;
  const bool fits =
      context.secured_origin ? serves(*context.secured_origin, alpn) : alpn == ClientAlpn::h2;
  if (setup.facts.inspected && fits) {
    co_return true;
  }
  context.shared_h2_origin.reset();  // the pool keeps it for its other clients
  if (std::unique_ptr<SecuredOrigin> idle = std::move(context.secured_origin)) {
    idle->socket = std::move(context.upstream);
    idle->tls->next_layer().point_at(idle->socket);
    context.worker.origins->park(setup.display + ":" + std::to_string(setup.port), std::move(idle));
  }
  // (The tunnel was counted as it was admitted: this is the same connection.)
  UpstreamWish wish =
      tunnel_wish(context, setup.decided, setup.method, setup.host, setup.port, alpn);
  wish.may_take_idle = wish.may_take_idle && setup.facts.inspected;
  wish.may_borrow_h2 = wish.may_borrow_h2 && setup.facts.inspected;
  co_await get_upstream(context, setup.decided, admission, wish, setup.from_parent);
  if (admission.refused()) {
    deny_established(setup, admission.refusal.reason, admission.refusal.rule,
                     admission.refusal.sentence);
    co_return false;
  }
  if (!admission.admitted()) {
    co_return false;
  }
  setup.upstream_address = to_text(admission.endpoint);
  setup.facts.dialled = admission.dialled;
  co_return true;
}

// Whether the gate inspects the tunnel, decided once from what its set-up saw: a TLS
// ClientHello, inspection on, and a host with request rules or named by the inspection
// patterns. False also when a tunnel that must not be spliced (splice_bar) was denied (logged,
// closed); report-only mode lets it through spliced, logged as would-deny. Sets
// setup.facts.inspected.
bool decide_inspection(TunnelSetup& setup) {
  SessionContext& context = setup.context;
  DecisionState& decided = setup.decided;
  ConnectionFacts& facts = setup.facts;
  const rules::Host* tls_name = facts.tls_name.get();
  const SpliceBar bar = splice_bar(decided.policy(), facts.requested, tls_name, setup.port);
  // A nameless address is not inspected even when it could be: its requests would be judged as
  // the address, by no host's rules.
  const bool inspectable = setup.tls && !setup.write_error &&
                           context.worker.shared.inspection != nullptr &&
                           bar != SpliceBar::nameless_address;
  facts.inspected =
      inspectable && (bar == SpliceBar::request_rules ||
                      decided.policy().requests().inspects(facts.served_host(), setup.port));
  // h2 when the client offers it: every stream runs the same request pipeline as an HTTP/1.1
  // request (exchange/pipeline/), the MCP stage of a host with MCP lines included.
  facts.offers_h2 = facts.inspected && setup.offers_h2;
  if (facts.inspected || bar == SpliceBar::none) {
    return true;
  }
  const std::string sentence = splice_bar_sentence(bar, facts.requested, tls_name, setup.port);
  if (!decided.reports(rules::Reason::not_inspectable)) {
    deny_established(setup, rules::Reason::not_inspectable, {}, sentence);
    return false;
  }
  decided.keep_reported(rules::Reason::not_inspectable, {}, sentence);
  return true;
}

}  // namespace

asio::awaitable<void> refuse_tunnel(SessionContext& context, const TunnelFrontEnd& front,
                                    std::string_view host, std::uint16_t port,
                                    const Refusal& refusal) {
  record_refusal(context, front.method, host, port, refusal);
  co_await front.send_refusal(context, refusal.reason, refusal.sentence, refusal.at);
  co_await close_gracefully(context.client);
}

asio::awaitable<std::optional<ConnectionFacts>> open_tunnel(
    SessionContext& context, DecisionState& decided, const TunnelFrontEnd& front,
    const rules::Host& host, std::uint16_t port, boost::beast::flat_buffer& buffer) {
  // 2-4. The admission pipeline: the policy, a question, LaunchDarkly, the upstream.
  boost::beast::flat_buffer from_parent;  // the destination's first bytes, behind the parent's head
  Admission admission =
      co_await admit_tunnel(context, decided, front.method, host, port, from_parent);
  if (admission.refused()) {
    co_await refuse_tunnel(context, front, host.display(), port, admission.refusal);
    co_return std::nullopt;
  }
  if (!admission.admitted()) {
    co_return std::nullopt;
  }
  TunnelSetup setup(context, decided, front.method, host, port, to_text(admission.endpoint),
                    admission.note());
  setup.facts.requested = host;
  setup.facts.port = port;
  setup.facts.answered = admission.decision.answered;
  setup.facts.dialled = admission.dialled;
  setup.from_parent = std::move(from_parent);

  // 5. Tell the client the tunnel is up, then look at what it sends first. (What the parent
  // sent behind its head waits until the tunnel is known to be spliced.)
  setup.write_error = co_await front.send_established(context);
  if (!setup.write_error) {
    // (Nested, not `&&`: GCC 12 mishandles co_await in a short-circuit operand.)
    if (!co_await look_at_first_bytes(setup, buffer)) {
      co_return std::nullopt;
    }
  }

  // 6. Inspected or spliced, decided once; from here on the facts are only read. An idle origin
  // connection taken before the client spoke must serve what it turned out to be. An inspected
  // tunnel's origin has nothing to say before the gate's ClientHello: bytes the parent passed
  // behind its head would reach the client outside the gate's TLS, so the tunnel is refused.
  if (!decide_inspection(setup)) {
    co_return std::nullopt;
  }
  if ((context.secured_origin || context.shared_h2_origin) && !setup.write_error) {
    // (Nested, not `&&`: GCC 12 mishandles co_await in a short-circuit operand.)
    if (!co_await fit_taken_origin(setup, admission)) {
      co_return std::nullopt;
    }
  }
  const ConnectionFacts& facts = setup.facts;
  if (facts.inspected && setup.from_parent.size() > 0) {
    deny_established(setup, rules::Reason::bad_response, {},
                     bytes_before_handshake(host, port, setup.from_parent.size()));
    co_return std::nullopt;
  }

  // 7. A reload while this tunnel was being set up: the rules now in force judge it again, as
  // they judged every tunnel already open. From here on a reload finds it registered.
  if (auto revoked = context.register_destination(decided, facts.destination(facts.dialled))) {
    deny_established(setup, revocation_reason(*revoked), revoked->rule, revoked->detail);
    co_return std::nullopt;
  }
  record_tunnel_decision(setup, admission.rule());
  // 8. Inspected: the front end serves its requests (inspected_connection.hpp) from these
  // facts. Otherwise the relay splices it.
  if (facts.inspected) {
    co_return facts;
  }
  co_await hand_over(setup, buffer);
  co_return std::nullopt;
}

}  // namespace sandgate::session
