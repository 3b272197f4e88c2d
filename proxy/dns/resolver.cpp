// c-ares driven by one worker's Asio loop, with a TTL-bounded LRU cache (contract: resolver.hpp).
// Over 600 lines because the c-ares callbacks, the cache and the shared queries act on the same
// private state; the pure parts (answers, address order, hosts file) are in files of their own.
//
// How the pieces fit:
//  - A name listed in the hosts file is answered from memory (hosts_file.hpp), before the cache.
//  - Otherwise the cache; otherwise two ares_query() calls, A and AAAA, whose raw replies give
//    the record TTLs and, for negative answers, the SOA that bounds how long they may be kept
//    (answer.hpp). The merged addresses are ordered once (address_order.hpp) and cached so.
//  - c-ares says which sockets to watch through ARES_OPT_SOCK_STATE_CB. Each one is wrapped in a
//    stream_descriptor that never owns it (c-ares opens and closes it; we release() first), and
//    async_wait() hands readiness back to ares_process_fd().
//  - One steady_timer follows ares_timeout() so c-ares can retransmit and give up on time.
//  - Each name being looked up has one Query: one A and one AAAA query shared by every waiter. The
//    Query's steady_timer is both its hard deadline and the waiters' condition variable:
//    completion cancels it (waking every waiter, always through the io_context's queue), expiry
//    means timeout.
//  - Completion handlers hold a `lifeline` (a shared Impl* nulled by ~Impl) rather than `this`,
//    so a handler already queued when the resolver dies does nothing.
#include "proxy/dns/resolver.hpp"

#include "proxy/asio/use_tuple.hpp"
#include "proxy/dns/address_order.hpp"
#include "proxy/dns/answer.hpp"
#include "proxy/dns/hosts_file.hpp"

#include <ares.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>
#include <limits>
#include <list>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace sandgate::dns {
namespace asio = boost::asio;
using steady_clock = std::chrono::steady_clock;

namespace {

// Every server is asked this many times. c-ares doubles the per-try timeout after each round
// over all servers, so with two tries the total is servers * 3 * per-try timeout.
constexpr int ares_tries = 2;

// A socket that keeps being readable is served this many times in a row before the loop gets
// a turn (a server flooding one TCP connection must not starve the worker's sessions).
constexpr int max_service_rounds = 32;

// DNS class and record types (RFC 1035, RFC 3596).
constexpr int class_in = 1;
constexpr int type_a = 1;
constexpr int type_aaaa = 28;

// c-ares keeps process-wide state (and on some platforms needs WSAStartup-like set-up); it must
// be initialised once before the first channel, and never torn down under a live channel.
void init_ares_library() {
  static const int status = ares_library_init(ARES_LIB_INIT_ALL);
  if (status != ARES_SUCCESS) {
    throw std::runtime_error(std::string("dns: c-ares initialisation failed: ") +
                             ares_strerror(status));
  }
}

// Names c-ares would mishandle rather than reject: an embedded NUL silently shortens the name
// (a different host would be resolved than the one the policy judged), and the empty name asks
// for the root.
bool plausible_name(std::string_view name) {
  constexpr std::size_t max_name = 254;  // 253 characters plus an optional trailing dot
  return !name.empty() && name.size() <= max_name && name.find('\0') == std::string_view::npos;
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Checks one ResolverOptions::servers entry ("ADDR:PORT" or "[V6]:PORT") so that a typo fails
// start-up with its own name rather than c-ares' generic "bad string".
void validate_server(const std::string& server) {
  const auto fail = [&server](const char* why) {
    throw std::runtime_error("dns: server '" + server + "' " + why +
                             " (expected ADDR:PORT or [V6]:PORT)");
  };
  std::string_view text = server;
  std::string_view host;
  std::string_view port;
  bool bracketed = false;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      fail("is malformed");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    bracketed = true;
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      fail("has no port");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(std::string(host), ec);
  if (ec || address.is_v6() != bracketed) {
    fail(bracketed ? "has no valid IPv6 address" : "has no valid IPv4 address");
  }
  if (!all_digits(port) || port.size() > 5 || std::stoi(std::string(port)) == 0 ||
      std::stoi(std::string(port)) > 65535) {
    fail("has no valid port");
  }
}

std::string join_servers(const std::vector<std::string>& servers) {
  std::string csv;
  for (const std::string& server : servers) {
    if (!csv.empty()) {
      csv += ',';
    }
    csv += server;
  }
  return csv;
}

// How many name servers /etc/resolv.conf gives, so the per-try timeout can be sized to fit the
// total. A throwaway channel is the only public way to ask c-ares.
int count_system_servers() {
  ares_channel probe = nullptr;
  ares_options options{};
  if (ares_init_options(&probe, &options, 0) != ARES_SUCCESS) {
    return 1;
  }
  int count = 0;
  ares_addr_port_node* servers = nullptr;
  if (ares_get_servers_ports(probe, &servers) == ARES_SUCCESS) {
    for (const ares_addr_port_node* node = servers; node != nullptr; node = node->next) {
      ++count;
    }
    ares_free_data(servers);
  }
  ares_destroy(probe);
  return std::max(count, 1);
}

Resolution failure(ResolveError error) {
  Resolution result;
  result.error = error;
  return result;
}

}  // namespace

struct Resolver::Impl {
  // One socket c-ares asked us to watch. Shared with the waits in flight on it, which may
  // complete after c-ares has closed it.
  struct Watch {
    Watch(asio::io_context& io, ares_socket_t socket) : descriptor(io), fd(socket) {}
    asio::posix::stream_descriptor descriptor;  // never owns fd
    ares_socket_t fd;
    bool want_read = false;
    bool want_write = false;
    bool read_armed = false;
    bool write_armed = false;
    bool released = false;  // c-ares is closing fd: its number may be reused, never touch it
  };

  // One name's A and AAAA queries and everyone waiting for them.
  struct Query {
    Query(asio::io_context& io, std::string query_name, steady_clock::time_point deadline)
        : name(std::move(query_name)), signal(io, deadline) {}
    std::string name;
    // Expires at the lookup's hard deadline; cancelled when `result` is ready.
    asio::steady_timer signal;
    bool done = false;
    Resolution result;
    int outstanding = 2;  // replies still to come: A and AAAA
    RecordSet a;
    RecordSet aaaa;
  };

  // What c-ares carries for one ares_query(): keeps the Query alive until c-ares is done with
  // it, even after its waiters timed out and a newer Query took its name.
  struct Pending {
    Impl* impl;
    std::shared_ptr<Query> query;
    bool ipv6;
  };

  struct CacheEntry {
    std::string name;
    ResolveError error;
    std::vector<asio::ip::address> addresses;
    steady_clock::time_point expires;
  };

  Impl(asio::io_context& io, ResolverOptions options);
  ~Impl();

  std::optional<Resolution> cache_find(const std::string& name);
  void cache_store(const std::string& name, const Resolution& result, steady_clock::duration ttl);
  std::shared_ptr<Query> join_or_start(std::string name);
  void finish(Query& query, Resolution result);

  static void on_sock_state(void* data, ares_socket_t fd, int readable, int writable);
  static void on_answer(void* arg, int status, int timeouts, unsigned char* reply, int length);
  void complete(const std::shared_ptr<Query>& query);
  static void on_ready(const std::shared_ptr<Impl*>& lifeline, const std::shared_ptr<Watch>& watch,
                       bool read, boost::system::error_code ec);
  static void on_timer(const std::shared_ptr<Impl*>& lifeline, boost::system::error_code ec);
  void post_service(std::shared_ptr<Watch> watch);
  void service(const std::shared_ptr<Watch>& watch);
  void arm(const std::shared_ptr<Watch>& watch);
  void schedule_timer();
  static void release(Watch& watch);

  asio::io_context& io_;
  ResolverOptions options_;
  ares_channel channel_ = nullptr;
  asio::steady_timer timer_;  // c-ares retransmits and timeouts
  bool timer_armed_ = false;
  std::shared_ptr<Impl*> lifeline_;
  bool destroying_ = false;
  std::unordered_map<ares_socket_t, std::shared_ptr<Watch>> watches_;
  std::unordered_map<std::string, std::shared_ptr<Query>> inflight_;
  HostsFile hosts_;
  std::list<CacheEntry> lru_;  // most recently used first
  // Keys view CacheEntry::name inside lru_'s nodes, which never move.
  std::unordered_map<std::string_view, std::list<CacheEntry>::iterator> cache_index_;
};

Resolver::Impl::Impl(asio::io_context& io, ResolverOptions options)
    : io_(io),
      options_(std::move(options)),
      timer_(io),
      lifeline_(std::make_shared<Impl*>(this)),
      hosts_(options_.hosts_file, options_.hosts_check_interval) {
  init_ares_library();
  if (options_.timeout <= std::chrono::milliseconds::zero()) {
    throw std::runtime_error("dns: timeout must be positive");
  }
  for (const std::string& server : options_.servers) {
    validate_server(server);
  }

  // Size the per-try timeout so that all tries on all servers fit in the total; the hard
  // deadline per lookup still holds if c-ares runs over.
  const std::size_t given = options_.servers.size() + options_.endpoints.size();
  const int servers = given == 0 ? count_system_servers() : static_cast<int>(given);
  const auto per_try = std::max<std::chrono::milliseconds::rep>(
      options_.timeout.count() / (servers * ((1 << ares_tries) - 1)), 1);

  ares_options ares{};
  int mask = 0;
  ares.sock_state_cb = &Impl::on_sock_state;
  ares.sock_state_cb_data = this;
  mask |= ARES_OPT_SOCK_STATE_CB;
  ares.timeout = static_cast<int>(std::min<std::chrono::milliseconds::rep>(per_try, 1 << 30));
  mask |= ARES_OPT_TIMEOUTMS;
  ares.tries = ares_tries;
  mask |= ARES_OPT_TRIES;
  // DNS only: the hosts file is read here, once, not by c-ares on every lookup (it is consulted
  // first, whatever nsswitch.conf says: its entries are the operator's to decide, and
  // "localhost" must never go to a name server).
  ares.lookups = const_cast<char*>("b");
  mask |= ARES_OPT_LOOKUPS;
  // No search list: a CONNECT target is absolute, and "api" must not quietly become
  // "api.corp.internal" after the policy judged "api".
  ares.domains = nullptr;
  ares.ndomains = 0;
  mask |= ARES_OPT_DOMAINS;

  if (const int status = ares_init_options(&channel_, &ares, mask); status != ARES_SUCCESS) {
    throw std::runtime_error(std::string("dns: cannot start c-ares: ") + ares_strerror(status));
  }
  if (given > 0) {
    std::vector<std::string> all = options_.servers;
    for (const settings::TcpEndpoint& endpoint : options_.endpoints) {
      all.push_back(endpoint.text());
    }
    const std::string csv = join_servers(all);
    if (const int status = ares_set_servers_ports_csv(channel_, csv.c_str());
        status != ARES_SUCCESS) {
      ares_destroy(channel_);
      throw std::runtime_error("dns: c-ares rejected servers '" + csv +
                               "': " + ares_strerror(status));
    }
  }
}

Resolver::Impl::~Impl() {
  // Handlers already queued (socket readiness, the retransmit timer) must find nothing to do.
  *lifeline_ = nullptr;
  destroying_ = true;

  // Wake every waiter with `cancelled`; they resume later from the io_context's queue and touch
  // only their Query, never this object.
  for (auto& [name, query] : inflight_) {
    finish(*query, failure(ResolveError::cancelled));
  }
  inflight_.clear();

  // Ends the queries still in c-ares (ARES_EDESTRUCTION, through on_answer) and closes its
  // sockets (through on_sock_state, which releases our descriptors first).
  ares_destroy(channel_);
  for (auto& [fd, watch] : watches_) {
    release(*watch);
  }
  watches_.clear();
}

std::optional<Resolution> Resolver::Impl::cache_find(const std::string& name) {
  const auto found = cache_index_.find(std::string_view(name));
  if (found == cache_index_.end()) {
    return std::nullopt;
  }
  const auto entry = found->second;
  if (entry->expires <= steady_clock::now()) {
    cache_index_.erase(found);
    lru_.erase(entry);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, entry);
  return Resolution{.error = entry->error, .addresses = entry->addresses, .from_cache = true};
}

void Resolver::Impl::cache_store(const std::string& name, const Resolution& result,
                                 steady_clock::duration ttl) {
  if (options_.cache_capacity == 0 || ttl <= steady_clock::duration::zero()) {
    return;
  }
  const steady_clock::time_point expires = steady_clock::now() + ttl;
  if (const auto found = cache_index_.find(std::string_view(name)); found != cache_index_.end()) {
    const auto entry = found->second;
    entry->error = result.error;
    entry->addresses = result.addresses;
    entry->expires = expires;
    lru_.splice(lru_.begin(), lru_, entry);
    return;
  }
  lru_.push_front(CacheEntry{name, result.error, result.addresses, expires});
  cache_index_.emplace(std::string_view(lru_.front().name), lru_.begin());
  while (lru_.size() > options_.cache_capacity) {
    cache_index_.erase(std::string_view(lru_.back().name));
    lru_.pop_back();
  }
}

std::shared_ptr<Resolver::Impl::Query> Resolver::Impl::join_or_start(std::string name) {
  const steady_clock::time_point now = steady_clock::now();
  // Share the query already running for this name, unless its deadline passed: its waiters
  // were told `timeout`, and a new caller deserves its own full budget.
  if (const auto found = inflight_.find(name);
      found != inflight_.end() && found->second->signal.expiry() > now) {
    return found->second;
  }

  auto query = std::make_shared<Query>(io_, std::move(name), now + options_.timeout);
  inflight_[query->name] = query;

  // A and AAAA together. c-ares may reject the name before a call returns, in which case
  // on_answer has already run (and after both, `query->done` is set).
  ares_query(channel_, query->name.c_str(), class_in, type_a, &Impl::on_answer,
             new Pending{this, query, false});
  ares_query(channel_, query->name.c_str(), class_in, type_aaaa, &Impl::on_answer,
             new Pending{this, query, true});
  schedule_timer();
  return query;
}

void Resolver::Impl::finish(Query& query, Resolution result) {
  if (query.done) {
    return;
  }
  query.result = std::move(result);
  query.done = true;
  // Every waiter's async_wait completes with operation_aborted, posted (never inline), so no
  // caller code runs inside c-ares' callbacks.
  query.signal.cancel();
}

void Resolver::Impl::on_answer(void* arg, int status, int /*timeouts*/, unsigned char* reply,
                               int length) {
  const std::unique_ptr<Pending> pending(static_cast<Pending*>(arg));
  Impl& impl = *pending->impl;
  Query& query = *pending->query;
  RecordSet& set = pending->ipv6 ? query.aaaa : query.a;
  if (impl.destroying_) {
    set.error = ResolveError::cancelled;
  } else {
    set = read_answer(status, reply, length, pending->ipv6);
  }
  if (--query.outstanding == 0) {
    impl.complete(pending->query);
  }
}

// Both replies are in: merge, order once, cache, wake the waiters.
void Resolver::Impl::complete(const std::shared_ptr<Query>& query) {
  if (destroying_) {
    finish(*query, failure(ResolveError::cancelled));
    return;
  }
  RecordSet merged = merge_answers(query->a, query->aaaa);
  // The RFC 6724 order costs a socket per address: paid here, once per answer, not per use.
  order_destinations(merged.addresses);
  Resolution result;
  result.error = merged.error;
  result.addresses = std::move(merged.addresses);
  result.ttl = std::chrono::seconds(merged.ttl.value_or(0));

  // Answers are cached even if their waiters already timed out: the next caller benefits.
  // Timeouts and server failures say nothing about the name, so they are never cached.
  if (merged.ttl && result.error == ResolveError::none) {
    cache_store(query->name, result,
                std::min<steady_clock::duration>(result.ttl, options_.max_ttl));
  } else if (merged.ttl && result.error == ResolveError::not_found) {
    cache_store(query->name, result,
                std::min<steady_clock::duration>(result.ttl, options_.negative_ttl));
  }

  // Only forget the in-flight entry if it is still ours (not a newer query for the name).
  if (const auto found = inflight_.find(query->name);
      found != inflight_.end() && found->second == query) {
    inflight_.erase(found);
  }
  finish(*query, std::move(result));
}

void Resolver::Impl::on_sock_state(void* data, ares_socket_t fd, int readable, int writable) {
  Impl& impl = *static_cast<Impl*>(data);
  const auto found = impl.watches_.find(fd);

  // c-ares is about to close fd: let go of it first, so the reactor forgets it before the
  // number can be reused. Waits in flight complete with operation_aborted.
  if (readable == 0 && writable == 0) {
    if (found != impl.watches_.end()) {
      release(*found->second);
      impl.watches_.erase(found);
    }
    return;
  }

  std::shared_ptr<Watch> watch;
  if (found == impl.watches_.end()) {
    watch = std::make_shared<Watch>(impl.io_, fd);
    boost::system::error_code ec;
    // If the reactor cannot take the socket, its waits fail at once and c-ares' own timeouts
    // end the query: slow, but never stuck.
    watch->descriptor.assign(fd, ec);
    impl.watches_.emplace(fd, watch);
  } else {
    watch = found->second;
  }
  watch->want_read = readable != 0;
  watch->want_write = writable != 0;
  if (!impl.destroying_) {
    // Not inline: c-ares may be calling from inside ares_process_fd(), which must not recurse.
    impl.post_service(std::move(watch));
  }
}

void Resolver::Impl::post_service(std::shared_ptr<Watch> watch) {
  asio::post(io_, [lifeline = lifeline_, watch = std::move(watch)] {
    if (*lifeline != nullptr && !watch->released) {
      (*lifeline)->service(watch);
    }
  });
}

void Resolver::Impl::service(const std::shared_ptr<Watch>& watch) {
  // The reactor is edge-triggered and c-ares may leave bytes unread (it reads a TCP reply in
  // pieces), so ask the kernel for the level and feed c-ares until the socket has nothing left.
  for (int round = 0;; ++round) {
    if (watch->released) {
      break;
    }
    const short events =
        static_cast<short>((watch->want_read ? POLLIN : 0) | (watch->want_write ? POLLOUT : 0));
    pollfd level{.fd = watch->fd, .events = events, .revents = 0};
    if (events == 0 || ::poll(&level, 1, 0) <= 0 || (level.revents & POLLNVAL) != 0) {
      break;
    }
    if (round == max_service_rounds) {
      post_service(watch);
      schedule_timer();
      return;
    }
    const bool readable = watch->want_read && (level.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
    const bool writable = watch->want_write && (level.revents & (POLLOUT | POLLERR | POLLHUP)) != 0;
    if (!readable && !writable) {
      break;
    }
    ares_process_fd(channel_, readable ? watch->fd : ARES_SOCKET_BAD,
                    writable ? watch->fd : ARES_SOCKET_BAD);
    // A writable socket stays writable: c-ares writes all it can at once and only keeps asking
    // for write while the send buffer is full, whose draining the reactor does report.
    if (!readable) {
      break;
    }
  }
  if (!watch->released) {
    arm(watch);
  }
  schedule_timer();
}

void Resolver::Impl::arm(const std::shared_ptr<Watch>& watch) {
  if (watch->want_read && !watch->read_armed) {
    watch->read_armed = true;
    watch->descriptor.async_wait(asio::posix::stream_descriptor::wait_read,
                                 [lifeline = lifeline_, watch](boost::system::error_code ec) {
                                   on_ready(lifeline, watch, true, ec);
                                 });
  }
  if (watch->want_write && !watch->write_armed) {
    watch->write_armed = true;
    watch->descriptor.async_wait(asio::posix::stream_descriptor::wait_write,
                                 [lifeline = lifeline_, watch](boost::system::error_code ec) {
                                   on_ready(lifeline, watch, false, ec);
                                 });
  }
}

void Resolver::Impl::on_ready(const std::shared_ptr<Impl*>& lifeline,
                              const std::shared_ptr<Watch>& watch, bool read,
                              boost::system::error_code ec) {
  (read ? watch->read_armed : watch->write_armed) = false;
  // Released (c-ares closed the socket), resolver gone, or the reactor failed: nothing to do.
  if (ec || *lifeline == nullptr || watch->released) {
    return;
  }
  (*lifeline)->service(watch);
}

void Resolver::Impl::schedule_timer() {
  timeval buffer{};
  const timeval* next = ares_timeout(channel_, nullptr, &buffer);
  if (next == nullptr) {
    // Nothing pending in c-ares: no reason to wake up.
    if (timer_armed_) {
      timer_.cancel();
      timer_armed_ = false;
    }
    return;
  }
  const steady_clock::time_point at = steady_clock::now() + std::chrono::seconds(next->tv_sec) +
                                      std::chrono::microseconds(next->tv_usec);
  // Waking early is harmless (c-ares just finds nothing due), so keep an earlier wake-up rather
  // than churn the timer on every packet.
  if (timer_armed_ && timer_.expiry() <= at) {
    return;
  }
  timer_.expires_at(at);  // cancels the previous wait, whose handler then does nothing
  timer_armed_ = true;
  timer_.async_wait(
      [lifeline = lifeline_](boost::system::error_code ec) { on_timer(lifeline, ec); });
}

void Resolver::Impl::on_timer(const std::shared_ptr<Impl*>& lifeline,
                              boost::system::error_code ec) {
  if (ec == asio::error::operation_aborted || *lifeline == nullptr) {
    return;
  }
  Impl& impl = **lifeline;
  impl.timer_armed_ = false;
  // No socket is ready: this only lets c-ares retransmit or expire queries.
  ares_process_fd(impl.channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  impl.schedule_timer();
}

void Resolver::Impl::release(Watch& watch) {
  if (watch.released) {
    return;
  }
  watch.released = true;
  // Deregisters from the reactor and cancels the waits without closing: the fd is c-ares'.
  watch.descriptor.release();
}

Resolver::Resolver(asio::io_context& io, ResolverOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(options))) {}

Resolver::~Resolver() = default;

void Resolver::shut_down() { impl_.reset(); }

asio::awaitable<Resolution> Resolver::resolve(std::string name) {
  if (!impl_) {
    co_return failure(ResolveError::cancelled);  // shut down: the gate is stopping
  }
  // Refuse names c-ares would misread, before they reach the cache or the wire.
  if (!plausible_name(name)) {
    co_return failure(ResolveError::bad_name);
  }
  // The hosts file, then a fresh cached answer (or failure): no query, no suspension.
  if (std::vector<asio::ip::address> listed = impl_->hosts_.lookup(name, steady_clock::now());
      !listed.empty()) {
    co_return Resolution{.addresses = std::move(listed), .from_hosts_file = true};
  }
  if (std::optional<Resolution> hit = impl_->cache_find(name)) {
    co_return std::move(*hit);
  }
  // Join the query for this name, or start it; it may already be done (hosts file, bad name).
  const std::shared_ptr<Impl::Query> query = impl_->join_or_start(std::move(name));
  boost::system::error_code ec;
  if (!query->done) {
    std::tie(ec) = co_await query->signal.async_wait(use_tuple);
  }
  // From here on the resolver may have been destroyed while we waited: use only `query`.
  if (query->done) {
    co_return query->result;
  }
  // The signal fired without a result: its deadline passed, or our caller cancelled this wait
  // (per-operation cancellation affects only this waiter, not the shared query).
  co_return failure(ec == asio::error::operation_aborted ? ResolveError::cancelled
                                                         : ResolveError::timeout);
}

std::size_t Resolver::cache_size() const { return impl_ ? impl_->lru_.size() : 0; }

std::optional<CachedAnswer> Resolver::cached(std::string_view name) const {
  if (!impl_) {
    return std::nullopt;
  }
  const auto found = impl_->cache_index_.find(name);
  const steady_clock::time_point now = steady_clock::now();
  if (found == impl_->cache_index_.end() || found->second->expires <= now) {
    return std::nullopt;
  }
  const Impl::CacheEntry& entry = *found->second;
  return CachedAnswer{entry.error, entry.addresses,
                      std::chrono::ceil<std::chrono::seconds>(entry.expires - now)};
}

std::vector<asio::ip::address> Resolver::hosts_entry(std::string_view name) {
  return impl_ ? impl_->hosts_.lookup(name, steady_clock::now()) : std::vector<asio::ip::address>{};
}

}  // namespace sandgate::dns
