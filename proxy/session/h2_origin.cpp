// One shared HTTP/2 connection to an origin (h2_origin.hpp).
#include "proxy/session/h2_origin.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <utility>
#include <variant>
#include <vector>

#include "proxy/asio/use_tuple.hpp"

namespace sandgate::session {

namespace asio = boost::asio;
namespace h2 = exchange::h2;
using clock = std::chrono::steady_clock;

namespace {

// The most the connection reads of its socket at a time.
constexpr std::size_t kReadPiece = 16 * 1024;
// How long the GOAWAY that tells a broken origin why its connection ends may take to go: an
// origin that does not read it is closed all the same.
constexpr std::chrono::seconds kGoawayWait{1};

// The stream an event is about; 0 for the connection's own (GOAWAY, SETTINGS, a ping's answer).
template <typename Event>
h2::StreamId stream_of(const Event& event) {
  if constexpr (requires { event.stream; }) {
    return event.stream;
  } else {
    return 0;
  }
}

}  // namespace

H2Origin::H2Origin(H2OriginKeeper& keeper, std::string key, std::unique_ptr<SecuredOrigin> secured,
                   bool shared, std::chrono::milliseconds idle_lifetime)
    : keeper_(&keeper),
      key_(std::move(key)),
      secured_(std::move(secured)),
      shared_(shared),
      idle_lifetime_(idle_lifetime),
      output_ready_(secured_->socket.get_executor()),
      idle_(secured_->socket.get_executor()) {
  output_ready_.expires_at(clock::time_point::max());
}

H2Origin::~H2Origin() = default;

void H2Origin::start() {
  asio::co_spawn(secured_->socket.get_executor(), read_loop(shared_from_this()), asio::detached);
  asio::co_spawn(secured_->socket.get_executor(), write_loop(shared_from_this()), asio::detached);
  after_stream();  // idle until its first stream
}

std::size_t H2Origin::available_streams() const {
  return usable() ? codec_.available_streams() : 0;
}

Expected<h2::StreamId, h2::SubmitError> H2Origin::open_stream(const h2::RequestHead& head,
                                                              bool end_stream,
                                                              H2OriginStreamSink& sink) {
  if (!usable()) {
    return Unexpected{h2::SubmitError::going_away};
  }
  auto opened = codec_.submit_request(head, end_stream);
  if (opened) {
    sinks_[*opened] = &sink;
    idle_.cancel();
    wake_writer();
  }
  return opened;
}

Expected<std::size_t, h2::SubmitError> H2Origin::send_data(h2::StreamId stream,
                                                           std::string_view bytes) {
  auto taken = codec_.send_data(stream, bytes);
  wake_writer();
  return taken;
}

h2::SubmitError H2Origin::submit_trailers(h2::StreamId stream, h2::FieldList trailers) {
  const h2::SubmitError error = codec_.submit_trailers(stream, std::move(trailers));
  wake_writer();
  return error;
}

h2::SubmitError H2Origin::end_stream(h2::StreamId stream) {
  const h2::SubmitError error = codec_.end_stream(stream);
  wake_writer();
  return error;
}

h2::SubmitError H2Origin::reset_stream(h2::StreamId stream, h2::ErrorCode code) {
  const h2::SubmitError error = codec_.reset_stream(stream, code);
  wake_writer();
  return error;
}

void H2Origin::consume(h2::StreamId stream, std::size_t bytes) {
  codec_.consume(stream, bytes);
  wake_writer();
}

void H2Origin::release_stream(h2::StreamId stream, h2::ErrorCode code) {
  if (sinks_.erase(stream) == 0) {
    return;  // over already (its StreamClosedEvent was delivered), or the connection closed
  }
  // Nobody reads it any more: the origin stops, and what it sent goes back to the window the
  // connection's other streams share.
  codec_.reset_stream(stream, code);
  wake_writer();
  after_stream();
}

void H2Origin::retire() {
  if (closed_ || retired_) {
    return;
  }
  retired_ = true;
  if (keeper_ != nullptr) {
    keeper_->room_changed(key_);  // its waiters look elsewhere
  }
  after_stream();
}

void H2Origin::close(std::string why) {
  if (closed_) {
    return;
  }
  closed_ = true;
  why_closed_ = std::move(why);
  boost::system::error_code ignored;
  secured_->socket.close(ignored);  // its loops end
  idle_.cancel();
  wake_writer();
  // Every borrowed stream is over: its sink hears so (and may release it, which finds none).
  auto sinks = std::move(sinks_);
  sinks_.clear();
  for (auto& [stream, sink] : sinks) {
    h2::ClientEvent closed =
        h2::StreamClosedEvent{stream, h2::Closer::peer, h2::ErrorCode::internal_error};
    sink->on_origin_event(closed);
  }
  if (H2OriginKeeper* keeper = std::exchange(keeper_, nullptr)) {
    keeper->ended(*this);  // and nothing more: it may go now
  }
}

void H2Origin::finish() {
  if (finishing_ || closed_) {
    return;
  }
  finishing_ = true;
  retired_ = true;
  codec_.shutdown();  // GOAWAY NO_ERROR: the writer closes the connection once it is written
  wake_writer();
}

void H2Origin::end_after_goaway(std::string why) {
  if (closed_ || finishing_) {
    close(std::move(why));
    return;
  }
  // The codec's GOAWAY (its error code says why) goes first: the write loop closes the
  // connection once it is written, or the wait does. No stream is taken meanwhile.
  ending_why_ = std::move(why);
  finishing_ = true;
  retire();
  idle_.expires_after(kGoawayWait);
  idle_.async_wait([weak = weak_from_this()](boost::system::error_code error) {
    auto self = weak.lock();
    if (self != nullptr && !error) {
      self->close(self->ending_why_);
    }
  });
  wake_writer();
}

void H2Origin::after_stream() {
  if (closed_ || finishing_ || !sinks_.empty()) {
    return;
  }
  if (retired_) {
    finish();
    return;
  }
  // Idle: kept for its lifetime unless a stream comes (open_stream cancels the wait).
  idle_.expires_after(idle_lifetime_);
  idle_.async_wait([weak = weak_from_this()](boost::system::error_code error) {
    auto self = weak.lock();
    if (self != nullptr && !error && self->sinks_.empty()) {
      self->finish();
    }
  });
}

asio::awaitable<void> H2Origin::read_loop(std::shared_ptr<H2Origin> self) {
  std::vector<char> buffer(kReadPiece);
  while (!self->closed_) {
    auto [error, n] =
        co_await self->secured_->tls->async_read_some(asio::buffer(buffer), use_tuple);
    if (error || self->closed_) {
      self->close("the origin closed its HTTP/2 connection");
      break;
    }
    const h2::ConnectionError failed = self->codec_.receive(std::string_view(buffer.data(), n));
    self->take_events();
    self->wake_writer();
    if (failed != h2::ConnectionError::none) {
      self->end_after_goaway("the origin broke HTTP/2 (" + std::string(h2::describe(failed)) + ")");
      break;
    }
  }
}

asio::awaitable<void> H2Origin::write_loop(std::shared_ptr<H2Origin> self) {
  std::string out;
  while (!self->closed_) {
    const std::string_view pending = self->codec_.pending_output();
    self->take_events();
    if (pending.empty()) {
      if (self->finishing_) {
        // Its GOAWAY is written.
        self->close(self->ending_why_.empty() ? "the gate closed it" : self->ending_why_);
        break;
      }
      co_await self->output_ready_.async_wait(use_tuple);
      self->output_ready_.expires_at(clock::time_point::max());
      continue;
    }
    out.assign(pending);
    auto [error, n] =
        co_await asio::async_write(*self->secured_->tls, asio::buffer(out), use_tuple);
    if (error) {
      self->close("the origin's HTTP/2 connection failed (" + error.message() + ")");
      break;
    }
    self->codec_.consume_output(n);
    self->take_events();
  }
}

void H2Origin::take_events() {
  while (auto event = codec_.next_event()) {
    if (const auto* goaway = std::get_if<h2::GoawayEvent>(&*event)) {
      // The origin takes no new stream; those above its last id close as retry_safe.
      (void)goaway;
      retire();
    } else if (std::holds_alternative<h2::PeerSettingsEvent>(*event)) {
      if (keeper_ != nullptr) {
        keeper_->room_changed(key_);
        keeper_->settings_changed(key_);
      }
    } else if (std::holds_alternative<h2::PingAckEvent>(*event)) {
      // (No ping is sent: a connection the origin closes shows as the end of its socket.)
    } else {
      const h2::StreamId stream = std::visit([](const auto& e) { return stream_of(e); }, *event);
      deliver(stream, *event);
    }
  }
}

void H2Origin::deliver(h2::StreamId stream, h2::ClientEvent& event) {
  const auto found = sinks_.find(stream);
  if (found == sinks_.end()) {
    if (const auto* data = std::get_if<h2::DataEvent>(&event)) {
      codec_.consume(stream, data->bytes.size());  // nobody reads it: the window gets it back
    }
    return;
  }
  H2OriginStreamSink* sink = found->second;
  if (std::holds_alternative<h2::StreamClosedEvent>(event)) {
    sinks_.erase(found);
    sink->on_origin_event(event);
    if (keeper_ != nullptr) {
      keeper_->room_changed(key_);
    }
    after_stream();
    return;
  }
  sink->on_origin_event(event);
}

Expected<h2::StreamId, h2::SubmitError> BorrowedStreams::open(BorrowedStream& stream,
                                                              std::shared_ptr<H2Origin> connection,
                                                              const h2::RequestHead& head,
                                                              bool end_stream,
                                                              H2OriginStreamSink& sink) {
  const bool ended = end_stream || (stream.end_kept && !stream.trailers_kept);
  auto opened = connection->open_stream(head, ended, sink);
  if (!opened) {
    return opened;
  }
  stream.connection = std::move(connection);
  stream.id = *opened;
  stream.reopening = false;
  if (stream.trailers_kept) {
    stream.connection->submit_trailers(stream.id, std::move(*stream.trailers_kept));
    stream.trailers_kept.reset();
  }
  stream.end_kept = false;
  return opened;
}

Expected<std::size_t, h2::SubmitError> BorrowedStreams::send_data(BorrowedStream& stream,
                                                                  std::string_view bytes) {
  if (stream.reopening) {
    return std::size_t{0};  // its new stream will have room
  }
  if (!stream) {
    return Unexpected{h2::SubmitError::unknown_stream};
  }
  auto taken = stream.connection->send_data(stream.id, bytes);
  stream.sent_after_head = stream.sent_after_head || (taken && *taken > 0);
  return taken;
}

h2::SubmitError BorrowedStreams::submit_trailers(BorrowedStream& stream, h2::FieldList trailers) {
  if (stream.reopening) {
    stream.trailers_kept = std::move(trailers);
    stream.end_kept = true;
    return h2::SubmitError::none;
  }
  if (!stream) {
    return h2::SubmitError::unknown_stream;
  }
  stream.sent_after_head = true;
  return stream.connection->submit_trailers(stream.id, std::move(trailers));
}

h2::SubmitError BorrowedStreams::end_stream(BorrowedStream& stream) {
  if (stream.reopening) {
    stream.end_kept = true;
    return h2::SubmitError::none;
  }
  if (!stream) {
    return h2::SubmitError::unknown_stream;
  }
  stream.sent_after_head = true;
  return stream.connection->end_stream(stream.id);
}

h2::SubmitError BorrowedStreams::reset_stream(BorrowedStream& stream, h2::ErrorCode code) {
  if (!stream) {
    return h2::SubmitError::unknown_stream;
  }
  return stream.connection->reset_stream(stream.id, code);
}

void BorrowedStreams::consume(BorrowedStream& stream, std::size_t bytes) {
  if (stream) {
    stream.connection->consume(stream.id, bytes);
  }
}

void BorrowedStreams::release(BorrowedStream& stream, h2::ErrorCode code) {
  if (stream) {
    stream.connection->release_stream(stream.id, code);
  }
  stream = BorrowedStream{};
}

}  // namespace sandgate::session
