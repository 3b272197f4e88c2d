// An inspected WebSocket, frame by frame. See websocket_relay.hpp.
#include "proxy/session/exchange/websocket_relay.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>
#include <utility>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/exchange/budget_stage.hpp"

namespace sandgate::session::exchange {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using clock = std::chrono::steady_clock;

// With a tail held back by redaction, how long the origin must be silent before the part of it
// that may go goes (as the HTTP response side waits: http_response_side.cpp).
constexpr std::chrono::milliseconds kRedactionPause{20};
// The longest frame header: 2 bytes, a 64-bit length, a mask.
constexpr std::size_t kMaxHeader = 14;

// Bytes read from one side and not taken yet: a header's beginning, a piece of payload. Room for
// one read of kPiece (a TLS record's plaintext, the most a read brings; an HTTP/2 side reads no
// more at once) behind a header's beginning.
class Inbox {
 public:
  Inbox() : data_(PayloadRedaction::kPiece + kMaxHeader) {}
  std::string_view view() const { return {data_.data() + begin_, end_ - begin_}; }
  std::size_t size() const { return end_ - begin_; }
  void consume(std::size_t n) {
    begin_ += n;
    if (begin_ == end_) {
      begin_ = end_ = 0;
    }
  }
  // Room for the next read, behind what is held (moved to the front first).
  asio::mutable_buffer room() {
    if (begin_ > 0) {
      std::memmove(data_.data(), data_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    return asio::buffer(data_.data() + end_,
                        std::min(data_.size() - end_, PayloadRedaction::kPiece));
  }
  void commit(std::size_t n) { end_ += n; }

 private:
  std::vector<char> data_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

std::array<std::uint8_t, 4> fresh_mask() {
  std::array<std::uint8_t, 4> mask{};
  if (RAND_bytes(mask.data(), static_cast<int>(mask.size())) != 1) {
    // A mask guards intermediaries' caches from a client's chosen bytes, not a secret: a fixed
    // one when the generator fails only loses that guard for the gate's own close.
    mask = {0x5a, 0xa5, 0x3c, 0xc3};
  }
  return mask;
}

const char* name_of(Sender sender) { return sender == Sender::client ? "client" : "origin"; }

class Relay {
 public:
  Relay(const asio::any_io_executor& executor, WebSocketPeer& client, WebSocketPeer& origin,
        WebSocketOptions options)
      : options_(options),
        up_{Sender::client, true, client, origin, Inbox(), MessageSequence(options.limits),
            std::nullopt},
        down_{Sender::server, false, origin, client, Inbox(), MessageSequence(options.limits),
              std::nullopt},
        watchdog_(executor) {
    if (options.redactions != nullptr) {
      down_.redaction.emplace(*options.redactions);
    }
    if (options.messages != nullptr) {
      tap_.emplace(*options.messages, options.redactions);
    }
  }

  asio::awaitable<WebSocketEnd> run() {
    co_await (pump(up_) && pump(down_) && watch());
    if (tap_) {
      tap_->finish();
    }
    if (down_.redaction) {
      result_.tally.redacted = down_.redaction->replaced();
    }
    result_.origin_cut = up_.cut;
    result_.client_cut = down_.cut;
    co_return std::move(result_);
  }

 private:
  // One direction: frames from `from` to `to`.
  struct Direction {
    Sender sender;
    bool upward;
    WebSocketPeer& from;
    WebSocketPeer& to;
    Inbox inbox;
    MessageSequence sequence;
    std::optional<PayloadRedaction> redaction;  // the origin's payloads, when secrets are bound
    bool in_frame = false;                      // a frame's payload is being relayed
    bool close_passed = false;                  // a close frame went to `to`
    bool cut = false;  // a frame to `to` was left unfinished (WebSocketEnd::client_cut)
    // The gate is ending the WebSocket and its close went (or could not go) to `to`: what
    // `from` still sends is read and dropped until its own close (its answer), its end, or
    // kEndingWait, so that closing the socket never resets a peer that has not yet read the
    // gate's close.
    bool discarding = false;
    // The origin's pings and pongs that came while redaction held the end of a data frame:
    // written once that frame is whole (a control frame may come between a message's frames,
    // not inside one). Writing them at once would mean letting go of the held end as if the
    // stream had ended, and the rest of a value split around the control frame would no longer
    // match any form. At most kMaxHeldControls; more are dropped (pings and pongs may be lost
    // on the way: the peer pings again).
    std::string held_controls{};
    std::size_t held_control_count = 0;
  };
  static constexpr std::size_t kMaxHeldControls = 16;
  // Why the gate ends the WebSocket, and what its close frames say.
  struct Ending {
    std::uint16_t code;
    std::string reason;
  };
  enum class Step : std::uint8_t { next_frame, stop };

  Direction& other(Direction& d) { return &d == &up_ ? down_ : up_; }
  void touch() { last_activity_ = clock::now(); }

  asio::awaitable<void> pump(Direction& d) {
    co_await relay_frames(d);
    if (--running_ == 0 || !ending_) {
      watchdog_.cancel();  // done, or the other direction now has a close deadline
    }
  }

  asio::awaitable<void> relay_frames(Direction& d) {
    for (;;) {
      // The gate ends it (a fault, a budget, a timeout, the other side gone): a close goes to
      // this direction's destination where a frame may begin; then the source is drained.
      if (ending_ && !d.discarding) {
        co_await finish(d);
      }
      // A header: read, checked alone, then in the order of messages.
      const HeaderRead read = read_frame_header(d.inbox.view(), d.sender);
      if (read.status == HeaderRead::Status::need_more) {
        if (!co_await read_more(d)) {
          co_await source_ended(d);
          co_return;
        }
        continue;
      }
      if (read.status == HeaderRead::Status::refused) {
        if (d.discarding) {
          // Where the next frame begins is lost: what comes is dropped as it is.
          co_await drop_the_rest(d);
          co_return;
        }
        broke(d, read.error);
        continue;
      }
      const FrameHeader header = read.header;
      if (!d.discarding) {
        if (const FrameError order = d.sequence.accept(header); order != FrameError::none) {
          broke(d, order);
          continue;  // the header is sound: the source is drained frame by frame
        }
      }
      // The budgets: the whole frame, before any of it goes.
      if (options_.allowance != nullptr && !d.discarding) {
        std::optional<budget::Stop> stop =
            co_await options_.allowance->take(d.upward, header.header_size + header.length);
        if (stop && !ending_) {
          result_.budget = std::move(stop);
          end(WebSocketEnd::How::budget_exhausted, result_.budget->sentence, kClosePolicyViolation,
              "budget spent");
        }
        if (ending_) {
          continue;
        }
      }
      d.inbox.consume(header.header_size);
      Step step = Step::stop;
      if (header.control()) {
        step = co_await relay_control(d, header);
      } else {
        step = co_await relay_data(d, header);
      }
      if (step == Step::stop) {
        co_return;
      }
    }
  }

  // The control frames that waited for a data frame to be whole, once it is.
  static void take_held_controls(Direction& d, std::string& out) {
    if (!d.held_controls.empty() && d.redaction && d.redaction->between_frames()) {
      out += d.held_controls;
      d.held_controls.clear();
      d.held_control_count = 0;
    }
  }

  // A data frame (text, binary, continuation), its payload streamed in pieces.
  asio::awaitable<Step> relay_data(Direction& d, const FrameHeader& header) {
    if (!d.discarding) {
      if (header.opcode != Opcode::continuation) {
        ++(d.upward ? result_.tally.messages_up : result_.tally.messages_down);
      }
      (d.upward ? result_.tally.payload_up : result_.tally.payload_down) += header.length;
    }
    std::string out = encode_frame_header(header.fin, header.opcode, header.length,
                                          header.masked ? &header.mask : nullptr);
    d.in_frame = true;
    const bool tapped = tap_ && !d.discarding;
    if (tapped) {
      tap_->frame_begins(d.upward, header);
    }
    if (d.redaction && !d.discarding) {
      d.redaction->frame_begins(std::move(out), header.length);
      out.clear();
    }
    std::uint64_t remaining = header.length;
    for (;;) {
      const auto n = static_cast<std::size_t>(
          std::min<std::uint64_t>({remaining, d.inbox.size(), PayloadRedaction::kPiece}));
      if (tapped) {
        tap_->payload(d.upward, d.inbox.view().substr(0, n));
      }
      if (d.discarding) {
        out.clear();
      } else if (d.redaction) {
        std::memcpy(d.redaction->fresh_space(), d.inbox.view().data(), n);
        d.redaction->pass(n, out);
        take_held_controls(d, out);
      } else {
        out.append(d.inbox.view().data(), n);
      }
      d.inbox.consume(n);
      remaining -= n;
      if (!out.empty()) {
        if (!co_await write(d, out)) {
          co_return Step::stop;
        }
        out.clear();
      }
      if (remaining == 0) {
        break;
      }
      if (!co_await read_more(d)) {
        co_await source_ended(d);
        co_return Step::stop;
      }
    }
    d.in_frame = false;
    if (tapped) {
      tap_->frame_ends(d.upward, header.fin);
    }
    if (d.redaction && header.fin && !d.discarding) {
      // A message's end is a pause of the origin's: what is held only because a word was cut
      // goes now; a secret's held beginning (worth kHoldBits) still waits for the next bytes.
      d.redaction->on_pause(out);
      take_held_controls(d, out);
      if (!out.empty()) {
        if (!co_await write(d, out)) {
          co_return Step::stop;
        }
      }
    }
    co_return Step::next_frame;
  }

  // A control frame (close, ping, pong): at most 125 bytes, read whole, passed on whole.
  asio::awaitable<Step> relay_control(Direction& d, const FrameHeader& header) {
    while (d.inbox.size() < header.length) {
      if (!co_await read_more(d)) {
        co_await source_ended(d);
        co_return Step::stop;
      }
    }
    std::string payload(d.inbox.view().substr(0, header.length));
    d.inbox.consume(header.length);
    if (d.discarding) {
      // The source's answer to the gate's close ends what is drained of it.
      co_return header.opcode == Opcode::close ? Step::stop : Step::next_frame;
    }
    if (header.opcode == Opcode::close) {
      std::string plain = payload;
      if (header.masked) {
        apply_mask(plain.data(), plain.size(), header.mask, 0);
      }
      ClosePayload close;
      if (const FrameError error = read_close_payload(plain, close); error != FrameError::none) {
        broke(d, error);
        co_return Step::next_frame;  // the source is drained from the next frame on
      }
    }
    // A server's control frame is not masked: its payload is cleaned as it is.
    std::string out;
    if (d.redaction) {
      d.redaction->clean_control(payload);
      if (header.opcode != Opcode::close && !d.redaction->between_frames()) {
        // The end of a data frame is held: this waits for it (see held_controls).
        if (d.held_control_count < kMaxHeldControls) {
          d.held_controls += encode_frame_header(true, header.opcode, header.length, nullptr);
          d.held_controls += payload;
          ++d.held_control_count;
        }
        co_return Step::next_frame;
      }
      // A close ends the stream: what redaction holds goes first, then what waited for it.
      d.redaction->flush(out);
      take_held_controls(d, out);
    }
    out += encode_frame_header(true, header.opcode, header.length,
                               header.masked ? &header.mask : nullptr);
    out += payload;
    if (!co_await write(d, out)) {
      co_return Step::stop;
    }
    if (header.opcode != Opcode::close) {
      co_return Step::next_frame;
    }
    // This side is done sending; the other has kCloseWait to answer with its own close.
    d.close_passed = true;
    if (!other(d).close_passed) {
      close_deadline_ = clock::now() + kCloseWait;
    }
    co_return Step::stop;
  }

  // Reads more of `d`'s source. With a tail held back by redaction and nothing more at hand,
  // waits first for the origin to pause, and lets go what may go then. False: the source ended
  // or failed, or the gate is ending the WebSocket.
  asio::awaitable<bool> read_more(Direction& d) {
    if (d.redaction && d.redaction->held() > 0 && d.inbox.size() == 0 && !ending_) {
      const bool paused = co_await d.from.quiet_for(kRedactionPause);
      if (paused && !ending_) {
        std::string out;
        d.redaction->on_pause(out);
        // (Nested, not `&&`: GCC 12 mishandles co_await in a short-circuit operand.)
        if (!out.empty()) {
          if (!co_await write(d, out)) {
            co_return false;
          }
        }
      }
    }
    for (;;) {
      if (ending_ && !d.discarding) {
        // The gate is ending it (its cancel may have ended the last read): the close goes to
        // the destination, and the source is read on only to drain it.
        co_await finish(d);
      }
      auto [error, n] = co_await d.from.read_some(d.inbox.room());
      if (error == asio::error::operation_aborted && ending_ && !d.discarding) {
        continue;
      }
      if (error || n == 0) {
        co_return false;
      }
      d.inbox.commit(n);
      touch();
      co_return true;
    }
  }

  // What the source still sends once the frames cannot be followed: read and dropped until it
  // ends (or kEndingWait closes it).
  asio::awaitable<void> drop_the_rest(Direction& d) {
    for (;;) {
      d.inbox.consume(d.inbox.size());
      auto [error, n] = co_await d.from.read_some(d.inbox.room());
      if (error || n == 0) {
        co_return;
      }
    }
  }

  asio::awaitable<bool> write(Direction& d, std::string_view bytes) {
    if (d.discarding) {
      co_return true;  // drained: nothing goes on
    }
    auto [error, written] = co_await d.to.write(asio::buffer(bytes));
    (d.upward ? result_.tally.bytes_up : result_.tally.bytes_down) += written;
    touch();
    if (error && !ending_) {
      end(WebSocketEnd::How::reset,
          error == kSourceWasReset
              ? std::string("the ") + name_of(d.sender) + " reset its stream mid-message."
              : std::string("the ") +
                    name_of(d.sender == Sender::client ? Sender::server : Sender::client) +
                    " failed: " + error.message() + ".",
          kCloseGoingAway, "the other side went away");
    }
    if (error) {
      d.cut = true;  // what was written of a frame may be all `to` gets of it
    }
    co_return !error;
  }

  // The source ended or failed.
  asio::awaitable<void> source_ended(Direction& d) {
    if (d.discarding) {
      co_return;
    }
    if (!ending_ && other(d).close_passed) {
      // It went after the other side's close reached it, without answering: an end all the
      // same (the other side is told so by the gate's close).
      end(WebSocketEnd::How::closed, {}, kCloseNormal, "");
    } else if (!ending_) {
      end(WebSocketEnd::How::reset,
          std::string("the ") + name_of(d.sender) +
              " went (its connection or stream ended) without a close frame.",
          kCloseGoingAway, "the other side went away");
    }
    co_await finish(d);
  }

  // `d`'s source broke the protocol or a limit: the WebSocket ends, 1002 (or 1009) both ways.
  void broke(Direction& d, FrameError error) {
    end(d.sender == Sender::client ? WebSocketEnd::How::client_broke
                                   : WebSocketEnd::How::origin_broke,
        std::string("the ") + name_of(d.sender) + " sent " + describe(error) + ".",
        close_code_for(error), describe(error));
  }

  // The gate's close to `d`'s destination, unless it has had one or a frame to it is unfinished
  // (then the connection just ends).
  asio::awaitable<void> finish(Direction& d) {
    const bool may_write = !d.close_passed && !d.in_frame && ending_;
    d.cut = d.cut || (d.in_frame && !d.discarding);
    d.discarding = true;
    if (!may_write) {
      co_return;
    }
    std::string out;
    if (d.redaction) {
      d.redaction->flush(out);
      take_held_controls(d, out);
    }
    // To an origin the gate writes as a client does: masked.
    const std::array<std::uint8_t, 4> mask = fresh_mask();
    out += encode_close_frame(ending_->code, ending_->reason, d.upward ? &mask : nullptr);
    d.close_passed = true;
    // (Not through write(): the direction is draining now.)
    auto [error, written] = co_await d.to.write(asio::buffer(out));
    (void)error;
    (d.upward ? result_.tally.bytes_up : result_.tally.bytes_down) += written;
  }

  // The gate ends the WebSocket (the first reason stands): both sources' reads are cancelled,
  // and each direction writes its close (finish) within kEndingWait.
  void end(WebSocketEnd::How how, std::string problem, std::uint16_t code, std::string reason) {
    if (ending_) {
      return;
    }
    ending_ = Ending{code, std::move(reason)};
    result_.how = how;
    result_.problem = std::move(problem);
    ending_deadline_ = clock::now() + kEndingWait;
    up_.from.cancel();
    down_.from.cancel();
    watchdog_.cancel();
  }

  // The one timer of the WebSocket: the idle limit, the wait for a close's answer, and the
  // bound on the gate's own closes. Re-armed whenever a pump changes a deadline (cancel).
  asio::awaitable<void> watch() {
    while (running_ > 0) {
      clock::time_point deadline = clock::time_point::max();
      if (options_.idle.count() > 0 && !ending_) {
        deadline = last_activity_ + options_.idle;
      }
      if (close_deadline_ && !ending_) {
        deadline = std::min(deadline, *close_deadline_);
      }
      if (ending_deadline_) {
        deadline = std::min(deadline, *ending_deadline_);
      }
      watchdog_.expires_at(deadline);
      co_await watchdog_.async_wait(use_tuple);
      if (running_ == 0) {
        co_return;
      }
      const auto now = clock::now();
      if (ending_deadline_ && now >= *ending_deadline_) {
        // A side that does not take the gate's close in time: its connection just ends.
        up_.from.close();
        down_.from.close();
        co_return;
      }
      if (close_deadline_ && !ending_ && now >= *close_deadline_) {
        end(WebSocketEnd::How::closed, {}, kCloseNormal, "the close was not answered in time");
      } else if (options_.idle.count() > 0 && !ending_ && now >= last_activity_ + options_.idle) {
        end(WebSocketEnd::How::idle_timeout,
            "nothing moved either way for " + std::to_string(options_.idle.count()) + " s.",
            kCloseGoingAway, "idle");
      }
    }
  }

  WebSocketOptions options_;
  Direction up_;
  Direction down_;
  std::optional<MessageTap> tap_;  // --log-websocket-messages
  asio::steady_timer watchdog_;
  int running_ = 2;
  clock::time_point last_activity_ = clock::now();
  std::optional<clock::time_point> close_deadline_;
  std::optional<clock::time_point> ending_deadline_;
  std::optional<Ending> ending_;
  WebSocketEnd result_;
};

}  // namespace

std::string WebSocketTally::summary() const {
  auto count = [](std::uint64_t messages, std::uint64_t bytes) {
    return std::to_string(messages) + (messages == 1 ? " message (" : " messages (") +
           std::to_string(bytes) + " bytes)";
  };
  return count(messages_up, payload_up) + " up, " + count(messages_down, payload_down) + " down";
}

asio::awaitable<std::optional<budget::Stop>> BudgetAllowance::take(bool upward,
                                                                   std::uint64_t bytes) {
  co_return co_await budget_.take_whole_or_ask(
      upward ? rules::BudgetKind::up : rules::BudgetKind::down, bytes);
}

asio::awaitable<WebSocketEnd> relay_websocket(WebSocketPeer& client, WebSocketPeer& origin,
                                              WebSocketOptions options) {
  Relay relay(co_await asio::this_coro::executor, client, origin, options);
  co_return co_await relay.run();
}

}  // namespace sandgate::session::exchange
