// Idle verified TLS connections to inspected origins, kept by each worker between client
// connections, as squid's and nginx's upstream pools keep theirs.
//
// Why: a new inspected client connection otherwise costs the gate a TCP connection and a
// (resumed) TLS handshake with the origin on top of the client's own handshake; that was a
// third of its CPU per new connection and a round trip of its latency
// (bench/results/2026-11-27-inspection-2/). With the pool, a client connection to a host:port
// that an earlier one left idle takes that connection instead of dialling.
//
// What is kept, and for how long:
//   - only a connection whose last exchange ended cleanly with nothing unread (a complete
//     response the origin keeps alive, no bytes behind it in the parser, in OpenSSL or in the
//     TLS record layer), that no client reached by IP address, and whose exchanges never
//     included a request with a body (an origin that reads less of it than it should would
//     take the rest as the next client's request), a HEAD or a 204/304 response (whose body an
//     origin may send late, into the next client's exchange), or an Authorization scheme other
//     than Basic, Bearer, Digest and AWS SigV4 (NTLM, Negotiate and their kind authenticate the
//     connection, which then belongs to its client);
//   - per host:port, the origin its certificate was verified for (SNI and name checked): a
//     connection is only ever taken for the host:port it was verified for;
//   - with what its handshake settled by ALPN: a connection is only given to a client whose
//     own offer it serves as a fresh one would (serves()). A client that offers h2 gets h2 from
//     an origin that speaks it, so it takes an HTTP/1.1 connection only where the origin was
//     offered h2 and declined it;
//   - kIdleLifetime at most, kPerOrigin per host:port, kTotal per worker (each holds two 17 KiB
//     TLS buffers and a descriptor); past kPerOrigin the oldest of that origin goes;
//   - until anything the origin sends while idle (its close, an alert, bytes nobody asked for):
//     the connection is closed at once, never handed out;
//   - until the rules or settings change: a reload ends every idle connection, and one secured
//     before it is never kept (new CAs, a new parent proxy or new address rules would otherwise
//     be bypassed by a connection verified under the old ones). The session that takes one
//     still has its address held to the rules in force and every request judged as always;
//   - until the drain, which closes them all and keeps nothing after.
//
// Everything here runs on the worker's thread; a connection is held by one session or by the
// pool, never both.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/ip_address.hpp"

namespace sandgate::session {

// The next layer of an origin's TLS stream: the socket it runs on, by pointer, so the stream can
// move with its connection between a session (whose socket is SessionContext::upstream, where
// revocations and the drain close it) and the pool.
class SocketRef {
 public:
  using socket_type = boost::asio::ip::tcp::socket;
  using executor_type = socket_type::executor_type;
  using lowest_layer_type = socket_type::lowest_layer_type;

  explicit SocketRef(socket_type& socket) : socket_(&socket) {}
  void point_at(socket_type& socket) { socket_ = &socket; }
  lowest_layer_type& lowest_layer() { return socket_->lowest_layer(); }
  const lowest_layer_type& lowest_layer() const { return socket_->lowest_layer(); }
  executor_type get_executor() { return socket_->get_executor(); }

  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    return socket_->async_read_some(buffers, std::forward<Token>(token));
  }
  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    return socket_->async_write_some(buffers, std::forward<Token>(token));
  }

 private:
  socket_type* socket_;
};

using OriginTls = boost::asio::ssl::stream<SocketRef>;

// What a client asks of its origin connection by ALPN, as far as the gate knows it.
enum class ClientAlpn : std::uint8_t {
  unknown,  // its ClientHello is still to come: whoever takes a connection checks it after
  http1,    // HTTP/1.1 only (it offered no h2, or the gate does not pass h2 on for its host)
  h2,       // h2, which the gate offers the origin on its behalf
};

// A TLS connection to an origin whose certificate the gate verified, with nothing in flight.
struct SecuredOrigin {
  explicit SecuredOrigin(boost::asio::ip::tcp::socket s) : socket(std::move(s)) {}

  // The connection's socket while the pool holds it (a session moves it into its own
  // context.upstream and points the stream there).
  boost::asio::ip::tcp::socket socket;
  std::optional<OriginTls> tls;
  // What it was dialled at: the address connected to (the parent's, through one), and for a
  // name dialled directly the address it resolved to, which rules are held to again.
  boost::asio::ip::tcp::endpoint endpoint;
  std::optional<rules::IpAddress> dialled;
  std::uint64_t epoch = 0;  // OriginPool::epoch() when it was secured
  // What its handshake settled by ALPN: whether the gate offered the origin h2, and whether the
  // origin chose it.
  bool h2_offered = false;
  bool h2_chosen = false;
};

// Whether `origin` serves a client that asks `alpn` as a fresh connection would: the same
// protocol the origin would choose now. An HTTP/1.1 connection serves a client offering h2 only
// when the origin declined h2 on it; an h2 one serves only such a client. `unknown` takes any.
bool serves(const SecuredOrigin& origin, ClientAlpn alpn);

// True when `tls` holds nothing its peer sent that nobody read yet (decrypted or not).
bool nothing_unread(OriginTls& tls);

class OriginPool {
 public:
  static constexpr std::size_t kPerOrigin = 16;
  static constexpr std::size_t kTotal = 128;
  static constexpr std::chrono::seconds kIdleLifetime{30};

  // `idle_lifetime`: kIdleLifetime but in tests.
  explicit OriginPool(std::chrono::milliseconds idle_lifetime = kIdleLifetime)
      : idle_lifetime_(idle_lifetime) {}
  ~OriginPool();
  OriginPool(const OriginPool&) = delete;
  OriginPool& operator=(const OriginPool&) = delete;

  // The epoch a connection secured now belongs to: park() keeps only connections of the
  // current one.
  std::uint64_t epoch() const { return epoch_; }
  // Keeps `origin` for `key` ("host:port" as the pool is asked for it) when the rules above
  // allow; otherwise closes it. Its socket must be origin->socket, its stream pointed at it.
  void park(std::string key, std::unique_ptr<SecuredOrigin> origin);
  // The connection kept for `key` most recently that serves `alpn` (serves()), still idle (its
  // socket then yours to move); null when none.
  std::unique_ptr<SecuredOrigin> take(std::string_view key, ClientAlpn alpn = ClientAlpn::unknown);
  // A reload: closes every idle connection and starts a new epoch.
  void forget_all();
  // The drain: forget_all(), and nothing is kept from now on.
  void close();
  std::size_t size() const { return total_; }

 private:
  struct Parked {
    Parked(std::unique_ptr<SecuredOrigin> o, std::string k);
    std::unique_ptr<SecuredOrigin> origin;
    std::string key;
    boost::asio::steady_timer expiry;
    bool gone = false;  // taken or dropped: the watches' handlers do nothing
  };
  using Shelf = std::vector<std::shared_ptr<Parked>>;  // oldest first

  void watch(const std::shared_ptr<Parked>& parked);
  // Takes `parked` off its shelf and closes it.
  void drop(const std::shared_ptr<Parked>& parked);
  static void end(Parked& parked);

  std::chrono::milliseconds idle_lifetime_;
  std::map<std::string, Shelf, std::less<>> shelves_;
  std::size_t total_ = 0;
  std::uint64_t epoch_ = 1;
  bool closed_ = false;
};

}  // namespace sandgate::session
