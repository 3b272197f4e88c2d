// Through the parent proxy: connect, CONNECT, read its reply head. See parent_dial.hpp.
#include "proxy/session/parent_dial.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <optional>
#include <span>
#include <string>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/settings/parent_route.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using ParentDial = metrics::WorkerMetrics::ParentDial;

DialResult parent_failure(rules::Reason reason, std::string sentence,
                          const asio::ip::tcp::endpoint& endpoint) {
  DialResult result;
  result.reason = reason;
  result.sentence = std::move(sentence);
  result.endpoint = endpoint;
  return result;
}

// The TCP connection to the parent, its outcome not yet counted.
asio::awaitable<DialResult> connect_to_parent(SessionContext& context, DecisionState& decided,
                                              const parent::ParentAddress& parent) {
  DialResult dial =
      co_await dial_upstream(context, decided, parent.host, parent.port, AddressChecks::none);
  if (!dial.connected) {
    // Whatever failed (its name, the connect, the timeout), it is the parent that is missing:
    // one reason for all of it, the sentence saying which.
    dial.reason = rules::Reason::parent_unreachable;
    dial.sentence =
        "the parent proxy " + parent.display() + " could not be reached: " + dial.sentence;
  }
  co_return dial;
}

// The parent's reply head to CONNECT, or why it cannot be used.
struct ParentReply {
  parent::ReplyHead head;
  std::optional<std::string> unusable;  // the sentence of a parent-unreachable refusal
};

// Reads the reply head strictly, within `deadline`; the buffer's maximum bounds it (one byte
// over the limit is how an overlong head shows). What follows the head stays in `from_parent`.
asio::awaitable<ParentReply> read_parent_reply(SessionContext& context,
                                               asio::steady_timer& deadline,
                                               boost::beast::flat_buffer& from_parent,
                                               const std::string& where, const std::string& target,
                                               const std::string& timed_out) {
  ParentReply reply;
  from_parent.clear();
  from_parent.max_size(parent::kReplyHeadLimit + 1);
  for (;;) {
    const auto data = from_parent.data();
    reply.head = parent::read_reply_head(
        std::span<const char>(static_cast<const char*>(data.data()), data.size()));
    if (reply.head.status != parent::ReplyHead::Status::need_more) {
      break;
    }
    const std::size_t room = from_parent.max_size() - from_parent.size();
    if (room == 0) {
      reply.unusable =
          where + "'s reply head is over " + std::to_string(parent::kReplyHeadLimit) + " bytes.";
      co_return reply;
    }
    auto space = from_parent.prepare(std::min<std::size_t>(4096, room));
    auto got = co_await (context.upstream.async_read_some(space, use_tuple) ||
                         deadline.async_wait(use_tuple));
    if (got.index() == 1) {
      reply.unusable = timed_out;
      co_return reply;
    }
    auto [error, n] = std::get<0>(got);
    if (error) {
      reply.unusable = where + " closed the connection before answering CONNECT " + target + " (" +
                       error.message() + ").";
      co_return reply;
    }
    from_parent.commit(n);
  }
  if (reply.head.status == parent::ReplyHead::Status::malformed) {
    reply.unusable = where + " sent a reply the gate cannot use: " + reply.head.problem + ".";
  }
  co_return reply;
}

}  // namespace

asio::awaitable<DialResult> dial_parent(SessionContext& context, DecisionState& decided,
                                        const parent::ParentAddress& parent) {
  DialResult dial = co_await connect_to_parent(context, decided, parent);
  context.worker.metrics.count_parent_dial(dial.connected ? ParentDial::connected
                                                          : ParentDial::unreachable);
  co_return dial;
}

asio::awaitable<DialResult> connect_through_parent(SessionContext& context, DecisionState& decided,
                                                   const parent::ParentAddress& parent,
                                                   const rules::Host& host, std::uint16_t port,
                                                   boost::beast::flat_buffer& from_parent) {
  auto& metrics = context.worker.metrics;
  // 1. The parent itself.
  DialResult dial = co_await connect_to_parent(context, decided, parent);
  if (!dial.connected) {
    metrics.count_parent_dial(ParentDial::unreachable);
    co_return dial;
  }
  const asio::ip::tcp::endpoint endpoint = dial.endpoint;
  const std::string target = host.display() + ":" + std::to_string(port);
  const std::string where = "the parent proxy " + parent.display();
  boost::system::error_code ignored;
  const auto unreachable = [&](std::string sentence) {
    context.upstream.close(ignored);
    metrics.count_parent_dial(ParentDial::unreachable);
    return parent_failure(rules::Reason::parent_unreachable, std::move(sentence), endpoint);
  };

  // 2. The CONNECT, and the reply head within one deadline: the parent resolves the name and
  // connects in that time, so it gets the gate's own budget for both.
  const settings::Settings& settings = decided.settings();
  const auto budget = settings.connect_timeout + settings.dns_timeout;
  asio::steady_timer deadline(context.client.get_executor());
  deadline.expires_after(budget);
  const std::string timed_out = where + " did not answer CONNECT " + target + " within " +
                                std::to_string(budget.count()) + " s.";
  const parent::Credentials* credentials =
      settings.parent_credentials ? &*settings.parent_credentials : nullptr;
  const std::string request = parent::connect_request(host, port, credentials);
  auto sent = co_await (asio::async_write(context.upstream, asio::buffer(request), use_tuple) ||
                        deadline.async_wait(use_tuple));
  if (sent.index() == 1) {
    co_return unreachable(timed_out);
  }
  if (auto [error, n] = std::get<0>(sent); error) {
    co_return unreachable(where + " closed the connection before taking CONNECT " + target + " (" +
                          error.message() + ").");
  }

  // 3. Its reply head.
  const ParentReply reply =
      co_await read_parent_reply(context, deadline, from_parent, where, target, timed_out);
  if (reply.unusable) {
    co_return unreachable(*reply.unusable);
  }
  const parent::ReplyHead& head = reply.head;

  // 4. Only a 2xx opens the tunnel. A refusal's body (an error page) is the parent's message to
  // a browser, not to this client: it is dropped with the connection, never passed on.
  if (head.code < 200 || head.code > 299) {
    context.upstream.close(ignored);
    metrics.count_parent_dial(ParentDial::refused);
    std::string sentence = where + " answered " + std::to_string(head.code) +
                           (head.reason_phrase.empty() ? "" : " " + head.reason_phrase) +
                           " to CONNECT " + target + ".";
    if (head.code == 407) {
      sentence += credentials ? " It refused the credentials of --parent-proxy-credentials."
                              : " It wants credentials: set --parent-proxy-credentials.";
    }
    co_return parent_failure(rules::Reason::parent_refused, std::move(sentence), endpoint);
  }
  from_parent.consume(head.head_length);
  metrics.count_parent_dial(ParentDial::connected);
  co_return dial;
}

std::string bytes_before_handshake(const rules::Host& host, std::uint16_t port, std::size_t count) {
  return "the parent proxy passed " + std::to_string(count) + " bytes from " + host.display() +
         ":" + std::to_string(port) +
         " behind its reply, before the gate's TLS handshake with the origin: an inspected "
         "connection's origin speaks only after it, and nothing reaches the client outside the "
         "gate's own TLS.";
}

void use_parent_form(boost::beast::http::request_header<>& head, const settings::Settings& settings,
                     const HttpTarget& target) {
  if (settings::parent_for(settings, target.host, target.port) == nullptr) {
    return;
  }
  std::string absolute = "http://" + target.authority;
  if (target.origin_form != "*") {
    absolute += target.origin_form;
  }
  head.target(absolute);
  if (settings.parent_credentials) {
    head.set(boost::beast::http::field::proxy_authorization,
             parent::proxy_authorization(*settings.parent_credentials));
  }
}

}  // namespace sandgate::session
