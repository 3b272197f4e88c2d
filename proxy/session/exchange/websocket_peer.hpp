// One side of an inspected WebSocket as the frame relay (websocket_relay.hpp) reads and writes
// it: a byte stream each way, whatever carries it. On HTTP/1.1, after a 101, that is the
// connection's TLS stream (StreamPeer, below); over HTTP/2 (RFC 8441) it is the DATA of one
// stream (fronts/inspected_h2_websocket.cpp). The relay, its frame codec and its stages are
// written once against this, so both wires share one frame relay.
//
// One read (or quiet_for) and one write may be pending at a time, from different coroutines, as
// on a socket. Every operation completes on the executor of the coroutine that awaits it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <tuple>

#include "proxy/session/wire/byte_stream.hpp"

namespace sandgate::session::exchange {

// What a write ends with when the side whose bytes it carries was reset while it waited for
// room (an HTTP/2 stream's RST_STREAM): the destination did not fail, the source did. ENETRESET,
// which no write to a TCP socket of the gate's returns otherwise.
inline const boost::system::error_code kSourceWasReset = boost::asio::error::network_reset;

class WebSocketPeer {
 public:
  using Io = std::tuple<boost::system::error_code, std::size_t>;
  virtual ~WebSocketPeer() = default;

  // Reads at least one byte into `buffer`; an error (eof when the side ended cleanly, before
  // anything more) when none came.
  virtual boost::asio::awaitable<Io> read_some(boost::asio::mutable_buffer buffer) = 0;
  // Writes all of `bytes`, waiting for the side to take them (its window, its socket); how many
  // went, and an error when not all did.
  virtual boost::asio::awaitable<Io> write(boost::asio::const_buffer bytes) = 0;
  // Waits, in place of a read, until bytes (or the side's end) are there to read or `pause` has
  // passed: true when the pause passed with nothing come (the relay then lets go of what its
  // redaction held back); false at once when bytes are waiting, or when cancelled.
  virtual boost::asio::awaitable<bool> quiet_for(std::chrono::milliseconds pause) = 0;
  // The pending read, write and wait end with operation_aborted; later ones go on as before.
  virtual void cancel() = 0;
  // Ends the side now, without a goodbye (a socket closed, an HTTP/2 stream reset): pending and
  // later operations fail.
  virtual void close() = 0;
};

// A WebSocket side on a connection of its own after its 101: the stream (TLS) read and written,
// its socket (to wait for bytes, cancel and close), and the bytes that arrived behind the heads,
// read first. Holds references: all three outlive it.
class StreamPeer final : public WebSocketPeer {
 public:
  StreamPeer(ByteStream& stream, boost::asio::ip::tcp::socket& socket,
             boost::beast::flat_buffer& early)
      : stream_(stream), socket_(socket), early_(early) {}

  boost::asio::awaitable<Io> read_some(boost::asio::mutable_buffer buffer) override;
  boost::asio::awaitable<Io> write(boost::asio::const_buffer bytes) override;
  boost::asio::awaitable<bool> quiet_for(std::chrono::milliseconds pause) override;
  void cancel() override;
  void close() override;

 private:
  ByteStream& stream_;
  boost::asio::ip::tcp::socket& socket_;
  boost::beast::flat_buffer& early_;
};

}  // namespace sandgate::session::exchange
