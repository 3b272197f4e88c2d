// One HTTP/2 connection to a verified origin, whose streams the inspected HTTP/2 client
// connections of a worker borrow (h2_origin_pool.hpp keeps it for every client of its
// host:port). It owns the socket, its TLS stream and the client codec
// (exchange/h2/client_codec.hpp), and runs the two loops that move the codec's bytes: the
// origin's into it, its output to the origin. A client connection opens a stream with a sink that
// takes that stream's events, sends on it by its id, and releases it when done.
//
// How it ends: the origin closes or breaks it (a broken one is told why first: the codec's GOAWAY
// goes, within kGoawayWait), or the drain closes it (every stream still open hears a
// StreamClosedEvent, reset by the peer with INTERNAL_ERROR); or it is retired (the
// origin's GOAWAY, a reload: it takes no new stream) and goes once its last stream is released,
// with a GOAWAY of the gate's; or, with no stream, its idle lifetime passes. The streams its
// origin's GOAWAY leaves out close with Closer::goaway and retry_safe: the borrower may send them
// again on another connection.
//
// Thread: the worker's, every call; no locks. Lifetime: shared, by the pool, its borrowers and
// its own loops (which hold it until they end, after close()).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/origin_pool.hpp"
#include "rules/expected.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::session {

class H2Origin;

// What keeps a connection (H2OriginPool), told of what changes in it: a stream of `key` may go
// where it could not (a stream ended, new SETTINGS, a GOAWAY), the origin sent SETTINGS, or it
// ended.
class H2OriginKeeper {
 public:
  virtual void room_changed(const std::string& key) = 0;
  virtual void settings_changed(const std::string& key) = 0;
  virtual void ended(H2Origin& origin) = 0;

 protected:
  ~H2OriginKeeper() = default;
};

// Where one borrowed stream's events go: its head, body, trailers and end, room to send again,
// and last its StreamClosedEvent. The sink must stay until the stream is released (or closed).
class H2OriginStreamSink {
 public:
  virtual void on_origin_event(exchange::h2::ClientEvent& event) = 0;

 protected:
  ~H2OriginStreamSink() = default;
};

class H2Origin : public std::enable_shared_from_this<H2Origin> {
 public:
  // Use H2OriginPool::adopt(), which starts it: `secured` was verified for `key` ("host:port")
  // and its origin chose h2.
  H2Origin(H2OriginKeeper& keeper, std::string key, std::unique_ptr<SecuredOrigin> secured,
           bool shared, std::chrono::milliseconds idle_lifetime);
  ~H2Origin();
  H2Origin(const H2Origin&) = delete;
  H2Origin& operator=(const H2Origin&) = delete;

  const std::string& key() const { return key_; }
  // Other clients of key() may borrow its streams (otherwise it is its dialler's alone: a
  // client that reached the origin by address, or one secured under rules no longer in force).
  bool shared() const { return shared_; }
  std::uint64_t epoch() const { return secured_->epoch; }
  const boost::asio::ip::tcp::endpoint& endpoint() const { return secured_->endpoint; }
  const std::optional<rules::IpAddress>& dialled() const { return secured_->dialled; }
  // It may carry a new stream, now or once one of its streams ends (not closed, not retired).
  bool usable() const { return !closed_ && !retired_; }
  // Streams it takes now (0 when not usable, or full up to the origin's or the gate's limit).
  std::size_t available_streams() const;
  std::size_t borrowed_streams() const { return sinks_.size(); }
  // The origin's SETTINGS came, and whether they allow extended CONNECT (RFC 8441, WebSockets).
  bool settings_received() const { return codec_.peer_settings_received(); }
  bool allows_connect_protocol() const { return codec_.peer_allows_connect_protocol(); }

  // A stream for `head` whose events go to `sink`, or why not (the codec's refusal:
  // stream_limit_reached, going_away, ...).
  Expected<exchange::h2::StreamId, exchange::h2::SubmitError> open_stream(
      const exchange::h2::RequestHead& head, bool end_stream, H2OriginStreamSink& sink);
  // The codec's calls on a borrowed stream (client_codec.hpp).
  Expected<std::size_t, exchange::h2::SubmitError> send_data(exchange::h2::StreamId stream,
                                                             std::string_view bytes);
  exchange::h2::SubmitError submit_trailers(exchange::h2::StreamId stream,
                                            exchange::h2::FieldList trailers);
  exchange::h2::SubmitError end_stream(exchange::h2::StreamId stream);
  exchange::h2::SubmitError reset_stream(exchange::h2::StreamId stream,
                                         exchange::h2::ErrorCode code);
  void consume(exchange::h2::StreamId stream, std::size_t bytes);
  // Done with `stream`: reset with `code` unless it is over, its sink told nothing more, and
  // the origin's bytes still coming for it given back to the connection's window.
  void release_stream(exchange::h2::StreamId stream, exchange::h2::ErrorCode code);

  // Takes no new stream; goes once its borrowed streams are released.
  void retire();
  // Closes it now: every borrowed stream's sink hears it closed. `why` is for the sinks' owners.
  void close(std::string why);
  const std::string& why_closed() const { return why_closed_; }

  // Its two loops, on the socket's executor (H2OriginPool::adopt).
  void start();
  // Its keeper is going: nothing is told any more.
  void forget_keeper() { keeper_ = nullptr; }

 private:
  static boost::asio::awaitable<void> read_loop(std::shared_ptr<H2Origin> self);
  static boost::asio::awaitable<void> write_loop(std::shared_ptr<H2Origin> self);
  void take_events();
  void deliver(exchange::h2::StreamId stream, exchange::h2::ClientEvent& event);
  void wake_writer() { output_ready_.cancel(); }
  // After a stream ended or was released: retired and idle, it goes; idle, its lifetime starts.
  void after_stream();
  // A GOAWAY of the gate's, then closed once it is written.
  void finish();
  // The codec ended the connection (the origin broke HTTP/2 or a limit): closed once the
  // codec's GOAWAY is written, kGoawayWait at most; its streams hear it then.
  void end_after_goaway(std::string why);

  H2OriginKeeper* keeper_;  // null once it is gone
  std::string key_;
  std::unique_ptr<SecuredOrigin> secured_;
  exchange::h2::ClientCodec codec_;
  bool shared_;
  std::chrono::milliseconds idle_lifetime_;
  boost::asio::steady_timer output_ready_;
  boost::asio::steady_timer idle_;
  std::map<exchange::h2::StreamId, H2OriginStreamSink*> sinks_;
  bool retired_ = false;
  bool finishing_ = false;
  bool closed_ = false;
  std::string why_closed_;
  std::string ending_why_;  // why it ends, once its GOAWAY is written (end_after_goaway)
};

// A stream a client connection borrowed of an H2Origin: the connection (held as long as the
// stream is) and the stream's id there, none before it is open. While `reopening` (the origin's
// GOAWAY left it unprocessed, and its borrower opens it again on another connection), what the
// borrower sends waits: send_data() takes nothing (room comes with the new stream), an end or
// trailers are kept for it.
struct BorrowedStream {
  std::shared_ptr<H2Origin> connection;
  exchange::h2::StreamId id = 0;
  bool reopening = false;
  // A body, trailers or the end went after the head: the request cannot be sent again.
  bool sent_after_head = false;
  bool end_kept = false;
  std::optional<exchange::h2::FieldList> trailers_kept;

  explicit operator bool() const { return id != 0; }
};

// The client codec's calls (client_codec.hpp) on borrowed streams, each sent to its stream's own
// connection: what a client connection's HTTP/2 exchange holds where it held one codec.
class BorrowedStreams {
 public:
  // Opens `stream` (not open yet, or reopening) on `connection`: the head, then what was kept
  // while it was reopened.
  Expected<exchange::h2::StreamId, exchange::h2::SubmitError> open(
      BorrowedStream& stream, std::shared_ptr<H2Origin> connection,
      const exchange::h2::RequestHead& head, bool end_stream, H2OriginStreamSink& sink);
  Expected<std::size_t, exchange::h2::SubmitError> send_data(BorrowedStream& stream,
                                                             std::string_view bytes);
  exchange::h2::SubmitError submit_trailers(BorrowedStream& stream,
                                            exchange::h2::FieldList trailers);
  exchange::h2::SubmitError end_stream(BorrowedStream& stream);
  exchange::h2::SubmitError reset_stream(BorrowedStream& stream, exchange::h2::ErrorCode code);
  void consume(BorrowedStream& stream, std::size_t bytes);
  // Done with it (H2Origin::release_stream); it is empty after.
  void release(BorrowedStream& stream, exchange::h2::ErrorCode code);
};

}  // namespace sandgate::session
