// An HTTP/1.1 exchange's upstream when its origin speaks HTTP/2: one stream of a shared HTTP/2
// origin connection (session/h2_origin.hpp), seen by the HTTP/1.1 front as the byte stream it
// writes a request to and reads a response from (wire/byte_stream.hpp attaches it where a TLS
// stream would be). So the HTTP/1.1 exchange runs unchanged, every stage of the request pipeline
// and of the response direction included: this unit only translates.
//
//   the request   the bytes the front writes (its head as rewritten for the origin, then the body
//                 framed as the front framed it) are parsed again, strictly and within
//                 kHeadLimit; the head goes as HTTP/2 fields (exchange/h2/http1_mapping.hpp:
//                 connection-specific fields left out, Host as :authority), the body as DATA
//                 within the stream's flow control (a write waits for room), its end as
//                 END_STREAM. A chunked body's trailers do not go (the front never sends any).
//   the response  its interim heads and its head as HTTP/1.1 heads; the body with the origin's
//                 content-length, or chunked when it gave none; the end as the last chunk. The
//                 origin's trailers are dropped, as the HTTP/1.1 front drops an HTTP/1.1
//                 origin's. What the origin sends is held until the front reads it, and given
//                 back to the stream's window only then: the stream's window is the bound.
//   the end       the response's end reads as end of stream; a stream the origin reset, or a
//                 connection that ended, as a reset (connection_reset), with why() saying why.
//
// The stream is opened on `connection` when the request head is whole; the destructor resets it
// (CANCEL) unless it is over. One read and one write may be pending at a time, as for a socket;
// cancel_pending() ends both with operation_aborted (what cancelling the socket does for a TLS
// stream). Completions are posted, never run inside the call.
//
// Thread: the worker's, every call (the connection's loops deliver the stream's events there).
#pragma once

#include <array>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/h2_origin.hpp"

namespace sandgate::session::exchange {

class H1OverH2Upstream final : private H2OriginStreamSink {
 public:
  using executor_type = boost::asio::any_io_executor;
  using Handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;
  // The most of the request's bytes held before they are parsed: its head (the front's own
  // limit, kHttpHeadLimit, plus what it adds) or a chunk's header line. A head that does not fit
  // fails the write (header_limit).
  static constexpr std::size_t kHeadLimit = 64 * 1024;
  // The most of the request body taken from the front at once (its pieces are 64 KiB).
  static constexpr std::size_t kBodyPiece = 64 * 1024;

  // `scheme`: the :scheme the stream's request gets ("https").
  H1OverH2Upstream(executor_type executor, std::shared_ptr<H2Origin> connection, std::string scheme,
                   std::size_t head_limit = kHeadLimit);
  ~H1OverH2Upstream();
  H1OverH2Upstream(const H1OverH2Upstream&) = delete;
  H1OverH2Upstream& operator=(const H1OverH2Upstream&) = delete;

  executor_type get_executor() const { return executor_; }
  const std::shared_ptr<H2Origin>& connection() const { return connection_; }
  // Why the stream failed (the origin reset it, the connection ended, the head could not be
  // carried); empty while it has not.
  const std::string& why() const { return why_; }

  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, boost::asio::mutable_buffer into) {
          read(into, Handler(std::move(handler)));
        },
        token, first_of(buffers));
  }
  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    std::size_t count = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && count < writing_.size(); ++it) {
      writing_[count++] = boost::asio::const_buffer(*it);
    }
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, std::size_t n) {
          write(std::span<const boost::asio::const_buffer>(writing_.data(), n),
                Handler(std::move(handler)));
        },
        token, count);
  }

  // Ends a pending read and write with operation_aborted.
  void cancel_pending();
  // Response bytes are here that a read takes without waiting.
  bool has_unread() const { return out_.size() > out_read_ || failed_ || ended_; }
  // Waits up to `pause` for response bytes: true when none came (the origin paused).
  boost::asio::awaitable<bool> paused(std::chrono::milliseconds pause);

 private:
  void on_origin_event(h2::ClientEvent& event) override;
  void read(boost::asio::mutable_buffer into, Handler handler);
  void write(std::span<const boost::asio::const_buffer> buffers, Handler handler);
  // Parses what is held of the request and sends what it can; false when it must wait for room.
  bool pump();
  bool open_stream();
  bool flush_body();
  void take(const h2::ResponseHead& head, bool interim, bool end_stream);
  void fail(std::string why);
  void serve_read();
  void serve_write();
  void complete(Handler& handler, boost::system::error_code error, std::size_t bytes);
  void response_bytes(std::string_view bytes, std::size_t data_bytes);

  template <class MutableBufferSequence>
  static boost::asio::mutable_buffer first_of(const MutableBufferSequence& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      if (boost::asio::mutable_buffer buffer(*it); buffer.size() > 0) {
        return buffer;
      }
    }
    return {};
  }

  executor_type executor_;
  std::shared_ptr<H2Origin> connection_;
  std::string scheme_;
  h2::StreamId id_ = 0;
  bool stream_over_ = false;  // its StreamClosedEvent came: nothing to release

  // The request: its bytes held until parsed, the body parsed out and not yet taken by the
  // stream, and the parser that reads them again.
  boost::beast::flat_buffer in_;
  std::string body_;
  boost::beast::http::request_parser<boost::beast::http::buffer_body> request_;
  bool head_request_ = false;
  bool request_ended_ = false;
  std::array<boost::asio::const_buffer, 8> writing_;
  std::optional<Handler> write_handler_;
  std::size_t write_taken_ = 0;  // what the pending write took of the front's bytes

  // The response as HTTP/1.1 bytes, read from out_read_ on; what is read of each DATA piece is
  // given back to the stream's window once read (pieces: where it ends in out_, its DATA bytes).
  std::string out_;
  std::size_t out_read_ = 0;
  std::deque<std::pair<std::size_t, std::size_t>> pieces_;
  bool chunked_ = false;
  bool head_seen_ = false;
  bool ended_ = false;   // the response is whole
  bool failed_ = false;  // the stream failed (why_)
  std::string why_;
  std::optional<Handler> read_handler_;
  boost::asio::mutable_buffer read_into_;
  boost::asio::steady_timer readable_;  // woken when response bytes arrive (paused())
};

}  // namespace sandgate::session::exchange
