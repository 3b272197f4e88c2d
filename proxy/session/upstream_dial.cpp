// Resolve, check, connect. See upstream_dial.hpp.
#include "proxy/session/upstream_dial.hpp"

#include <net/if.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <optional>
#include <vector>

#include "proxy/asio/close_on_exec.hpp"
#include "proxy/asio/use_tuple.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

asio::ip::address to_asio_address(const rules::IpAddress& address) {
  if (address.is_v4()) {
    return asio::ip::address_v4(address.v4_host_order());
  }
  asio::ip::address_v6 v6(address.bytes);
  if (!address.zone.empty()) {
    // A zone names an interface; an unknown one leaves scope 0, and the connect then fails.
    v6.scope_id(::if_nametoindex(address.zone.c_str()));
  }
  return v6;
}

// Opens the socket and starts a non-blocking connect on it, telling Asio the socket is
// non-blocking (so its wait adds no FIONBIO of its own) and skipping the poll() Asio's
// async_connect makes after the handshake. Returns in_progress while the handshake runs (wait for
// writability, then connect_result), success if it completed at once, or why it failed.
//
// Opened by Asio rather than by socket(SOCK_NONBLOCK | SOCK_CLOEXEC) and assign(): Asio marks an
// assigned descriptor as possibly duplicated and then adds an EPOLL_CTL_DEL to every close,
// which costs the call SOCK_NONBLOCK saves (bench/results/2026-11-26/syscalls.md).
boost::system::error_code start_connect(tcp::socket& socket, const tcp::endpoint& endpoint) {
  boost::system::error_code ec;
  socket.open(endpoint.protocol(), ec);
  if (!ec && !descriptors::close_on_exec(socket.native_handle())) {
    ec.assign(errno, boost::system::system_category());
  }
  if (!ec) {
    socket.native_non_blocking(true, ec);
  }
  if (ec) {
    return ec;
  }
  if (::connect(socket.native_handle(), endpoint.data(), static_cast<socklen_t>(endpoint.size())) ==
      0) {
    return {};
  }
  // Interrupted, the handshake still goes on in the kernel (a second connect() would only say
  // EALREADY): wait for it like any handshake in progress.
  if (errno == EINPROGRESS || errno == EINTR) {
    return asio::error::in_progress;
  }
  return {errno, boost::system::system_category()};
}

// The outcome of a non-blocking connect once the socket is writable (SO_ERROR).
boost::system::error_code connect_result(tcp::socket& socket) {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
    return {errno, boost::system::system_category()};
  }
  return {error, boost::system::system_category()};
}

DialResult failure(rules::Reason reason, std::string sentence) {
  DialResult result;
  result.reason = reason;
  result.sentence = std::move(sentence);
  return result;
}

}  // namespace

rules::IpAddress to_rules_address(const asio::ip::address& address) {
  if (address.is_v4()) {
    return rules::IpAddress::from_v4(address.to_v4().to_uint());
  }
  return rules::IpAddress::from_v6(address.to_v6().to_bytes());
}

namespace {

// The addresses a name resolves to (counted in the worker's DNS metrics), or why there are none.
struct Lookup {
  std::vector<asio::ip::address> addresses;
  std::optional<DialResult> failed;
};

asio::awaitable<Lookup> resolve_name(SessionContext& context, const std::string& name) {
  auto& metrics = context.worker.metrics;
  const auto lookup_started = std::chrono::steady_clock::now();
  dns::Resolution resolution = co_await context.worker.resolver->resolve(name);
  metrics.dns_lookup.observe(std::chrono::steady_clock::now() - lookup_started);
  if (resolution.error != dns::ResolveError::none) {
    metrics.dns_failures_total.add();
  }
  (resolution.from_hosts_file ? metrics.dns_hosts_file_answers
   : resolution.from_cache    ? metrics.dns_cache_hits
                              : metrics.dns_cache_misses)
      .add();
  metrics.dns_cache_entries.set(context.worker.resolver->cache_size());
  Lookup lookup;
  switch (resolution.error) {
    case dns::ResolveError::none:
      lookup.addresses = std::move(resolution.addresses);
      break;
    case dns::ResolveError::not_found:
      lookup.failed = failure(rules::Reason::dns_not_found,
                              name + " does not exist or has no addresses (DNS).");
      break;
    case dns::ResolveError::timeout:
      lookup.failed = failure(rules::Reason::dns_timeout, "looking up " + name + " timed out.");
      break;
    case dns::ResolveError::cancelled:
    case dns::ResolveError::server_failure:
    case dns::ResolveError::bad_name:
      lookup.failed = failure(
          rules::Reason::dns_error,
          "looking up " + name + " failed: " + std::string(dns::to_string(resolution.error)) + ".");
      break;
  }
  co_return lookup;
}

// Why the last address could not be connected to, as the refusal's reason and sentence.
DialResult connect_failure(const std::string& target, const tcp::endpoint& last_endpoint,
                           const boost::system::error_code& last_error) {
  const std::string where = target + " (" + to_text(last_endpoint) + ")";
  DialResult result;
  if (last_error == asio::error::timed_out) {
    result = failure(rules::Reason::connection_timeout, "connecting to " + where + " timed out.");
  } else if (last_error == asio::error::connection_refused) {
    result = failure(rules::Reason::connection_refused, "connecting to " + where + " was refused.");
  } else {
    result = failure(rules::Reason::destination_unavailable,
                     "connecting to " + where + " failed: " + last_error.message() + ".");
  }
  result.endpoint = last_endpoint;
  return result;
}

// Connects context.upstream to the checked addresses in order, within one overall deadline.
asio::awaitable<DialResult> connect_in_order(SessionContext& context, const DecisionState& decided,
                                             const std::string& target,
                                             const std::vector<asio::ip::address>& addresses,
                                             std::uint16_t port) {
  const auto connect_started = std::chrono::steady_clock::now();
  asio::steady_timer deadline(context.client.get_executor());
  deadline.expires_after(decided.settings().connect_timeout);
  boost::system::error_code last_error = asio::error::host_not_found;
  tcp::endpoint last_endpoint;
  for (const auto& address : addresses) {
    if (context.stopping() || !context.client.is_open()) {
      last_error = asio::error::operation_aborted;
      break;  // the drain or a reload closed the client: nothing new is started
    }
    last_endpoint = tcp::endpoint(address, port);
    boost::system::error_code ec;
    context.upstream.close(ec);
    const boost::system::error_code started = start_connect(context.upstream, last_endpoint);
    if (started && started != asio::error::in_progress) {
      last_error = started;  // refused at once (no route, no descriptors): the next address
      continue;
    }
    boost::system::error_code connect_error;
    if (started == asio::error::in_progress) {
      auto outcome = co_await (context.upstream.async_wait(tcp::socket::wait_write, use_tuple) ||
                               deadline.async_wait(use_tuple));
      if (outcome.index() == 1) {
        last_error = asio::error::timed_out;
        break;
      }
      connect_error = std::get<0>(std::get<0>(outcome));
      if (!connect_error) {
        connect_error = connect_result(context.upstream);
      }
    }
    if (!connect_error) {
      context.worker.metrics.upstream_connect.observe(std::chrono::steady_clock::now() -
                                                      connect_started);
      DialResult result;
      result.connected = true;
      result.endpoint = last_endpoint;
      context.upstream.set_option(tcp::no_delay(true), ec);
      co_return result;
    }
    last_error = connect_error;
    if (!context.client.is_open()) {
      break;  // closed by the drain
    }
  }
  boost::system::error_code ignored;
  context.upstream.close(ignored);
  co_return connect_failure(target, last_endpoint, last_error);
}

}  // namespace

std::optional<DialResult> refuse_resolved(DecisionState& decided, const std::string& name,
                                          std::uint16_t port,
                                          const std::vector<rules::IpAddress>& addresses) {
  for (const rules::IpAddress& checked : addresses) {
    const rules::Decision decision = decided.policy().decide_resolved(checked, port);
    if (decision.allowed()) {
      continue;
    }
    rules::Host as_host{checked.is_v4() ? rules::HostKind::ipv4 : rules::HostKind::ipv6,
                        checked.to_string(), checked};
    std::string sentence = name + " resolves to " + checked.to_string() + ": " +
                           decided.policy().explain(decision, as_host, port);
    if (decided.reports(decision.reason)) {
      // Report-only mode: a private or blocklisted answer is logged as would-deny and dialled;
      // loopback, metadata and reserved answers are never reportable.
      decided.keep_reported(decision.reason, rules::rule_text(decision), std::move(sentence));
      continue;
    }
    DialResult refused = failure(decision.reason, std::move(sentence));
    refused.endpoint = tcp::endpoint(to_asio_address(checked), port);
    return refused;
  }
  return std::nullopt;
}

asio::awaitable<DialResult> dial_upstream(SessionContext& context, DecisionState& decided,
                                          const rules::Host& host, std::uint16_t port,
                                          AddressChecks checks) {
  // 1. The addresses to try: the literal itself, or what the name resolves to.
  std::vector<asio::ip::address> addresses;
  if (host.is_ip()) {
    addresses.push_back(to_asio_address(host.address));
  } else {
    Lookup lookup = co_await resolve_name(context, host.name);
    if (lookup.failed) {
      co_return std::move(*lookup.failed);
    }
    addresses = std::move(lookup.addresses);
    // 2. Every answer held to the address rules (not the parent proxy's: see AddressChecks).
    if (checks == AddressChecks::policy) {
      std::vector<rules::IpAddress> answers;
      answers.reserve(addresses.size());
      for (const auto& address : addresses) {
        answers.push_back(to_rules_address(address));
      }
      if (auto refused = refuse_resolved(decided, host.name, port, answers)) {
        co_return std::move(*refused);
      }
    }
  }
  // 3. Exactly the checked addresses, in order.
  co_return co_await connect_in_order(context, decided, host.display() + ":" + std::to_string(port),
                                      addresses, port);
}

}  // namespace sandgate::session
