// An HTTP/1.1 exchange over a stream of an HTTP/2 origin connection (h1_over_h2_upstream.hpp).
#include "proxy/session/exchange/h1_over_h2_upstream.hpp"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <cstdio>
#include <utility>
#include <variant>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/exchange/h2/http1_mapping.hpp"

namespace sandgate::session::exchange {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::string hex(std::size_t n) {
  char text[24];
  const int length = std::snprintf(text, sizeof text, "%zx", n);
  return std::string(text, static_cast<std::size_t>(length));
}

// The failure a stream's close means when it came before the response was whole.
boost::system::error_code stream_end_failure(const h2::StreamClosedEvent& closed) {
  switch (closed.by) {
    case h2::Closer::peer:
      return make_error(StreamFailure::origin_reset, static_cast<std::uint32_t>(closed.code));
    case h2::Closer::codec:
      return make_error(StreamFailure::origin_broke_http2,
                        static_cast<std::uint32_t>(closed.problem));
    case h2::Closer::goaway:
      return make_error(StreamFailure::went_away, static_cast<std::uint32_t>(closed.code));
    case h2::Closer::owner:
    case h2::Closer::finished:
      break;
  }
  return make_error(StreamFailure::stream_ended);
}

class StreamFailureCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "sandgate.h1-over-h2"; }
  std::string message(int value) const override {
    const auto kind = static_cast<StreamFailure>(value & 0xff);
    const auto detail = static_cast<std::uint32_t>(value) >> 8;
    switch (kind) {
      case StreamFailure::origin_reset:
        return "the origin reset the HTTP/2 stream (" +
               std::string(h2::describe(static_cast<h2::ErrorCode>(detail))) + ")";
      case StreamFailure::origin_broke_http2:
        return "the origin's HTTP/2 response broke the protocol (" +
               std::string(h2::describe(static_cast<h2::StreamProblem>(detail))) + ")";
      case StreamFailure::went_away:
        return "the origin's HTTP/2 connection went away before the response (" +
               std::string(h2::describe(static_cast<h2::ErrorCode>(detail))) + ")";
      case StreamFailure::stream_ended:
        return "the HTTP/2 stream ended before the response did";
      case StreamFailure::ended_before_request:
        return "the origin ended the HTTP/2 stream before the request's body did";
      case StreamFailure::not_carried:
        return "the request cannot be sent over HTTP/2: " +
               std::string(h2::describe(static_cast<h2::MappingProblem>(detail)));
      case StreamFailure::head_too_large:
        return "the request head is larger than " + std::to_string(detail) + " KiB";
      case StreamFailure::not_readable:
        return "the request could not be read again for HTTP/2: " +
               http::make_error_code(static_cast<http::error>(detail)).message();
      case StreamFailure::no_stream:
        return "the origin's HTTP/2 connection took no new stream (" +
               std::string(h2::describe(static_cast<h2::SubmitError>(detail))) + ")";
      case StreamFailure::not_taken:
        return "the origin's HTTP/2 stream took no more of the request (" +
               std::string(h2::describe(static_cast<h2::SubmitError>(detail))) + ")";
    }
    return "the HTTP/2 stream failed";
  }
};

}  // namespace

const boost::system::error_category& stream_failure_category() {
  static const StreamFailureCategory category;
  return category;
}

boost::system::error_code make_error(StreamFailure kind, std::uint32_t detail) {
  const std::uint32_t kept = std::min<std::uint32_t>(detail, (1U << 23) - 1);
  return {static_cast<int>(static_cast<std::uint32_t>(kind) | (kept << 8)),
          stream_failure_category()};
}

std::optional<StreamFailureReport> stream_failure_report(const boost::system::error_code& error,
                                                         std::string_view where) {
  if (error.category() != stream_failure_category()) {
    return std::nullopt;
  }
  const std::string sentence = std::string(where) + ": " + error.message() + ".";
  switch (static_cast<StreamFailure>(error.value() & 0xff)) {
    case StreamFailure::origin_broke_http2:
      return StreamFailureReport{rules::Reason::bad_response, sentence};
    case StreamFailure::not_carried:
    case StreamFailure::not_readable:
      return StreamFailureReport{rules::Reason::bad_request, sentence};
    case StreamFailure::head_too_large:
      return StreamFailureReport{rules::Reason::header_too_large, sentence};
    default:
      return StreamFailureReport{rules::Reason::upstream_closed, sentence};
  }
}

H1OverH2Upstream::H1OverH2Upstream(executor_type executor, std::shared_ptr<H2Origin> connection,
                                   std::string scheme, std::size_t head_limit)
    : executor_(std::move(executor)),
      connection_(std::move(connection)),
      scheme_(std::move(scheme)),
      in_(head_limit),
      readable_(executor_) {
  request_.header_limit(static_cast<std::uint32_t>(head_limit));
  request_.body_limit(boost::none);
}

H1OverH2Upstream::~H1OverH2Upstream() {
  if (id_ != 0 && !stream_over_) {
    connection_->release_stream(id_, h2::ErrorCode::cancel);
  }
}

void H1OverH2Upstream::complete(Handler& handler, boost::system::error_code error,
                                std::size_t bytes) {
  asio::post(executor_, beast::bind_front_handler(std::move(handler), error, bytes));
}

void H1OverH2Upstream::cancel_pending() {
  if (read_handler_) {
    Handler handler = std::move(*read_handler_);
    read_handler_.reset();
    complete(handler, asio::error::operation_aborted, 0);
  }
  if (write_handler_) {
    Handler handler = std::move(*write_handler_);
    write_handler_.reset();
    complete(handler, asio::error::operation_aborted, 0);
  }
  readable_.cancel();
}

asio::awaitable<bool> H1OverH2Upstream::paused(std::chrono::milliseconds pause) {
  if (has_unread()) {
    co_return false;
  }
  readable_.expires_after(pause);
  auto [error] = co_await readable_.async_wait(use_tuple);
  co_return !error && !has_unread();
}

boost::system::error_code H1OverH2Upstream::head_too_large() const {
  return make_error(StreamFailure::head_too_large,
                    static_cast<std::uint32_t>(in_.max_size() / 1024));
}

void H1OverH2Upstream::fail(boost::system::error_code failure) {
  if (!failure_) {
    failure_ = failure;
  }
  serve_read();
  serve_write();
  readable_.cancel();
}

// ---- the response ----

void H1OverH2Upstream::read(asio::mutable_buffer into, Handler handler) {
  read_into_ = into;
  read_handler_.emplace(std::move(handler));
  serve_read();
}

void H1OverH2Upstream::serve_read() {
  if (!read_handler_) {
    return;
  }
  Handler handler = std::move(*read_handler_);
  read_handler_.reset();
  if (!out_.empty()) {
    std::size_t n = 0;
    while (!out_.empty() && n < read_into_.size()) {
      Piece& piece = front_piece();
      const std::size_t copied =
          asio::buffer_copy(read_into_ + n, asio::buffer(piece.bytes) + piece.read);
      piece.read += copied;
      n += copied;
      if (piece.read < piece.bytes.size()) {
        break;
      }
      // Read whole: its DATA goes back to the stream's window, and the piece goes.
      if (piece.data_bytes > 0 && !stream_over_) {
        connection_->consume(id_, piece.data_bytes);
      }
      out_.pop_front();
    }
    complete(handler, {}, n);
    return;
  }
  if (ended_) {
    complete(handler, asio::error::eof, 0);
  } else if (failure_) {
    complete(handler, failure_, 0);
  } else {
    read_handler_.emplace(std::move(handler));  // nothing yet: it waits
  }
}

H1OverH2Upstream::Piece& H1OverH2Upstream::front_piece() {
  Piece& piece = out_.front();
  if (piece.open) {
    piece.open = false;
    if (chunked_) {
      piece.bytes = hex(piece.bytes.size()) + "\r\n" + piece.bytes + "\r\n";
    }
  }
  return piece;
}

void H1OverH2Upstream::response_bytes(std::string bytes) {
  out_.push_back(Piece{std::move(bytes), 0, 0, false});
  readable_.cancel();
  serve_read();
}

void H1OverH2Upstream::response_data(std::string& data) {
  if (!out_.empty() && out_.back().open && out_.back().bytes.size() < kPieceBytes) {
    out_.back().bytes += data;
    out_.back().data_bytes += data.size();
  } else {
    const std::size_t size = data.size();
    out_.push_back(Piece{std::move(data), 0, size, true});
  }
  readable_.cancel();
  serve_read();
}

void H1OverH2Upstream::take(const h2::ResponseHead& head, bool interim, bool end_stream) {
  const h2::Http1ResponseHead mapped =
      h2::to_http1_response(head, interim, head_request_, end_stream);
  if (!interim) {
    head_seen_ = true;
    chunked_ = mapped.chunked;
  }
  response_bytes(std::move(mapped.text));
  if (end_stream) {
    ended_ = true;
    serve_read();
  }
}

void H1OverH2Upstream::on_origin_event(h2::ClientEvent& event) {
  if (auto* interim = std::get_if<h2::InterimHeadEvent>(&event)) {
    take(interim->head, true, false);
  } else if (auto* head = std::get_if<h2::ResponseHeadEvent>(&event)) {
    take(head->head, false, head->end_stream);
  } else if (auto* data = std::get_if<h2::DataEvent>(&event)) {
    if (!data->bytes.empty()) {  // (never a chunk of its own: an empty one is the last)
      response_data(data->bytes);
    }
  } else if (std::holds_alternative<h2::EndEvent>(event)) {
    // (Trailers, a TrailersEvent before this, are dropped: see the header.)
    if (chunked_ && !ended_) {
      response_bytes("0\r\n\r\n");
    }
    ended_ = head_seen_;
    serve_read();
  } else if (std::holds_alternative<h2::SendReadyEvent>(event)) {
    serve_write();
  } else if (auto* closed = std::get_if<h2::StreamClosedEvent>(&event)) {
    stream_over_ = true;  // (nothing to give back to a stream that is gone)
    if (!ended_) {
      fail(stream_end_failure(*closed));
    } else if (!request_ended_) {
      fail(make_error(StreamFailure::ended_before_request));
    }
  }
}

// ---- the request ----

void H1OverH2Upstream::write(std::span<const asio::const_buffer> buffers, Handler handler) {
  std::size_t taken = 0;
  for (const asio::const_buffer& buffer : buffers) {
    const std::size_t room = in_.max_size() - in_.size();
    const std::size_t n = std::min(room, buffer.size());
    asio::buffer_copy(in_.prepare(n), asio::buffer(buffer.data(), n));
    in_.commit(n);
    taken += n;
  }
  write_taken_ = taken;
  write_handler_.emplace(std::move(handler));
  serve_write();
}

void H1OverH2Upstream::serve_write() {
  if (!write_handler_) {
    return;
  }
  const bool done = failure_ || pump();
  if (!write_handler_) {
    return;  // (a failure inside pump() completed it already)
  }
  if (!done && !failure_) {
    return;  // waits for room on the stream (SendReadyEvent)
  }
  Handler handler = std::move(*write_handler_);
  write_handler_.reset();
  if (failure_) {
    complete(handler, failure_, 0);
  } else {
    complete(handler, {}, write_taken_);
  }
}

bool H1OverH2Upstream::pump() {
  for (;;) {
    if (!flush_body()) {
      return false;
    }
    if (failure_) {
      return true;
    }
    if (request_.is_done()) {
      if (!request_ended_ && id_ != 0) {
        request_ended_ = true;
        if (const auto error = connection_->end_stream(id_); error != h2::SubmitError::none) {
          fail(make_error(StreamFailure::not_taken, static_cast<std::uint32_t>(error)));
        }
      }
      in_.consume(in_.size());  // (nothing follows one request on its stream)
      return true;
    }
    if (in_.size() == 0) {
      return true;
    }
    body_.resize(kBodyPiece);
    auto& body = request_.get().body();
    body.data = body_.data();
    body.size = body_.size();
    boost::system::error_code error;
    const std::size_t used = request_.put(in_.data(), error);
    in_.consume(used);
    body_.resize(kBodyPiece - body.size);
    if (error == http::error::need_buffer) {
      error = {};
    }
    const bool need_more = error == http::error::need_more;
    if (error && !need_more) {
      fail(
          error == http::error::header_limit
              ? head_too_large()
              : make_error(StreamFailure::not_readable, static_cast<std::uint32_t>(error.value())));
      return true;
    }
    if (request_.is_header_done() && id_ == 0 && !open_stream()) {
      return true;
    }
    if (need_more && used == 0 && body_.empty()) {
      if (in_.size() == in_.max_size()) {
        fail(head_too_large());
      }
      return true;  // the rest of a head or of a chunk's header line is still to come
    }
  }
}

bool H1OverH2Upstream::open_stream() {
  const auto& head = request_.get();
  h2::FieldList fields;
  for (const auto& field : head) {
    fields.push_back(h2::Field{std::string(field.name_string()), std::string(field.value())});
  }
  head_request_ = head.method() == http::verb::head;
  auto mapped = h2::to_http2_request(head.method_string(), head.target(), fields, scheme_);
  if (!mapped) {
    fail(make_error(StreamFailure::not_carried, static_cast<std::uint32_t>(mapped.error())));
    return false;
  }
  const bool end_stream = request_.is_done() && body_.empty();
  auto opened = connection_->open_stream(*mapped, end_stream, *this);
  if (!opened) {
    fail(make_error(StreamFailure::no_stream, static_cast<std::uint32_t>(opened.error())));
    return false;
  }
  id_ = *opened;
  request_ended_ = end_stream;
  return true;
}

bool H1OverH2Upstream::flush_body() {
  if (body_.empty() || id_ == 0 || failure_) {
    return true;
  }
  auto sent = connection_->send_data(id_, body_);
  if (!sent) {
    fail(make_error(StreamFailure::not_taken, static_cast<std::uint32_t>(sent.error())));
    return true;
  }
  body_.erase(0, *sent);
  return body_.empty();
}

}  // namespace sandgate::session::exchange
