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
//                 origin's. What the origin sends is held, piece by piece, until the front reads
//                 it, and given back to the stream's window only then; a piece read goes: the
//                 stream's window is the bound of what is held, however long the response.
//   the end       the response's end reads as end of stream; a stream that failed (the origin
//                 reset it or broke HTTP/2, its connection ended, the request could not be
//                 carried) ends the pending and later reads and writes with a StreamFailure
//                 error, whose sentence (message(), why()) the front answers and logs with
//                 (stream_failure_report()).
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
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/h2_origin.hpp"
#include "rules/reason.hpp"

namespace sandgate::session::exchange {

// Why a stream failed the HTTP/1.1 exchange it carries: the error its reads and writes complete
// with, whose value holds the kind and a detail (the wire's code, the codec's or the mapping's
// problem), so that the sentence travels with the error through the front unchanged.
enum class StreamFailure : std::uint8_t {
  origin_reset = 1,      // the origin reset the stream (detail: its h2::ErrorCode)
  origin_broke_http2,    // its response broke HTTP/2 or a limit of the gate's (h2::StreamProblem)
  went_away,             // the origin's GOAWAY left the stream out (h2::ErrorCode)
  stream_ended,          // the stream or its connection ended before the response did
  ended_before_request,  // the origin ended the stream before the request's body did
  not_carried,           // the request has no HTTP/2 form (h2::MappingProblem)
  head_too_large,        // the request head is larger than the bound (detail: the bound in KiB)
  not_readable,          // the request could not be read again (a Beast http::error)
  no_stream,             // the connection took no new stream (h2::SubmitError)
  not_taken,             // the stream took no more of the body, or not its end (h2::SubmitError)
};
const boost::system::error_category& stream_failure_category();
// (A detail past 2^23 is kept as 2^23 - 1: no code of the wire's the gate names is that large.)
boost::system::error_code make_error(StreamFailure kind, std::uint32_t detail = 0);

// How the front reports a StreamFailure: the reason its answer and end line carry (bad_response
// for an origin that broke HTTP/2, bad_request for a request that cannot be carried,
// header_too_large, upstream_closed for the rest) and the sentence, naming `where`
// ("host:port"). Nothing for an error of any other kind.
struct StreamFailureReport {
  rules::Reason reason;
  std::string sentence;
};
std::optional<StreamFailureReport> stream_failure_report(const boost::system::error_code& error,
                                                         std::string_view where);

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
  // Why the stream failed (a StreamFailure); none while it has not.
  const boost::system::error_code& failure() const { return failure_; }
  std::string why() const { return failure_ ? failure_.message() : std::string(); }

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
  bool has_unread() const { return !out_.empty() || failure_ || ended_; }
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
  void fail(boost::system::error_code failure);
  boost::system::error_code head_too_large() const;
  void serve_read();
  void serve_write();
  void complete(Handler& handler, boost::system::error_code error, std::size_t bytes);
  void response_bytes(std::string bytes);
  void response_data(std::string& data);

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

  // The response as HTTP/1.1 bytes not yet read, in pieces: a head, or the DATA of frames in a
  // row (up to kPieceBytes, framed as one chunk when the body is chunked, once the front begins
  // to read it), or the last chunk. A piece wholly read goes, and its DATA back to the stream's
  // window. So what is held is the window's bytes and a piece per kPieceBytes of them, however
  // small the origin's frames.
  static constexpr std::size_t kPieceBytes = 16 * 1024;
  struct Piece {
    std::string bytes;
    std::size_t read = 0;        // of bytes, taken by the front already
    std::size_t data_bytes = 0;  // the origin's DATA it carries
    bool open = false;           // DATA not read from yet: more DATA may join it
  };
  // The front piece, its chunk framing added when it is DATA of a chunked body the front begins.
  Piece& front_piece();
  std::deque<Piece> out_;
  bool chunked_ = false;
  bool head_seen_ = false;
  bool ended_ = false;                 // the response is whole
  boost::system::error_code failure_;  // the stream failed: why
  std::optional<Handler> read_handler_;
  boost::asio::mutable_buffer read_into_;
  boost::asio::steady_timer readable_;  // woken when response bytes arrive (paused())
};

}  // namespace sandgate::session::exchange
