// One side of a connection as the HTTP exchange reads and writes it: the TCP socket itself, or
// a TLS stream on top of it (an inspected connection). The exchange's code (reading request
// heads, the two directions of a request, the gate's own replies) is written once against this,
// so plain HTTP and the requests inside inspected TLS share one parser and one relay.
//
// It is an Asio AsyncReadStream and AsyncWriteStream (Beast's http::async_read and
// http::async_write take it), type-erased without allocation: the stream it forwards to is
// named by a small object held inside, and each operation's handler is moved into an
// any_completion_handler, which keeps its executor and cancellation slot (so `||` with a timer
// still cancels a read). Socket-level operations (close, shutdown, the descriptor) stay on the
// socket: a TLS stream sits on that same socket, so cancelling the socket cancels the TLS
// stream's pending operation too; cancel() cancels both the socket and a stream that does not
// sit on it.
//
// A write passes at most kMaxWriteBuffers buffers of its sequence on at once (write_some may
// write less than asked; every caller loops). One read and one write may be pending at a time,
// as for a socket.
#pragma once

#include <array>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <new>
#include <span>

namespace sandgate::session {

class ByteStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using Handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;
  static constexpr std::size_t kMaxWriteBuffers = 8;

  // Reads and writes `socket` itself until attach() puts a stream on top of it.
  explicit ByteStream(boost::asio::ip::tcp::socket& socket) : socket_(socket) { use(socket); }
  ~ByteStream() { forwarder()->~Forwarder(); }
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  // From now on reads and writes go through `stream` (which must outlive its use here, or be
  // detached first). No operation may be pending.
  template <class Stream>
  void attach(Stream& stream) {
    forwarder()->~Forwarder();
    use(stream);
  }
  // Back to the socket itself.
  void detach() { attach(socket_); }

  executor_type get_executor() { return socket_.get_executor(); }
  // Cancels the socket's pending operations, and those of a stream that does not sit on the
  // socket (a stream of an HTTP/2 origin connection, exchange/h1_over_h2_upstream.hpp, whose
  // cancel_pending() is called).
  void cancel() {
    boost::system::error_code ignored;
    socket_.cancel(ignored);
    forwarder()->cancel();
  }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, boost::asio::mutable_buffer buffer) {
          forwarder()->read(buffer, Handler(std::move(handler)));
        },
        token, first_buffer(buffers));
  }

  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    std::size_t count = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && count < kMaxWriteBuffers; ++it) {
      const boost::asio::const_buffer buffer(*it);
      if (buffer.size() > 0) {
        writing_[count++] = buffer;
      }
    }
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, std::size_t n) {
          forwarder()->write(std::span<const boost::asio::const_buffer>(writing_.data(), n),
                             Handler(std::move(handler)));
        },
        token, count);
  }

 private:
  struct Forwarder {
    virtual ~Forwarder() = default;
    virtual void read(boost::asio::mutable_buffer buffer, Handler handler) = 0;
    virtual void write(std::span<const boost::asio::const_buffer> buffers, Handler handler) = 0;
    virtual void cancel() = 0;
  };
  template <class Stream>
  struct ForwarderTo final : Forwarder {
    explicit ForwarderTo(Stream& s) : stream(s) {}
    void read(boost::asio::mutable_buffer buffer, Handler handler) override {
      stream.async_read_some(buffer, std::move(handler));
    }
    void write(std::span<const boost::asio::const_buffer> buffers, Handler handler) override {
      stream.async_write_some(buffers, std::move(handler));
    }
    void cancel() override {
      if constexpr (requires { stream.cancel_pending(); }) {
        stream.cancel_pending();
      }
    }
    Stream& stream;
  };

  template <class MutableBufferSequence>
  static boost::asio::mutable_buffer first_buffer(const MutableBufferSequence& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const boost::asio::mutable_buffer buffer(*it);
      if (buffer.size() > 0) {
        return buffer;
      }
    }
    return {};
  }

  template <class Stream>
  void use(Stream& stream) {
    static_assert(sizeof(ForwarderTo<Stream>) <= sizeof(storage_));
    new (storage_) ForwarderTo<Stream>(stream);
  }
  Forwarder* forwarder() { return std::launder(reinterpret_cast<Forwarder*>(storage_)); }

  boost::asio::ip::tcp::socket& socket_;
  alignas(void*) unsigned char storage_[2 * sizeof(void*)];
  std::array<boost::asio::const_buffer, kMaxWriteBuffers> writing_;
};

}  // namespace sandgate::session
