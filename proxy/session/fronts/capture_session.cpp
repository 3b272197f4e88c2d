// Captured connections and the capture's DNS server. See capture_session.hpp.
#include "proxy/session/fronts/capture_session.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cctype>
#include <cstring>

#include "proxy/asio/close_on_exec.hpp"
#include "proxy/session/fronts/http_front.hpp"
#include "proxy/session/fronts/inspected_connection.hpp"
#include "proxy/session/graceful_close.hpp"
#include "proxy/session/open_tunnel.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"

#ifdef __linux__
#include "proxy/asio/use_tuple.hpp"
#include "rules/ascii.hpp"
#include "sandbox-profile/process/capture_sockets.hpp"
#endif

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;
using namespace asio::experimental::awaitable_operators;

constexpr std::string_view kCaptureMethod = "CAPTURE";
constexpr std::string_view kDnsMethod = "DNS";
// The first bytes the gate may hold of a captured connection: a plain-HTTP request (as on the
// explicit proxy) or a TLS ClientHello (its limit in connect_tunnel.cpp), with room.
constexpr std::size_t kFirstBytesLimit = kClientBufferLimit;
// The port whose connections are held to the plain-HTTP Host check.
constexpr std::uint16_t kHttpPort = 80;
// DNS-over-TCP clients one worker serves at once; one more is closed at once (a confined
// command has no reason for more: resolvers use TCP only for truncated answers).
constexpr std::size_t kMaxDnsTcpClients = 64;
// Queries one DNS-over-TCP connection may carry before it is closed.
constexpr int kMaxDnsTcpQueries = 1000;

// The capture's front end: nothing to answer (the command's connection is its tunnel already),
// and a refusal is the close that refuse_tunnel does after logging.
asio::awaitable<void> send_nothing(SessionContext&, rules::Reason, std::string_view, DeniedAt) {
  co_return;
}
asio::awaitable<boost::system::error_code> already_established(SessionContext&) {
  co_return boost::system::error_code{};
}
constexpr TunnelFrontEnd kCaptureFront{kCaptureMethod, &send_nothing, &already_established};

// Where the command meant to go: its original destination, the synthetic address read back to
// the name it stands for.
struct Target {
  rules::Host host;
  std::uint16_t port = 0;
  // The original destination is a loopback address: the connection was made to the capture
  // listener itself (loopback is never redirected), so it names no server. Dialling it would
  // reach the gate's own machine on that port, outside the command's namespace, and dialling
  // the listener's own address would loop.
  bool direct = false;
  bool unassigned = false;  // a synthetic address no name holds
};

std::optional<Target> captured_target(tcp::socket& client, capture::AddressBook& book) {
#ifdef __linux__
  sockaddr_storage original{};
  if (!sandbox::original_destination(client.native_handle(), original)) {
    return std::nullopt;
  }
  rules::IpAddress address;
  Target target;
  if (original.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&original);
    std::array<std::uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), &v6->sin6_addr, 16);
    address = rules::IpAddress::from_v6(bytes);
    target.port = ntohs(v6->sin6_port);
  } else {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&original);
    address = rules::IpAddress::from_v4(ntohl(v4->sin_addr.s_addr));
    target.port = ntohs(v4->sin_port);
  }
  const rules::AddressClass kind = rules::classify(address);
  target.direct = kind == rules::AddressClass::loopback || kind == rules::AddressClass::unspecified;
  const std::optional<std::string> name = book.name_of(address);
  // An address of the synthetic ranges that no name holds was never handed out: it stands for
  // no server, and must not be dialled as an IP literal (the IPv6 range is a unique-local
  // network another machine could use).
  target.unassigned = !name && book.is_synthetic(address);
  auto host = rules::parse_host(name ? *name : address.to_string());
  if (!host) {
    return std::nullopt;  // not reached: both are normal forms
  }
  target.host = std::move(*host);
  return target;
#else
  (void)client;
  (void)book;
  return std::nullopt;
#endif
}

// What the first bytes of a captured plain-HTTP connection said about its Host.
struct HostCheck {
  enum class Result { match, refused, not_http } result = Result::not_http;
  rules::Reason reason = rules::Reason::host_mismatch;  // for refused
  std::string sentence;
  std::string head;  // for match: the head to send on, rebuilt from what was checked
};

// The host of an authority ("name", "name:80", "[v6]:80"), normalised; nothing when invalid.
std::optional<std::string> authority_host(std::string_view authority) {
  std::string_view host = authority;
  if (host.starts_with("[")) {
    const auto close = host.find(']');
    if (close == std::string_view::npos) {
      return std::nullopt;
    }
    host = host.substr(0, close + 1);
  } else if (const auto colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  auto parsed = rules::parse_host(host);
  if (!parsed) {
    return std::nullopt;
  }
  return parsed->name;
}

HostCheck refused(rules::Reason reason, std::string sentence) {
  HostCheck check;
  check.result = HostCheck::Result::refused;
  check.reason = reason;
  check.sentence = std::move(sentence);
  return check;
}

// Judges a request head the strict reader parsed against `name`: one Host field naming it, and
// an absolute-form target, if any, naming it too. On a match, the head to send on: rebuilt from
// the parsed head (what was checked is what the origin reads), with its Connection fields made
// one that keeps their options but keep-alive and adds close. Only a connection's first request
// has its Host checked, and the tunnel after it is opaque; with close, a server must not read a
// second request on the connection (RFC 9112 9.6), so a client cannot send a first request for
// the name it dialled and a second for another site the same server hosts. Other options stay
// (upgrade, HTTP2-Settings): a protocol switched to is no more HTTP requests. Pure.
HostCheck judge_head(const boost::beast::http::request_header<>& head, const std::string& name) {
  namespace http = boost::beast::http;
  if (auto problem = request_framing_problem(head)) {
    return refused(rules::Reason::bad_request, *problem);
  }
  const std::string_view target = head.target();
  if (rules::ascii_lower(target.substr(0, 7)) == "http://") {
    const std::string_view rest = target.substr(7);
    const auto host = authority_host(rest.substr(0, rest.find_first_of("/?#")));
    if (!host || *host != name) {
      return refused(rules::Reason::host_mismatch, "the request's target " + std::string(target) +
                                                       " does not name " + name +
                                                       ", the server the connection was made to.");
    }
  } else if (!target.starts_with("/") && target != "*") {
    return refused(rules::Reason::host_mismatch,
                   "the request's target is neither a path nor an http:// URL for " + name + ".");
  }
  const std::size_t hosts = head.count(http::field::host);
  if (hosts != 1) {
    return refused(rules::Reason::host_mismatch, "the request carries " + std::to_string(hosts) +
                                                     " Host fields; exactly one naming " + name +
                                                     " is required.");
  }
  const std::string_view host_field = head[http::field::host];
  const auto host = authority_host(host_field);
  if (!host || *host != name) {
    return refused(rules::Reason::host_mismatch, "the request's Host '" + std::string(host_field) +
                                                     "' is not " + name +
                                                     ", the server the connection was made to.");
  }
  HostCheck check;
  check.result = HostCheck::Result::match;
  std::string& out = check.head;
  out.append(head.method_string()).append(" ").append(target);
  out += head.version() == 10 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n";
  std::string options;
  for (const auto& field : head) {
    if (field.name() != http::field::connection) {
      out.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
      continue;
    }
    std::string_view value = field.value();
    while (!value.empty()) {
      const auto comma = value.find(',');
      std::string_view token = value.substr(0, comma);
      value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
      token = rules::trim_ows(token);
      const std::string option = rules::ascii_lower(token);
      if (!token.empty() && option != "keep-alive" && option != "close") {
        options += std::string(token) + ", ";
      }
    }
  }
  out += "Connection: " + options + "close\r\n\r\n";
  return check;
}

// True when the first bytes (line breaks before them aside: an origin skips empty lines before
// a request line, RFC 9112 section 2.2) are not yet, or already not, an HTTP method's letters.
enum class Sniff { http, not_http, need_more };
Sniff sniff_method(std::string_view seen) {
  const auto start = seen.find_first_not_of("\r\n");
  if (start == std::string_view::npos) {
    return Sniff::need_more;
  }
  seen.remove_prefix(start);
  const auto space = seen.find(' ');
  const std::string_view method = seen.substr(0, std::min(space, seen.size()));
  if (!std::all_of(method.begin(), method.end(),
                   [](char c) { return (c >= 'A' && c <= 'Z') || c == '-' || c == '_'; }) ||
      (space == std::string_view::npos && seen.size() > 32)) {
    return Sniff::not_http;
  }
  return space == std::string_view::npos ? Sniff::need_more : Sniff::http;
}

// Reads a captured connection's first bytes on port 80 and, when they are an HTTP request,
// its head with the gate's one strict head reader (http_head.hpp: the same limits and line
// rules as the explicit proxy), then judges its Host. Bytes that are not an HTTP request line,
// and a client that sends nothing in time (a server-first protocol), are left to the tunnel's
// other checks.
asio::awaitable<HostCheck> check_http_host(SessionContext& context, const std::string& name,
                                           boost::beast::flat_buffer& buffer) {
  const auto deadline = std::chrono::steady_clock::now() + context.settings().head_timeout;
  asio::steady_timer timeout(context.client.get_executor());
  timeout.expires_at(deadline);
  for (;;) {
    const auto data = buffer.data();
    const Sniff sniff =
        sniff_method(std::string_view(static_cast<const char*>(data.data()), data.size()));
    if (sniff == Sniff::not_http) {
      co_return HostCheck{};  // let the tunnel's checks decide (SSH, or a binary protocol)
    }
    if (sniff == Sniff::http) {
      break;
    }
    const std::size_t room = buffer.max_size() - buffer.size();
    if (room == 0) {
      break;  // the head reader refuses what does not fit
    }
    auto space_in = buffer.prepare(std::min<std::size_t>(4096, room));
    auto outcome = co_await (context.client.async_read_some(space_in, use_tuple) ||
                             timeout.async_wait(use_tuple));
    if (outcome.index() == 1) {
      if (buffer.size() == 0) {
        co_return HostCheck{};
      }
      break;  // the head reader says it timed out
    }
    auto [error, n] = std::get<0>(outcome);
    if (error) {
      co_return HostCheck{};  // the client left: the tunnel's path logs how
    }
    buffer.commit(n);
  }
  HeadParser parser;
  parser.header_limit(kHttpHeadLimit);
  parser.body_limit(boost::none);
  const auto left =
      std::max(std::chrono::ceil<std::chrono::seconds>(deadline - std::chrono::steady_clock::now()),
               std::chrono::seconds(1));
  const HeadRead read =
      co_await read_request_head(context.client_stream, buffer, parser, left, kHttpHeadLimit);
  switch (read.status) {
    case HeadRead::Status::ok:
      co_return judge_head(parser.get(), name);
    case HeadRead::Status::closed:
      co_return HostCheck{};
    case HeadRead::Status::timeout:
      co_return refused(rules::Reason::request_timeout,
                        "the request head did not arrive in time (SANDGATE_HEAD_TIMEOUT).");
    case HeadRead::Status::too_large:
      co_return refused(rules::Reason::header_too_large,
                        "the request head is larger than the gate reads (16 KiB).");
    case HeadRead::Status::malformed:
      co_return refused(rules::Reason::bad_request,
                        "the request is not valid HTTP/1.1: " + read.problem + ".");
  }
  co_return HostCheck{};
}

// The client spoke HTTP: a refusal of its head (malformed, too large, too slow) is an HTTP reply
// it can read (the status and the reason's sentence), then the close. A reason without an HTTP
// status of its own (host-mismatch: the request was well formed, only not for this server) is
// the close alone, as for every other captured connection the gate refuses.
asio::awaitable<void> send_http_refusal(SessionContext& context, rules::Reason reason,
                                        std::string_view sentence, DeniedAt at) {
  if (rules::reason_info(reason).status == 0) {
    co_return;
  }
  const std::string reply = build_reply(reason, sentence, at);
  co_await asio::async_write(context.client, asio::buffer(reply), use_tuple);
}
constexpr TunnelFrontEnd kCaptureHttpFront{kCaptureMethod, &send_http_refusal,
                                           &already_established};

// What a captured client did first, on a port whose protocols speak first from the client (TLS,
// plain HTTP).
enum class FirstMove {
  spoke,   // its first bytes are in the buffer
  closed,  // it closed (or reset) the connection before sending a byte
  silent,  // nothing within the head timeout
};

// Waits, within the head timeout, for a captured client's first bytes (into `buffer`). Runtimes
// open spare connections they may never use (Bun, browsers' preconnect) and close them unused:
// nothing is decided, asked, reported or dialled for such a connection.
asio::awaitable<FirstMove> await_first_bytes(SessionContext& context,
                                             boost::beast::flat_buffer& buffer) {
  asio::steady_timer timeout(context.client.get_executor());
  timeout.expires_after(context.settings().head_timeout);
  auto space = buffer.prepare(std::min<std::size_t>(4096, buffer.max_size() - buffer.size()));
  auto outcome =
      co_await (context.client.async_read_some(space, use_tuple) || timeout.async_wait(use_tuple));
  if (outcome.index() == 1) {
    co_return FirstMove::silent;
  }
  auto [error, n] = std::get<0>(outcome);
  buffer.commit(n);
  if (n > 0) {
    co_return FirstMove::spoke;
  }
  co_return error ? FirstMove::closed : FirstMove::silent;
}

// The end line of a captured connection its client closed before sending a byte: not a denial
// (nothing was refused, and the run's summary does not list it), not an allowed tunnel (nothing
// was decided or dialled), counted as a connection without a request.
void record_closed_unused(SessionContext& context, const std::string& display, std::uint16_t port) {
  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = context.id;
  end.client = context.client_address;
  end.method = kCaptureMethod;
  end.host = display;
  end.port = port;
  end.verdict = rules::verdict_name(rules::reason_info(rules::Reason::no_request).verdict);
  end.reason = rules::reason_code(rules::Reason::no_request);
  end.outcome = "closed";
  end.detail =
      "the command closed the connection before sending a byte; nothing was decided or dialled "
      "for it.";
  end.duration_ms = context.elapsed_ms();
  context.log().write(end);
  context.worker.metrics.count_decision(rules::reason_info(rules::Reason::no_request).verdict,
                                        rules::Reason::no_request);
}

// A destination that names no server to reach: the capture's redirect did not bring it, it is
// the capture listener itself, or a synthetic address no name holds.
std::optional<Refusal> refuse_target(const Target& target) {
  if (target.direct) {
    return Refusal{rules::Reason::loopback,
                   "the connection was made to the capture listener itself, not redirected from "
                   "a server the command dialled: there is nothing behind it to reach."};
  }
  if (target.unassigned) {
    return Refusal{rules::Reason::invalid_host,
                   "a synthetic address the gate's DNS has not handed out: it stands for no "
                   "server (resolve the name again)."};
  }
  return std::nullopt;
}

// On a port where the client speaks first (TLS, plain HTTP), its first bytes are heard before
// anything is decided or dialled. False when the connection is over (closed unused, refused as
// silent on a TLS port, or no longer wanted).
asio::awaitable<bool> hear_first_bytes(SessionContext& context, const DecisionState& decided,
                                       const Target& target, const std::string& display,
                                       bool tls_port, boost::beast::flat_buffer& buffer) {
  const FirstMove first = co_await await_first_bytes(context, buffer);
  if (!context.still_wanted(kCaptureMethod, display, target.port)) {
    co_return false;
  }
  if (first == FirstMove::closed) {
    record_closed_unused(context, display, target.port);
    co_return false;
  }
  if (first == FirstMove::silent && tls_port && decided.settings().sni_check &&
      !decided.reports(rules::Reason::protocol_mismatch)) {
    co_await refuse_tunnel(
        context, kCaptureFront, display, target.port,
        {rules::Reason::protocol_mismatch,
         "the command sent nothing within the head timeout (SANDGATE_HEAD_TIMEOUT) on a TLS "
         "port, where the client speaks first; nothing was dialled."});
    co_return false;
  }
  co_return true;
}

// `buffer` holding the head as checked, then the bytes after it (a body, or requests the server
// will not read) as they came: one request per connection (judge_head).
void keep_checked_head(const HostCheck& check, boost::beast::flat_buffer& buffer) {
  const auto rest = buffer.data();
  std::string rewritten = check.head;
  rewritten.append(static_cast<const char*>(rest.data()), rest.size());
  boost::beast::flat_buffer closing(std::max(rewritten.size(), kFirstBytesLimit));
  closing.commit(asio::buffer_copy(closing.prepare(rewritten.size()), asio::buffer(rewritten)));
  buffer = std::move(closing);
}

// Plain HTTP to a name: its Host must be the name the address stands for. The policy before the
// head, so that a denied name is refused for its own reason without waiting for all of it. (A
// destination to ask about, or a denial report-only mode lets through, goes on: open_tunnel asks
// or reports it after the Host check.) False when the connection is over.
asio::awaitable<bool> check_plain_http(SessionContext& context, const DecisionState& decided,
                                       const Target& target, const std::string& display,
                                       boost::beast::flat_buffer& buffer) {
  const rules::Decision decision = decided.policy().decide(target.host, target.port);
  if (!decision.allowed() && !decision.ask && !decided.reports(decision.reason)) {
    co_await refuse_tunnel(
        context, kCaptureFront, display, target.port,
        {decision.reason, decided.policy().explain(decision, target.host, target.port),
         rules::rule_text(decision)});
    co_return false;
  }
  // (A silent client was waited for already: what it may speak is left to the tunnel.)
  HostCheck check;
  if (buffer.size() > 0) {
    check = co_await check_http_host(context, target.host.name, buffer);
  }
  if (!context.still_wanted(kCaptureMethod, display, target.port)) {
    co_return false;
  }
  if (check.result == HostCheck::Result::refused) {
    co_await refuse_tunnel(context, kCaptureHttpFront, display, target.port,
                           {check.reason, check.sentence});
    co_return false;
  }
  if (check.result == HostCheck::Result::match) {
    keep_checked_head(check, buffer);
  }
  co_return true;
}

asio::awaitable<void> serve_captured_connection(SessionContext& context,
                                                capture::AddressBook& book) {
  // What this connection is decided with: the rules in force as it arrives.
  DecisionState decided = context.arriving_request();
  const auto target = captured_target(context.client, book);
  if (!target) {
    co_await refuse_tunnel(context, kCaptureFront, "-", 0,
                           {rules::Reason::invalid_host,
                            "the connection carries no original destination (it did not come "
                            "through the capture's redirect)."});
    co_return;
  }
  const std::string display = target->host.display();
  if (const std::optional<Refusal> refusal = refuse_target(*target)) {
    co_await refuse_tunnel(context, kCaptureFront, display, target->port, *refusal);
    co_return;
  }
  boost::beast::flat_buffer buffer(kFirstBytesLimit);
  const auto& tls_ports = decided.settings().tls_ports;
  const bool tls_port =
      std::find(tls_ports.begin(), tls_ports.end(), target->port) != tls_ports.end();
  // (Other ports may carry server-first protocols: those are dialled at once.)
  if (tls_port || target->port == kHttpPort) {
    const bool heard =
        co_await hear_first_bytes(context, decided, *target, display, tls_port, buffer);
    if (!heard) {
      co_return;
    }
  }
  if (target->port == kHttpPort && !tls_port && !target->host.is_ip()) {
    const bool checked = co_await check_plain_http(context, decided, *target, display, buffer);
    if (!checked) {
      co_return;
    }
  }
  // (Named: GCC 12 mishandles a co_await inside an if's condition declaration.)
  const std::optional<ConnectionFacts> inspected =
      co_await open_tunnel(context, decided, kCaptureFront, target->host, target->port, buffer);
  if (inspected) {
    co_await serve_inspected(context, decided, *inspected, kCaptureFront.method, buffer);
  }
}

// Logs one DNS decision and counts it like any other (denials also in /denials).
void record_dns(WorkerContext& worker, const capture::DnsDecision& decision,
                const std::string& client) {
  log::Record line;
  line.connection_id = worker.shared.next_connection_id.fetch_add(1, std::memory_order_relaxed);
  line.client = client;
  line.method = kDnsMethod;
  line.host = decision.name;
  line.rule = decision.rule;
  const std::string detail = decision.type + ": " + decision.detail;
  line.detail = detail;
  const rules::ReasonInfo& row = rules::reason_info(decision.reason);
  if (row.verdict != rules::Verdict::allow) {
    record_late_denial(worker, line, decision.reason, /*enforced=*/!decision.would_deny);
    return;
  }
  line.verdict = rules::verdict_name(row.verdict);
  line.reason = row.code;
  worker.shared.log.write(line);
  worker.metrics.count_decision(row.verdict, decision.reason);
}

std::string endpoint_text(const udp::endpoint& endpoint) {
  const auto address = endpoint.address();
  return (address.is_v6() ? "[" + address.to_string() + "]" : address.to_string()) + ":" +
         std::to_string(endpoint.port());
}

// Keeps a DNS-over-TCP client where the drain can close it, and counts it per worker.
struct DnsTcpClient {
  WorkerContext& worker;
  LiveConnection live;
  static thread_local std::size_t count;  // per worker thread: no lock, no shared counter
  DnsTcpClient(WorkerContext& w, tcp::socket& socket) : worker(w) {
    live.client = &socket;
    worker.attach(live);
    ++count;
  }
  ~DnsTcpClient() {
    worker.detach(live);
    --count;
  }
};
thread_local std::size_t DnsTcpClient::count = 0;

asio::awaitable<void> serve_dns_tcp_client(WorkerContext& worker, tcp::socket socket,
                                           capture::AddressBook* book) {
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  const std::string client = ec ? std::string("unknown") : to_text(peer);
  // A connection closed without an answer gets its line too: every query or attempt at one the
  // command makes has a logged outcome.
  const auto closed_unanswered = [&](std::string sentence) {
    record_dns(worker,
               capture::DnsDecision{"-", "-", rules::Reason::dns_refused, {}, std::move(sentence)},
               client);
  };
  if (DnsTcpClient::count >= kMaxDnsTcpClients) {
    closed_unanswered("more than " + std::to_string(kMaxDnsTcpClients) +
                      " DNS-over-TCP connections at once: this one was closed.");
    socket.close(ec);
    co_return;
  }
  DnsTcpClient registered(worker, socket);
  asio::steady_timer timeout(socket.get_executor());
  std::array<std::uint8_t, kMaxDnsMessage> message{};
  for (int queries = 0; queries < kMaxDnsTcpQueries && !worker.stopping; ++queries) {
    // Each message, its two-byte length first, within the head timeout.
    timeout.expires_after(worker.settings->head_timeout);
    std::array<std::uint8_t, 2> prefix{};
    auto got = co_await (asio::async_read(socket, asio::buffer(prefix), use_tuple) ||
                         timeout.async_wait(use_tuple));
    if (got.index() == 1 || std::get<0>(std::get<0>(got))) {
      break;
    }
    const std::size_t length = (std::size_t{prefix[0]} << 8) | prefix[1];
    if (length == 0 || length > message.size()) {
      closed_unanswered("a DNS-over-TCP message of " + std::to_string(length) + " bytes (1.." +
                        std::to_string(message.size()) + " are read): the connection was closed.");
      break;
    }
    auto body =
        co_await (asio::async_read(socket, asio::buffer(message.data(), length), use_tuple) ||
                  timeout.async_wait(use_tuple));
    if (body.index() == 1) {
      closed_unanswered(
          "a DNS-over-TCP message did not arrive in full in time "
          "(SANDGATE_HEAD_TIMEOUT): the connection was closed.");
      break;
    }
    if (std::get<0>(std::get<0>(body))) {
      break;  // the client left mid-message: nobody to answer
    }
    const capture::DnsReply reply =
        capture::answer_query(std::span<const std::uint8_t>(message.data(), length), *worker.policy,
                              *book, !worker.settings->enforce);
    if (reply.decision) {
      record_dns(worker, *reply.decision, client);
    }
    if (reply.bytes.empty()) {
      break;
    }
    const std::array<std::uint8_t, 2> out_length{static_cast<std::uint8_t>(reply.bytes.size() >> 8),
                                                 static_cast<std::uint8_t>(reply.bytes.size())};
    const std::array<asio::const_buffer, 2> out{asio::buffer(out_length),
                                                asio::buffer(reply.bytes)};
    auto [write_error, written] = co_await asio::async_write(socket, out, use_tuple);
    if (write_error) {
      break;
    }
  }
  socket.close(ec);
}

}  // namespace

asio::awaitable<void> serve_captured(WorkerContext& worker, tcp::socket client,
                                     capture::AddressBook* book) {
  SessionContext context(worker, std::move(client));
  try {
    co_await serve_captured_connection(context, *book);
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

asio::awaitable<void> serve_dns_udp(WorkerContext& worker, udp::socket* socket,
                                    capture::AddressBook* book) {
  // One datagram at a time: a query is answered from memory, so there is nothing to wait for
  // between receiving and sending. A datagram longer than the buffer is cut and read as
  // malformed.
  std::array<std::uint8_t, kMaxDnsMessage> datagram{};
  while (socket->is_open() && !worker.stopping) {
    udp::endpoint from;
    auto [error, size] =
        co_await socket->async_receive_from(asio::buffer(datagram), from, use_tuple);
    if (error == asio::error::operation_aborted || !socket->is_open() || worker.stopping) {
      co_return;
    }
    if (error) {
      continue;  // an ICMP error for an earlier answer (the client had gone): nothing to do
    }
    try {
      const capture::DnsReply reply =
          capture::answer_query(std::span<const std::uint8_t>(datagram.data(), size),
                                *worker.policy, *book, !worker.settings->enforce);
      if (!reply.bytes.empty()) {
        co_await socket->async_send_to(asio::buffer(reply.bytes), from, use_tuple);
      }
      if (reply.decision) {
        record_dns(worker, *reply.decision, endpoint_text(from));
      }
    } catch (const std::exception& failure) {
      worker.shared.log.note("error", std::string("capture DNS: ") + failure.what());
    }
  }
}

asio::awaitable<void> serve_dns_tcp(WorkerContext& worker, tcp::acceptor* acceptor,
                                    capture::AddressBook* book) {
  asio::steady_timer pause(acceptor->get_executor());
  while (acceptor->is_open()) {
    auto [error, socket] = co_await acceptor->async_accept(use_tuple);
    if (error == asio::error::operation_aborted || !acceptor->is_open()) {
      co_return;
    }
    if (error) {
      // Out of descriptors: pause rather than spin, as the gate's own listener does.
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(use_tuple);
      continue;
    }
    descriptors::close_on_exec(socket.native_handle());  // (Asio's accept() leaves it inheritable)
    asio::co_spawn(acceptor->get_executor(), serve_dns_tcp_client(worker, std::move(socket), book),
                   asio::detached);
  }
}

}  // namespace sandgate::session
