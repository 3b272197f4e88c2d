// The daemon's skeleton. See server.hpp.
//
// Unix socket listeners (`--listen unix:PATH`). Sessions, the relay and the connection registry
// all hold the client as a boost::asio::ip::tcp::socket, and changing that type everywhere (a
// template parameter or a variant through every handler) would be a large change for a small
// feature. Instead the AF_UNIX listening descriptor is assigned to each worker's tcp::acceptor,
// and what it accepts is a tcp::socket whose descriptor is an AF_UNIX stream socket. That is
// sound because Asio's reactive socket service only passes the descriptor to the system calls
// the sessions use, and each of them works the same on a unix stream socket: accept (called
// without a peer address, so no address type is involved), read/write/recv/send, shutdown,
// close, cancel, SO_LINGER, and splice (to and from a pipe, for tunnels). What does not fit is
// confined to calls that report errors as values and are checked:
//   - TCP_NODELAY (on the listener, or set_option(no_delay) after accept): not set for unix
//     clients (it would fail with EOPNOTSUPP into an ignored error code).
//   - The client's address: TCP clients get it from accept; a unix client is accepted without
//     one and named in the log "uid:N" from SO_PEERCRED (getpeereid on macOS), or "unix".
//   - local_endpoint() is never called on a client socket; the upstream socket is always TCP.
// Every other call on the client socket (open_tunnel, http_forward, the relays) was checked
// for this: none asks for the client's address or sets a TCP option on it.
#include "proxy/server/server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <tuple>

#include "proxy/asio/close_on_exec.hpp"
#include "proxy/asio/use_tuple.hpp"
#include "proxy/dns/resolver_settings.hpp"
#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "proxy/session/fronts/capture_session.hpp"
#include "proxy/session/fronts/client_session.hpp"

namespace sandgate::server {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr int kBacklog = 4096;

// How a unix socket client is named in the log: its user id, which the kernel vouches for.
std::string unix_peer_label(int fd) {
#if defined(SO_PEERCRED)
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
    return "uid:" + std::to_string(credentials.uid);
  }
#elif defined(__APPLE__)
  uid_t uid = 0;
  gid_t gid = 0;
  if (::getpeereid(fd, &uid, &gid) == 0) {
    return "uid:" + std::to_string(uid);
  }
#endif
  return "unix";
}

// Accepts on this worker's handle of the shared listening socket until it is closed.
// `unix_clients`: the listening socket is a unix socket (see the comment at the top).
asio::awaitable<void> accept_loop(Worker& worker, bool unix_clients) {
  asio::steady_timer pause(worker.io);
  auto last_complaint = std::chrono::steady_clock::time_point{};
  const std::uint32_t limit = worker.settings->max_connections;  // restart-only
  // TCP_NODELAY on the listening socket: Linux copies it into every socket accepted from it,
  // which saves a setsockopt per connection. Whether it did is checked on the first connection
  // (one getsockopt per worker); where it did not, each socket gets it as before.
  enum class NoDelay : std::uint8_t { unknown, inherited, per_socket };
  NoDelay no_delay = NoDelay::per_socket;
  if (!unix_clients && worker.acceptor) {
    boost::system::error_code ec;
    worker.acceptor->set_option(tcp::no_delay(true), ec);
    no_delay = ec ? NoDelay::per_socket : NoDelay::unknown;
  }
  tcp::endpoint peer;
  while (worker.acceptor && worker.acceptor->is_open()) {
    // The client's address comes with the accept (no getpeername later); a unix socket's peer
    // has no address of this type, so it is accepted without one.
    // (Two statements, not one co_await in each arm of a conditional: GCC 12 destroys the
    // result of such a conditional co_await, the accepted socket with it.)
    boost::system::error_code error;
    tcp::socket socket(worker.io);
    if (unix_clients) {
      std::tie(error, socket) = co_await worker.acceptor->async_accept(use_tuple);
    } else {
      std::tie(error, socket) = co_await worker.acceptor->async_accept(peer, use_tuple);
    }
    if (error == asio::error::operation_aborted || !worker.acceptor->is_open()) {
      co_return;
    }
    if (error) {
      // Out of descriptors or memory: the pending connection stays in the backlog and the
      // socket stays readable, so retrying at once would spin. Pause, and say so (not too often).
      const auto now = std::chrono::steady_clock::now();
      if (now - last_complaint > std::chrono::seconds(1)) {
        worker.shared.log.note(
            "warning", "accept failed: " + error.message() + "; pausing new connections briefly");
        last_complaint = now;
      }
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(use_tuple);
      continue;
    }
    descriptors::close_on_exec(socket.native_handle());  // (Asio's accept() leaves it inheritable)
    if (worker.shared.open_connections.fetch_add(1, std::memory_order_relaxed) >= limit) {
      worker.shared.open_connections.fetch_sub(1, std::memory_order_relaxed);
      asio::co_spawn(worker.io, session::refuse_busy(worker, std::move(socket)), asio::detached);
      continue;
    }
    if (unix_clients) {
      std::string label = unix_peer_label(socket.native_handle());
      asio::co_spawn(worker.io, session::serve_client(worker, std::move(socket), std::move(label)),
                     asio::detached);
      continue;
    }
    boost::system::error_code ignored;
    if (no_delay == NoDelay::unknown) {
      tcp::no_delay option;
      socket.get_option(option, ignored);
      no_delay = !ignored && option.value() ? NoDelay::inherited : NoDelay::per_socket;
    }
    if (no_delay != NoDelay::inherited) {
      socket.set_option(tcp::no_delay(true), ignored);
    }
    asio::co_spawn(worker.io,
                   session::serve_client(worker, std::move(socket), session::to_text(peer)),
                   asio::detached);
  }
}

// Accepts captured connections on one of this worker's capture listeners until it is closed:
// accept_loop's back-off and connection limit, without a reply to refuse with (a captured
// connection beyond the limit is closed and logged).
asio::awaitable<void> capture_accept_loop(Worker& worker, tcp::acceptor* acceptor,
                                          capture::AddressBook* book) {
  asio::steady_timer pause(worker.io);
  auto last_complaint = std::chrono::steady_clock::time_point{};
  const std::uint32_t limit = worker.settings->max_connections;  // restart-only
  while (acceptor->is_open()) {
    auto [error, socket] = co_await acceptor->async_accept(use_tuple);
    if (error == asio::error::operation_aborted || !acceptor->is_open()) {
      co_return;
    }
    if (error) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_complaint > std::chrono::seconds(1)) {
        worker.shared.log.note("warning", "capture: accept failed: " + error.message() +
                                              "; pausing new connections briefly");
        last_complaint = now;
      }
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(use_tuple);
      continue;
    }
    descriptors::close_on_exec(socket.native_handle());
    if (worker.shared.open_connections.fetch_add(1, std::memory_order_relaxed) >= limit) {
      worker.shared.open_connections.fetch_sub(1, std::memory_order_relaxed);
      worker.metrics.count_decision(rules::reason_info(rules::Reason::connection_limit).verdict,
                                    rules::Reason::connection_limit);
      const auto now = std::chrono::steady_clock::now();
      if (now - last_complaint > std::chrono::seconds(1)) {
        worker.shared.log.note("warning",
                               "capture: connections closed at once: the gate is "
                               "serving its maximum number of connections");
        last_complaint = now;
      }
      continue;  // the socket closes as it goes out of scope
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    asio::co_spawn(worker.io, session::serve_captured(worker, std::move(socket), book),
                   asio::detached);
  }
}

// Runs a worker's loop to its end. Sessions catch their own exceptions (and log them against
// their connection); this is the last line for a completion handler that throws anyway: the
// loop is resumed rather than ending the worker, and the error is said.
void run_worker(Worker& worker) {
  for (;;) {
    try {
      worker.io.run();
      return;
    } catch (const std::exception& error) {
      worker.metrics.count_decision(rules::Verdict::error, rules::Reason::internal_error);
      worker.shared.log.note("error",
                             std::string("internal error in a worker's handler: ") + error.what());
    } catch (...) {
      worker.metrics.count_decision(rules::Verdict::error, rules::Reason::internal_error);
      worker.shared.log.note("error", "internal error in a worker's handler");
    }
  }
}

// Raises the soft descriptor limit to the hard one: every tunnel holds two descriptors.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The listen setting's address as Asio's endpoint. The setting was parsed when it was loaded
// (settings::TcpEndpoint holds a checked numeric address), so this cannot fail.
tcp::endpoint to_endpoint(const settings::TcpEndpoint& endpoint) {
  boost::system::error_code ignored;
  return tcp::endpoint(asio::ip::make_address(endpoint.address, ignored), endpoint.port);
}

}  // namespace

Server::Server(const settings::Settings& settings, log::DecisionLog& log,
               std::shared_ptr<const rules::Policy> policy)
    : settings_(settings),
      log_(log),
      shared_{log},
      worker_settings_(std::make_shared<const settings::Settings>(settings)),
      latest_policy_(policy) {
  for (unsigned i = 0; i < settings.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(shared_, worker_settings_, policy));
  }
}

Server::~Server() {
  for (auto& thread : threads_) {
    if (thread.joinable()) {
      for (auto& worker : workers_) {
        worker->io.stop();
      }
      thread.join();
    }
  }
  // Remove our unix socket, unless it is no longer ours: once this gate stopped accepting, a new
  // gate may have found it stale and put its own in its place.
  if (!unix_path_.empty()) {
    struct stat now {};
    if (::lstat(unix_path_.c_str(), &now) == 0 && S_ISSOCK(now.st_mode) &&
        now.st_dev == unix_device_ && now.st_ino == unix_inode_) {
      ::unlink(unix_path_.c_str());
    }
  }
}

std::string Server::listen_text() const {
  if (unix_listener_) {
    return "unix:" + (unix_path_.empty() ? std::string("(handed over)") : unix_path_);
  }
  const auto address = endpoint_.address();
  return (address.is_v6() ? "[" + address.to_string() + "]" : address.to_string()) + ":" +
         std::to_string(endpoint_.port());
}

// Creates the listening unix socket at `path` with mode 0600. An existing file that is not a
// socket is left alone (an error); an existing socket nobody accepts on (connect() is refused)
// is the leftover of a gate that died and is replaced; one that accepts belongs to a live
// program and is an error. Start-up only: the umask is process-wide, so this runs before any
// other thread creates files.
Expected<int, std::string> Server::bind_unix_socket(const std::string& path) {
  const std::string where = "cannot listen on unix:" + path + ": ";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return Unexpected{where + "the path is too long for a unix socket"};
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  const auto* raw = reinterpret_cast<const sockaddr*>(&address);
  const socklen_t length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);

  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return Unexpected{where + "it exists and is not a socket; refusing to replace it"};
    }
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
      return Unexpected{where + std::strerror(errno)};
    }
    const int connected = ::connect(probe, raw, length);
    const int probe_errno = errno;
    ::close(probe);
    if (connected == 0) {
      return Unexpected{where +
                        "another program (another sandgate?) is serving on it; stop it or "
                        "choose another path"};
    }
    if (probe_errno != ECONNREFUSED) {
      return Unexpected{where + "a socket is there that cannot be checked (" +
                        std::strerror(probe_errno) + "); remove it if nothing uses it"};
    }
    // Nobody accepts on it: left by a gate that died without cleaning up.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Unexpected{where + "cannot remove the stale socket: " + std::strerror(errno)};
    }
    log_.note("info", "removed the stale socket " + path + " (no gate was serving on it)");
  } else if (errno != ENOENT) {
    return Unexpected{where + std::strerror(errno)};
  }

  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Unexpected{where + std::strerror(errno)};
  }
  // The file bind() creates gets mode 0777 & ~umask: with umask 0177 it is 0600 from the first
  // instant (a chmod afterwards would leave a moment in which others could connect).
  const mode_t previous_umask = ::umask(0177);
  const int bound = ::bind(fd, raw, length);
  const int bind_errno = errno;
  ::umask(previous_umask);
  if (bound != 0) {
    ::close(fd);
    if (bind_errno == EADDRINUSE) {
      return Unexpected{where + "another program created it a moment ago"};
    }
    return Unexpected{where + std::strerror(bind_errno)};
  }
  struct stat created {};
  if (::listen(fd, kBacklog) != 0 || ::lstat(path.c_str(), &created) != 0) {
    const int error = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return Unexpected{where + std::strerror(error)};
  }
  unix_path_ = path;
  unix_device_ = created.st_dev;
  unix_inode_ = created.st_ino;
  return fd;
}

std::vector<const metrics::WorkerMetrics*> Server::worker_metrics() const {
  std::vector<const metrics::WorkerMetrics*> out;
  for (const auto& worker : workers_) {
    out.push_back(&worker->metrics);
  }
  return out;
}

std::uint32_t Server::open_connections() const {
  return shared_.open_connections.load(std::memory_order_relaxed);
}

Expected<tcp::endpoint, std::string> Server::bind() {
  raise_descriptor_limit();
  if (const settings::UnixPath* socket = settings_.listen.unix_socket()) {
    auto fd = bind_unix_socket(socket->path);
    if (!fd) {
      return Unexpected{fd.error()};
    }
    auto prepared = prepare_workers(*fd);  // the workers hold duplicates
    ::close(*fd);
    return prepared;
  }
  const tcp::endpoint endpoint = to_endpoint(*settings_.listen.tcp());
  // One listening socket; each worker accepts on its own duplicate of it. (SO_REUSEPORT would
  // let any process of the same user bind the port too and take a share of the connections.)
  boost::system::error_code ec;
  tcp::acceptor listener(control_);
  listener.open(endpoint.protocol(), ec);
  if (!ec && !descriptors::close_on_exec(listener.native_handle())) {
    ec.assign(errno, boost::system::system_category());
  }
  if (!ec) {
    listener.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    listener.bind(endpoint, ec);
  }
  if (!ec) {
    listener.listen(kBacklog, ec);
  }
  if (ec) {
    return Unexpected{"cannot listen on " + settings_.listen.text() + ": " + ec.message()};
  }
  return hand_to_workers(listener);
}

// Gives the listening socket to the workers and lets go of this copy. release() takes it out of
// control_'s epoll set; a plain close would not (the workers' duplicates keep the socket open, so
// the kernel keeps the registration), and control_'s thread would then wake on every connection.
Expected<tcp::endpoint, std::string> Server::hand_to_workers(tcp::acceptor& listener) {
  boost::system::error_code ec;
  const int fd = listener.release(ec);
  if (ec) {
    return Unexpected{"cannot listen on " + settings_.listen.text() + ": " + ec.message()};
  }
  auto prepared = prepare_workers(fd);
  ::close(fd);
  return prepared;
}

Expected<tcp::endpoint, std::string> Server::adopt_listener(int fd) {
  raise_descriptor_limit();
  boost::system::error_code ec;
  tcp::acceptor listener(control_);
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return Unexpected{std::string("the listening socket handed over is not a socket")};
  }
  descriptors::close_on_exec(fd);  // (handed over by a process that may not have marked it)
  listener.assign(address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) {
    return Unexpected{"cannot use the listening socket handed over: " + ec.message()};
  }
  return hand_to_workers(listener);
}

// Gives every worker its own duplicate of the listening socket, and a resolver. The caller's
// `listening_fd` stays owned by the caller.
Expected<tcp::endpoint, std::string> Server::prepare_workers(int listening_fd) {
  boost::system::error_code ec;
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(listening_fd, reinterpret_cast<sockaddr*>(&address), &length);
  unix_listener_ = address.ss_family == AF_UNIX;
  if (unix_listener_) {
    endpoint_ = tcp::endpoint();  // no address; the acceptors below use tcp::v4() as a label only
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    asio::ip::address_v6::bytes_type bytes;
    std::memcpy(bytes.data(), &v6->sin6_addr, 16);
    endpoint_ = tcp::endpoint(asio::ip::address_v6(bytes), ntohs(v6->sin6_port));
  } else {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    endpoint_ =
        tcp::endpoint(asio::ip::address_v4(ntohl(v4->sin_addr.s_addr)), ntohs(v4->sin_port));
  }

  const dns::ResolverOptions dns_options = dns::resolver_options(settings_);
  for (auto& worker : workers_) {
    const int fd = descriptors::duplicate(listening_fd);
    if (fd < 0) {
      return Unexpected{"cannot listen on " + settings_.listen.text() + ": out of descriptors"};
    }
    worker->acceptor.emplace(worker->io);
    worker->acceptor->assign(endpoint_.protocol(), fd, ec);
    if (ec) {
      return Unexpected{"cannot listen on " + settings_.listen.text() + ": " + ec.message()};
    }
    try {
      worker->resolver = std::make_unique<dns::Resolver>(worker->io, dns_options);
    } catch (const std::exception& error) {
      return Unexpected{std::string("DNS: ") + error.what()};
    }
  }
  accepting_ = true;
  return endpoint_;
}

std::shared_ptr<const rules::Policy> Server::current_policy() const {
  std::lock_guard lock(policy_mutex_);
  return latest_policy_;
}

void Server::publish(std::shared_ptr<const rules::Policy> policy,
                     std::shared_ptr<const settings::Settings> settings) {
  {
    std::lock_guard lock(policy_mutex_);
    latest_policy_ = policy;
    if (settings) {
      worker_settings_ = settings;
    } else {
      settings = worker_settings_;
    }
  }
  for (auto& worker : workers_) {
    Worker* target = worker.get();
    asio::post(target->io, [target, policy, settings] {
      // Idle origin connections were verified and checked under the rules and settings
      // replaced here (its CAs, parent, address rules): none is handed out after them.
      target->forget_idle_origins();
      target->settings = settings;
      if (target->policy == policy) {
        return;  // only settings changed: nothing open is judged again
      }
      const std::size_t closed = target->apply_policy(policy, settings->revoke_on_reload);
      if (closed > 0) {
        target->shared.log.note("info", "reload: closed " + std::to_string(closed) +
                                            " open connection(s) that the new rules deny");
      }
    });
  }
}

Expected<bool, std::string> Server::adopt_capture(sandbox::CaptureSockets sockets) {
  const auto fail = [&](const std::string& why) {
    sockets.close_all();
    return Unexpected{"capture: " + why};
  };
  if (workers_.empty() || sockets.tcp.empty()) {
    return fail("no capture listener was handed over");
  }
  // The family of a handed-over socket, for Asio's protocol label.
  const auto is_v6 = [](int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    return ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
           address.ss_family == AF_INET6;
  };
  boost::system::error_code ec;
  for (int fd : sockets.tcp) {
    for (auto& worker : workers_) {
      const int copy = descriptors::duplicate(fd);
      if (copy < 0) {
        return fail("out of descriptors");
      }
      worker->capture_acceptors.emplace_back(worker->io);
      worker->capture_acceptors.back().assign(is_v6(fd) ? tcp::v6() : tcp::v4(), copy, ec);
      if (ec) {
        ::close(copy);
        return fail("the capture listener: " + ec.message());
      }
    }
  }
  // DNS on the first worker: queries are answered from memory, one worker is plenty, and the
  // book's lock is then taken by one DNS thread and the captured connections.
  Worker& first = *workers_.front();
  for (int& fd : sockets.dns_udp) {
    first.dns_udp.emplace_back(first.io);
    first.dns_udp.back().assign(is_v6(fd) ? asio::ip::udp::v6() : asio::ip::udp::v4(), fd, ec);
    if (ec) {
      return fail("the DNS socket: " + ec.message());
    }
    fd = -1;  // the socket owns it now
  }
  for (int& fd : sockets.dns_tcp) {
    first.dns_tcp.emplace_back(first.io);
    first.dns_tcp.back().assign(is_v6(fd) ? tcp::v6() : tcp::v4(), fd, ec);
    if (ec) {
      return fail("the DNS socket: " + ec.message());
    }
    fd = -1;
  }
  std::erase(sockets.dns_udp, -1);
  std::erase(sockets.dns_tcp, -1);
  sockets.close_all();  // the workers hold duplicates of the capture listeners
  capture_book_ = std::make_unique<capture::AddressBook>();
  return true;
}

void Server::begin_drain() {
  asio::post(control_, [this] {
    if (draining_) {
      return;
    }
    draining_ = true;
    accepting_ = false;
    drain_deadline_ = std::chrono::steady_clock::now() + settings_.drain;
    log_.note("info", "draining: no new connections; open ones may finish for up to " +
                          std::to_string(settings_.drain.count()) + " s");
    for (auto& worker : workers_) {
      Worker* target = worker.get();
      asio::post(target->io, [target] {
        boost::system::error_code ignored;
        target->acceptor->close(ignored);
        target->close_idle_origins();  // no new client will take them; none is kept from now
        for (auto& capture : target->capture_acceptors) {
          capture.close(ignored);
        }
        for (auto& dns : target->dns_udp) {
          dns.close(ignored);
        }
        for (auto& dns : target->dns_tcp) {
          dns.close(ignored);
        }
      });
    }
    drain_timer_ = std::make_unique<asio::steady_timer>(control_);
    drain_step();
  });
}

// Polls the open connections until none are left or the deadline passes; then closes what
// remains and lets each worker's loop run out of work, so every session ends on its own thread.
void Server::drain_step() {
  const auto now = std::chrono::steady_clock::now();
  const bool idle = open_connections() == 0;
  if (!idle && now < drain_deadline_) {
    drain_timer_->expires_after(std::chrono::milliseconds(20));
    drain_timer_->async_wait([this](boost::system::error_code) { drain_step(); });
    return;
  }
  if (!idle && !force_closed_) {
    force_closed_ = true;
    log_.note("info", "drain deadline reached; closing " + std::to_string(open_connections()) +
                          " open connection(s)");
  }
  // The one order of shutdown. First each worker, on its own thread: mark it stopping (a
  // session that resumes from any wait now ends instead of starting something new), close every
  // connection, and complete its pending DNS lookups as cancelled. The resolver object itself
  // stays until the worker is destroyed, after its thread has ended.
  for (auto& worker : workers_) {
    Worker* target = worker.get();
    asio::post(target->io, [target] {
      target->stopping = true;
      target->close_all();
      target->idle_sweep.stop();     // its timer must not keep the loop alive
      target->close_idle_origins();  // nor the watches of idle origin connections
      if (target->resolver) {
        target->resolver->shut_down();
      }
    });
  }
  // Then LaunchDarkly: its pending lookups are answered (failover) on the workers' executors,
  // after the posts above, so the sessions they resume find their worker stopping. stop() joins
  // the client's thread; the allowlist object outlives run().
  if (shared_.remote_allowlist != nullptr) {
    shared_.remote_allowlist->stop();
  }
  control_.stop();
}

void Server::run(bool handle_signals) {
  // splice(2) into a socket whose peer is gone raises SIGPIPE (it has no MSG_NOSIGNAL): whoever
  // runs a gate, a client that disappears must cost an error code, never the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  for (auto& worker : workers_) {
    Worker& w = *worker;
    asio::co_spawn(w.io, accept_loop(w, unix_listener_), asio::detached);
    for (auto& capture : w.capture_acceptors) {
      asio::co_spawn(w.io, capture_accept_loop(w, &capture, capture_book_.get()), asio::detached);
    }
    for (auto& dns : w.dns_udp) {
      asio::co_spawn(w.io, session::serve_dns_udp(w, &dns, capture_book_.get()), asio::detached);
    }
    for (auto& dns : w.dns_tcp) {
      asio::co_spawn(w.io, session::serve_dns_tcp(w, &dns, capture_book_.get()), asio::detached);
    }
    threads_.emplace_back([&w] { run_worker(w); });
  }

  std::optional<asio::signal_set> signals;
  // Declared here, not in the block below: the handler re-arms itself through this reference,
  // so it must live as long as control_ runs.
  std::function<void(boost::system::error_code, int)> on_signal;
  if (handle_signals) {
    signals.emplace(control_, SIGINT, SIGTERM, SIGHUP);
    on_signal = [this, &signals, &on_signal](boost::system::error_code error, int number) {
      if (error) {
        return;
      }
      if (number == SIGHUP) {
        if (on_hangup) {
          on_hangup();
        }
      } else {
        begin_drain();
      }
      signals->async_wait(on_signal);
    };
    signals->async_wait(on_signal);
  }
  auto guard = asio::make_work_guard(control_);
  control_.run();

  // The workers' loops end once their sessions have all finished (their sockets were closed).
  for (auto& thread : threads_) {
    thread.join();
  }
  threads_.clear();
  log_.note("info", "stopped");
}

}  // namespace sandgate::server
