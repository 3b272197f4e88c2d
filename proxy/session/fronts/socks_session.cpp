// A SOCKS5 client's handshake, then the shared tunnel path. See socks_session.hpp.
#include "proxy/session/fronts/socks_session.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <span>
#include <string>
#include <vector>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/fronts/inspected_connection.hpp"
#include "proxy/session/graceful_close.hpp"
#include "proxy/session/open_tunnel.hpp"
#include "proxy/session/wire/proxy_token.hpp"
#include "rules/host.hpp"

namespace sandgate::session {

// A reason without a code here is a compile error, not a silent general_failure.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
socks::ReplyCode socks_reply_code(rules::Reason reason) {
  using rules::Reason;
  using socks::ReplyCode;
  switch (reason) {
    case Reason::allowed:
      return ReplyCode::succeeded;
    // The policy, LaunchDarkly, the token: the ruleset said no.
    case Reason::loopback:
    case Reason::local_address:
    case Reason::ip_address:
    case Reason::metadata_address:
    case Reason::private_address:
    case Reason::reserved_address:
    case Reason::blocklist:
    case Reason::port_not_allowed:
    case Reason::ssh_disabled:
    case Reason::ssh_non_git_host:
    case Reason::not_allowlisted:
    case Reason::launchdarkly:
    case Reason::launchdarkly_unreachable:
    case Reason::sni_mismatch:
    case Reason::sni_missing:
    case Reason::protocol_mismatch:
    case Reason::unknown_destination:
    case Reason::ask_denied:
    case Reason::ask_timeout:
    case Reason::ask_unavailable:
    case Reason::host_mismatch:        // capture only: never a SOCKS client's
    case Reason::dns_refused:          // capture only: never a SOCKS client's
    case Reason::request_denied:       // inside a tunnel: never before a SOCKS reply
    case Reason::request_not_allowed:  // inside a tunnel: never before a SOCKS reply
    case Reason::not_inspectable:
    case Reason::secret_refused:
    case Reason::budget_exhausted:
    case Reason::auth_required:
    case Reason::auth_failed:
      return ReplyCode::not_allowed_by_ruleset;
    // What the client sent is unusable.
    case Reason::invalid_host:
    case Reason::bad_request:
    case Reason::origin_form:
    case Reason::https_absolute_form:
    case Reason::unsupported_scheme:
    case Reason::header_too_large:
    case Reason::socks4_refused:
      return ReplyCode::general_failure;
    case Reason::socks_command_unsupported:
      return ReplyCode::command_not_supported;
    // Reaching the destination.
    case Reason::dns_not_found:
    case Reason::dns_error:
    case Reason::destination_unavailable:
      return ReplyCode::host_unreachable;
    case Reason::connection_refused:
      return ReplyCode::connection_refused;
    // Inspection, inside a tunnel already established: never before a SOCKS reply.
    case Reason::origin_certificate:
    case Reason::client_tls_failed:
      return ReplyCode::general_failure;
    // The parent proxy: its refusal is a ruleset's (most often its ACLs), its absence the
    // network's.
    case Reason::parent_refused:
      return ReplyCode::not_allowed_by_ruleset;
    case Reason::parent_unreachable:
      return ReplyCode::network_unreachable;
    case Reason::request_timeout:
    case Reason::dns_timeout:
    case Reason::connection_timeout:
    case Reason::response_timeout:
      return ReplyCode::ttl_expired;
    // Never a tunnel's (plain-HTTP responses), or the gate's own trouble.
    case Reason::upstream_closed:
    case Reason::bad_response:
    case Reason::connection_limit:
    case Reason::shutting_down:
    case Reason::client_closed:
    case Reason::no_request:
    case Reason::internal_error:
      return ReplyCode::general_failure;
  }
  return ReplyCode::general_failure;  // not reached: every enumerator has its case
}
#pragma GCC diagnostic pop

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

constexpr std::string_view kSocksMethod = "SOCKS5";

std::span<const std::uint8_t> bytes_of(const beast::flat_buffer& buffer) {
  const auto data = buffer.data();
  return {static_cast<const std::uint8_t*>(data.data()), data.size()};
}

// How reading one handshake message ended.
enum class Got : std::uint8_t { message, malformed, timeout, closed };

template <typename Message>
struct Received {
  Got got = Got::closed;
  socks::Read<Message> read;
};

// Reads one handshake message with `reader`, from what `buffer` holds first and then from the
// client, until `timer` (set to the handshake's deadline) fires. Consumes exactly the message's
// bytes: what follows is the next message or the start of the tunnel. A message is at most
// socks::kLongestMessage bytes, so the buffer never holds more than that and one read.
template <typename Message>
asio::awaitable<Received<Message>> receive(
    tcp::socket& client, beast::flat_buffer& buffer, asio::steady_timer& timer,
    socks::Read<Message> (*reader)(std::span<const std::uint8_t>)) {
  Received<Message> received;
  for (;;) {
    received.read = reader(bytes_of(buffer));
    if (received.read.status == socks::ReadStatus::complete) {
      buffer.consume(received.read.used);
      received.got = Got::message;
      co_return received;
    }
    if (received.read.status == socks::ReadStatus::malformed) {
      received.got = Got::malformed;
      co_return received;
    }
    const std::size_t room = buffer.max_size() - buffer.size();
    if (room == 0) {
      // Not reachable with a buffer larger than a message; refused rather than assumed.
      received.read.status = socks::ReadStatus::malformed;
      received.read.problem = "message larger than the gate's buffer";
      received.got = Got::malformed;
      co_return received;
    }
    auto outcome = co_await (
        client.async_read_some(buffer.prepare(std::min<std::size_t>(1024, room)), use_tuple) ||
        timer.async_wait(use_tuple));
    if (outcome.index() == 1) {
      received.got = Got::timeout;
      co_return received;
    }
    auto [error, n] = std::get<0>(outcome);
    if (error || n == 0) {
      received.got = Got::closed;
      co_return received;
    }
    buffer.commit(n);
  }
}

// Writes `bytes` to the client; true when all went.
asio::awaitable<bool> send(tcp::socket& client, std::span<const std::uint8_t> bytes) {
  auto [error, n] =
      co_await asio::async_write(client, asio::buffer(bytes.data(), bytes.size()), use_tuple);
  co_return !error;
}

// A refusal during the handshake: the decision line, `reply` (the message that fits the stage:
// a method choice, a credentials status or a request reply; empty when none does), then a
// graceful close.
asio::awaitable<void> refuse(SessionContext& context, rules::Reason reason, std::string_view host,
                             std::uint16_t port, std::string_view sentence,
                             std::span<const std::uint8_t> reply) {
  record_refusal(context, kSocksMethod, host, port, {reason, std::string(sentence)});
  if (!reply.empty()) {
    co_await send(context.client, reply);
  }
  co_await close_gracefully(context.client);
}

// The client left (or reset) in the middle of its handshake, at `stage`: an end line that names
// SOCKS5 and the stage, so that a SOCKS client that gave up is told apart in the log from an
// HTTP client that sent half a head. The drain's closing is the shared shutting-down line.
void record_abandoned(SessionContext& context, std::string_view stage) {
  if (context.stopping()) {
    context.record_no_request(true);
    return;
  }
  constexpr rules::Reason reason = rules::Reason::client_closed;
  const rules::Verdict verdict = rules::reason_info(reason).verdict;
  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = context.id;
  end.client = context.client_address;
  end.method = kSocksMethod;
  end.host = "-";
  end.verdict = rules::verdict_name(verdict);
  end.reason = rules::reason_code(reason);
  end.outcome = "closed";
  const std::string detail =
      "the client closed the connection in the middle of its SOCKS5 " + std::string(stage) + ".";
  end.detail = detail;
  end.duration_ms = context.elapsed_ms();
  context.record_end(end);
  context.worker.metrics.count_decision(verdict, reason);
}

// The handshake message did not come: logs why and closes. `request_stage`: the method has been
// chosen, so a timeout can still be answered with a request reply.
template <typename Message>
asio::awaitable<void> refuse_unreceived(SessionContext& context, const Received<Message>& received,
                                        std::string_view stage, bool request_stage) {
  switch (received.got) {
    case Got::message:
      break;
    case Got::closed:
      record_abandoned(context, stage);
      break;
    case Got::timeout: {
      const std::string sentence = "the SOCKS5 handshake did not complete within " +
                                   std::to_string(context.settings().head_timeout.count()) + " s.";
      const auto reply = socks::request_reply(socks_reply_code(rules::Reason::request_timeout));
      co_await refuse(
          context, rules::Reason::request_timeout, "-", 0, sentence,
          request_stage ? std::span<const std::uint8_t>(reply) : std::span<const std::uint8_t>());
      break;
    }
    case Got::malformed:
      break;  // the caller answers, in the stage's own message
  }
}

asio::awaitable<void> send_socks_refusal(SessionContext& context, rules::Reason reason,
                                         std::string_view /*sentence*/, DeniedAt /*at*/) {
  co_await send(context.client, socks::request_reply(socks_reply_code(reason)));
}

asio::awaitable<boost::system::error_code> send_socks_established(SessionContext& context) {
  // BND.ADDR 0.0.0.0, BND.PORT 0. RFC 1928 has the server's own end of the upstream connection
  // here, but that is the host's outbound address, which the sandbox has no business learning;
  // a CONNECT client does not use it (it matters to BIND, which the gate refuses).
  const auto reply = socks::request_reply(socks::ReplyCode::succeeded);
  auto [write_error, n] =
      co_await asio::async_write(context.client, asio::buffer(reply), use_tuple);
  co_return write_error;
}

constexpr TunnelFrontEnd kSocksFront{kSocksMethod, &send_socks_refusal, &send_socks_established};

bool offers(const socks::Greeting& greeting, socks::Method method) {
  return std::find(greeting.methods.begin(), greeting.methods.end(),
                   static_cast<std::uint8_t>(method)) != greeting.methods.end();
}

// The method phase, and the credentials when the token requires them. True when the client may
// send its request; otherwise the refusal has been logged and the connection closed.
asio::awaitable<bool> authenticate(SessionContext& context, beast::flat_buffer& buffer,
                                   asio::steady_timer& timer, const socks::Greeting& greeting) {
  // The token in force when the greeting arrived, not when the connection was accepted.
  context.take_current_settings();
  const std::string& token = context.settings().token;
  const auto none_acceptable = socks::method_reply(socks::Method::none_acceptable);
  if (token.empty()) {
    if (!offers(greeting, socks::Method::no_authentication)) {
      co_await refuse(context, rules::Reason::bad_request, "-", 0,
                      "the SOCKS5 client did not offer \"no authentication\", the only method "
                      "this gate (which has no token) accepts.",
                      none_acceptable);
      co_return false;
    }
    if (!co_await send(context.client, socks::method_reply(socks::Method::no_authentication))) {
      record_abandoned(context, "method reply");
      co_return false;
    }
    co_return true;
  }

  if (!offers(greeting, socks::Method::username_password)) {
    co_await refuse(context, rules::Reason::auth_required, "-", 0,
                    "this gate requires a token: use SOCKS5 username/password authentication "
                    "with any user name and the gate's token as the password (a proxy URL of "
                    "the form socks5h://USER:TOKEN@HOST:PORT does this).",
                    none_acceptable);
    co_return false;
  }
  if (!co_await send(context.client, socks::method_reply(socks::Method::username_password))) {
    record_abandoned(context, "method reply");
    co_return false;
  }
  const auto credentials =
      co_await receive(context.client, buffer, timer, &socks::read_credentials);
  const auto failure = socks::credentials_reply(false);
  if (credentials.got == Got::malformed) {
    co_await refuse(
        context, rules::Reason::auth_failed, "-", 0,
        "the SOCKS5 username/password message is not usable: " + credentials.read.problem + ".",
        failure);
    co_return false;
  }
  if (credentials.got != Got::message) {
    co_await refuse_unreceived(context, credentials, "username/password message", false);
    co_return false;
  }
  // Never a word of what was sent: a wrong token may be a right token for something else.
  if (!equals_secret(credentials.read.message.password, token)) {
    co_await refuse(context, rules::Reason::auth_failed, "-", 0,
                    "the password in the SOCKS5 username/password message is not this gate's "
                    "token.",
                    failure);
    co_return false;
  }
  if (!co_await send(context.client, socks::credentials_reply(true))) {
    record_abandoned(context, "credentials reply");
    co_return false;
  }
  co_return true;
}

std::string_view command_name(const socks::Request& request) {
  if (!request.command_known) {
    return "an unknown command";
  }
  switch (request.command) {
    case socks::Command::connect:
      return "CONNECT";
    case socks::Command::bind:
      return "BIND";
    case socks::Command::udp_associate:
      return "UDP ASSOCIATE";
  }
  return "an unknown command";
}

}  // namespace

asio::awaitable<void> serve_socks5(SessionContext& context, beast::flat_buffer& buffer,
                                   std::chrono::steady_clock::time_point deadline) {
  // One timer for the whole handshake: a client that trickles its messages is cut off at the
  // same deadline as a slow HTTP head.
  asio::steady_timer timer(context.client.get_executor());
  timer.expires_at(deadline);

  // 1. The greeting: which methods the client can do.
  const auto greeting = co_await receive(context.client, buffer, timer, &socks::read_greeting);
  if (greeting.got == Got::malformed) {
    co_await refuse(context, rules::Reason::bad_request, "-", 0,
                    "the SOCKS5 greeting is malformed: " + greeting.read.problem + ".",
                    socks::method_reply(socks::Method::none_acceptable));
    co_return;
  }
  if (greeting.got != Got::message) {
    co_await refuse_unreceived(context, greeting, "greeting", false);
    co_return;
  }

  // 2. The method, and the token when the gate requires one, before the request is looked at.
  if (!co_await authenticate(context, buffer, timer, greeting.read.message)) {
    co_return;
  }

  // 3. The request.
  const auto received = co_await receive(context.client, buffer, timer, &socks::read_request);
  if (received.got == Got::malformed) {
    co_await refuse(context, rules::Reason::bad_request, "-", 0,
                    "the SOCKS5 request is malformed: " + received.read.problem + ".",
                    socks::request_reply(received.read.reply));
    co_return;
  }
  if (received.got != Got::message) {
    co_await refuse_unreceived(context, received, "request", true);
    co_return;
  }
  timer.cancel();
  const socks::Request& request = received.read.message;

  // 4. The destination, parsed as strictly as a CONNECT's: a name with rules::parse_host, an
  // address as the IP literal it is (so the IP-literal rule applies to it).
  const std::string text = request.address_type == socks::Request::AddressType::domain
                               ? request.domain
                               : request.address.to_string();
  auto host = rules::parse_host(text);
  if (!host) {
    co_await refuse(context, rules::Reason::invalid_host, text, request.port,
                    "'" + text + "' is not a valid SOCKS5 destination: " +
                        std::string(rules::to_string(host.error())) + ".",
                    socks::request_reply(socks_reply_code(rules::Reason::invalid_host)));
    co_return;
  }
  if (!request.command_known || request.command != socks::Command::connect) {
    const auto reply =
        socks::request_reply(socks_reply_code(rules::Reason::socks_command_unsupported));
    co_await refuse(context, rules::Reason::socks_command_unsupported, host->display(),
                    request.port,
                    "the gate serves only the SOCKS5 CONNECT command, not " +
                        std::string(command_name(request)) + " (command byte " +
                        std::to_string(request.command_byte) + ").",
                    reply);
    co_return;
  }

  // 5. The same path as an HTTP CONNECT, with the rules in force now.
  DecisionState decided = context.arriving_request();
  context.live.destination.reset();
  context.live.revoked.reset();
  const std::optional<ConnectionFacts> inspected =
      co_await open_tunnel(context, decided, kSocksFront, *host, request.port, buffer);
  if (inspected) {
    co_await serve_inspected(context, decided, *inspected, kSocksFront.method, buffer);
  }
}

asio::awaitable<void> refuse_socks4(SessionContext& context) {
  record_refusal(context, "SOCKS4", "-", 0,
                 {rules::Reason::socks4_refused,
                  "SOCKS4 and SOCKS4a are not served (no authentication, no IPv6): use SOCKS5, "
                  "for example a proxy URL of the form socks5h://HOST:PORT."});
  const auto refusal = socks::socks4_refusal();
  co_await send(context.client, refusal);
  co_await close_gracefully(context.client);
}

asio::awaitable<void> answer_socks5_busy(tcp::socket& client, std::chrono::milliseconds wait) {
  // The greeting says which methods the client can follow. No tunnel is opened whatever it
  // sends, so credentials are acknowledged unchecked: the point is to reach the request reply,
  // the one message a client reports ("general SOCKS server failure"), instead of a method
  // failure that would send its user looking for an authentication problem.
  asio::steady_timer timer(client.get_executor());
  timer.expires_after(wait);
  beast::flat_buffer buffer(socks::kLongestMessage);
  const auto greeting = co_await receive(client, buffer, timer, &socks::read_greeting);
  if (greeting.got != Got::message) {
    co_return;  // not SOCKS5 after all, or too slow: nothing it would understand
  }
  std::vector<std::uint8_t> reply;
  const auto append = [&reply](auto bytes) {
    reply.insert(reply.end(), bytes.begin(), bytes.end());
  };
  if (offers(greeting.read.message, socks::Method::no_authentication)) {
    append(socks::method_reply(socks::Method::no_authentication));
  } else if (offers(greeting.read.message, socks::Method::username_password)) {
    append(socks::method_reply(socks::Method::username_password));
    append(socks::credentials_reply(true));
  } else {
    append(socks::method_reply(socks::Method::none_acceptable));
    co_await send(client, reply);
    co_return;
  }
  // Sent at once, ahead of the messages they answer: the client reads each in its turn, and
  // close_gracefully() then takes what it sends meanwhile.
  append(socks::request_reply(socks_reply_code(rules::Reason::connection_limit)));
  co_await send(client, reply);
}

}  // namespace sandgate::session
