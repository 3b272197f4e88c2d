// The HTTP/2 connections to inspected origins each worker keeps and shares (h2_origin.hpp), the
// HTTP/2 side of what origin_pool.hpp does for HTTP/1.1.
//
// Why: an inspected HTTP/2 client connection otherwise costs the gate a TCP connection and a
// (resumed) TLS handshake with the origin before its first stream, and keeps a connection of its
// own open at the origin for as long as it lives. HTTP/2 is made to multiplex: with the pool,
// every inspected h2 client connection of a worker to a host:port borrows streams of the same
// origin connection, as a browser's or Envoy's connection pool shares one.
//
// What is shared, and how far:
//   - per host:port, the origin its certificate was verified for (SNI and name checked), never
//     across hosts; never one a client reached by IP address (its origin is whatever answers
//     there: it stays its client's), nor one secured under rules or settings the worker no
//     longer serves with (OriginPool's epoch; it stays its dialler's);
//   - streams up to the origin's SETTINGS_MAX_CONCURRENT_STREAMS (and the gate's own 100): a
//     connection that is full is passed over, and another dialled;
//   - kPerOrigin connections per host:port and kTotal per worker shared (each holds two TLS
//     buffers of 17 KiB, nghttp2's state and up to its 4 MiB window of the origin's bytes): past
//     them a new connection is its dialler's alone, as every client's was before the pool, so
//     that the bounds limit what is shared and kept, never how many streams go;
//   - kIdleLifetime after its last stream, as the HTTP/1.1 pool keeps an idle connection;
//   - until the origin's GOAWAY (its streams above the GOAWAY's last id may be sent again on
//     another connection, once), a reload (retire: no new stream; it goes when its last stream
//     ends) or the drain (closed at once, and nothing kept after).
//
// What sharing costs: flow control stays end to end, so a client that stops reading holds its
// stream's window (1 MiB) of the connection's 4 MiB (exchange/h2/limits.hpp) until it reads,
// resets or idles out; four such streams on one connection hold the others' responses back too,
// as they would on one client's own connection. The bounds on what the gate holds stay those of
// the codec's limits, per connection.
//
// Thread: the worker's, every call; no locks. Each client connection that may borrow watches
// its host:port (watch()) to hear when a stream could go where none could.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/session/h2_origin.hpp"
#include "proxy/session/origin_pool.hpp"

namespace sandgate::session {

// A client connection that borrows streams: told when one of its host:port's connections may
// take a stream it could not take before (a stream ended, new SETTINGS, a connection joined or
// went), and when one's origin sent SETTINGS.
class H2OriginWatcher {
 public:
  virtual void on_origin_room() = 0;
  virtual void on_origin_settings() = 0;

 protected:
  ~H2OriginWatcher() = default;
};

class H2OriginPool final : private H2OriginKeeper {
 public:
  static constexpr std::size_t kPerOrigin = 8;
  static constexpr std::size_t kTotal = 64;
  static constexpr std::chrono::seconds kIdleLifetime{30};
  // How long a stream waits for a connection another stream of its client is dialling (one dial
  // at a time per client connection), or for room on one the origin turned out to fill: the head
  // timeout's order, long enough for a dial and its handshake, short enough that a client is
  // told rather than held.
  static constexpr std::chrono::seconds kRoomWait{10};

  // `idle_lifetime`: kIdleLifetime but in tests.
  explicit H2OriginPool(std::chrono::milliseconds idle_lifetime = kIdleLifetime)
      : idle_lifetime_(idle_lifetime) {}
  ~H2OriginPool();
  H2OriginPool(const H2OriginPool&) = delete;
  H2OriginPool& operator=(const H2OriginPool&) = delete;

  // Starts `secured` (verified for `key`, "host:port"; its origin chose h2) as an HTTP/2
  // connection. Shared with every client of `key` when `may_share` (not reached by address),
  // its epoch is `epoch_now` (OriginPool::epoch()) and the bounds allow; otherwise its caller's
  // alone. After the drain, never shared.
  std::shared_ptr<H2Origin> adopt(std::string key, std::unique_ptr<SecuredOrigin> secured,
                                  bool may_share, std::uint64_t epoch_now);
  // A shared connection for `key` that takes a stream now, the busiest first (so that the others
  // idle out); null when none.
  std::shared_ptr<H2Origin> take(std::string_view key) const;
  // A shared connection for `key` that may take a stream later (full now); null when none.
  std::shared_ptr<H2Origin> any(std::string_view key) const;
  // Whether one more shared connection for `key` would be kept (the bounds, the drain).
  bool has_room_for(std::string_view key) const;
  // Whether a shared connection for `key` allows extended CONNECT (RFC 8441): its origin takes
  // WebSockets over HTTP/2.
  bool allows_connect_protocol(std::string_view key) const;

  void watch(const std::string& key, H2OriginWatcher& watcher);
  void unwatch(const std::string& key, H2OriginWatcher& watcher);

  // A reload: every connection retired (an idle one goes now, a busy one after its last stream).
  void forget_all();
  // The drain: every connection closed, and none shared from now on.
  void close();
  // Shared connections kept.
  std::size_t size() const { return shared_total_; }

 private:
  // From its connections: a stream of `key` may go where it could not; `origin` has ended.
  void room_changed(const std::string& key) override;
  void settings_changed(const std::string& key) override;
  void ended(H2Origin& origin) override;

  struct Shelf {
    std::vector<std::shared_ptr<H2Origin>> connections;  // shared and not, oldest first
    std::vector<H2OriginWatcher*> watchers;
  };
  std::chrono::milliseconds idle_lifetime_;
  std::map<std::string, Shelf, std::less<>> shelves_;
  std::size_t shared_total_ = 0;
  bool closed_ = false;
};

}  // namespace sandgate::session
