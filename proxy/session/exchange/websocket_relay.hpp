// An inspected WebSocket after its 101: the gate reads every frame both ways with its own strict
// codec (websocket_frame.hpp) and passes it on frame by frame through a few stages:
//   - the codec and the order of messages (MessageSequence), with the frame and message limits;
//   - the budgets (FrameAllowance): each frame, header and payload, is taken from the
//     destination's egress budgets before it goes, as the tunnel relay counts every byte; when a
//     frame does not fit, the WebSocket is closed 1008 "budget spent" both ways;
//   - redaction (PayloadRedaction) of what the origin sends, when secrets are bound to the host;
//   - the tally (WebSocketTally) for the end line: messages and bytes each way, never contents;
//   - where the operator asks (--log-websocket-messages), the message tap (MessageTap): each
//     message's first bytes, cleaned, in a log line of its own.
// A client's frames are not searched for sentinels: a request body is not either (it is passed
// as it is, never filled; see request_secrets.hpp and the README's table), and a WebSocket
// message is a body; only the upgrade request's head was judged, like any request head.
//
// Closing: a close frame is passed on and ends its direction; the other side's close then ends
// the other (or kCloseWait after the first, the gate ends it). A malformed frame from either
// side ends the WebSocket with a close of code 1002 (1009 over a limit) to both sides where a
// frame may still be written (not in the middle of one), and its reason is logged. Nothing
// moving either way for the idle limit (the tunnel relay's idle_timeout; none when zero) ends it
// with 1001. Once the gate ends it, what each side still sends is read and dropped until that
// side's answering close, its end, or kEndingWait: closing a socket with unread bytes would
// reset it, and a reset can destroy the gate's close before the peer reads it.
//
// The two sides are WebSocketPeers (websocket_peer.hpp): a TLS stream after an HTTP/1.1 101, or
// an HTTP/2 stream's DATA after a 200 to an extended CONNECT (RFC 8441, whose frames are RFC
// 6455's, masked by the client as on HTTP/1.1). One per WebSocket, on the sides' worker thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/session/exchange/payload_redaction.hpp"
#include "proxy/session/exchange/websocket_frame.hpp"
#include "proxy/session/exchange/websocket_message_tap.hpp"
#include "proxy/session/exchange/websocket_peer.hpp"

namespace sandgate::session::exchange {

class BudgetStage;

// After one side's close was passed on, how long the other has to answer with its own.
inline constexpr std::chrono::seconds kCloseWait{5};
// After the gate decided to end a WebSocket, how long its own close frames may take to go.
inline constexpr std::chrono::seconds kEndingWait{2};

// The budgets, as the relay asks them: before a frame of `bytes` (header and payload) goes
// `upward` (client to origin) or down. Nothing: it may go; otherwise the budget's stop (its rule
// and sentence). May wait (--unknown=ask asks a person for more).
class FrameAllowance {
 public:
  virtual ~FrameAllowance() = default;
  virtual boost::asio::awaitable<std::optional<budget::Stop>> take(bool upward,
                                                                   std::uint64_t bytes) = 0;
};

// What a WebSocket carried, for its end line: counts and sizes, never contents.
struct WebSocketTally {
  std::uint64_t messages_up = 0;
  std::uint64_t messages_down = 0;
  std::uint64_t payload_up = 0;  // payload bytes of data frames
  std::uint64_t payload_down = 0;
  std::uint64_t bytes_up = 0;  // frames as relayed, headers and control frames included
  std::uint64_t bytes_down = 0;
  std::uint64_t redacted = 0;  // forms of secrets replaced in what the origin sent
  // "3 messages (120 bytes) up, 5 messages (4096 bytes) down"
  std::string summary() const;
};

struct WebSocketEnd {
  enum class How : std::uint8_t {
    closed,            // both closes passed (or one, and the other side went)
    idle_timeout,      // nothing moved for the idle limit
    reset,             // a side failed or went without a close
    budget_exhausted,  // a frame did not fit in the budgets: `budget`
    client_broke,      // the client sent a malformed frame or broke a limit: `problem`
    origin_broke,      // the origin did
  };
  How how = How::closed;
  std::optional<budget::Stop> budget;
  std::string problem;  // a sentence, naming the frame's fault (never its bytes)
  WebSocketTally tally;
  // A frame to that side was left unfinished (a write failed or was cut short, or the gate
  // ended the WebSocket in the middle of one): the side's connection must be reset, not ended
  // in order, or the peer would take a cut frame for a clean end. Otherwise the gate's close
  // went to it, or its own did, or it is gone.
  bool client_cut = false;
  bool origin_cut = false;
};

struct WebSocketOptions {
  FrameLimits limits;
  std::chrono::seconds idle{0};  // none when zero
  // The forms to clean the origin's payloads of; null when no secret is bound to the host.
  const std::vector<secrets::Redaction>* redactions = nullptr;
  FrameAllowance* allowance = nullptr;  // null: no budget applies
  MessageLog* messages = nullptr;       // null: messages are counted, not logged
};

// The budgets stage as the exchange's BudgetStage gives it: each frame taken whole from the
// destination's budgets, a person asked for more under --unknown=ask, as a body's piece would
// be. Holds a reference to `budget`, which outlives it.
class BudgetAllowance final : public FrameAllowance {
 public:
  explicit BudgetAllowance(BudgetStage& budget) : budget_(budget) {}
  boost::asio::awaitable<std::optional<budget::Stop>> take(bool upward,
                                                           std::uint64_t bytes) override;

 private:
  BudgetStage& budget_;
};

// Relays until both directions are done; the caller ends the two sides after (closes the
// sockets, ends the HTTP/2 streams). Runs on the executor of the coroutine that awaits it (the
// sides' worker thread); destroying the frame that awaits it is not allowed while it runs
// (close the sides instead: the relay ends with `reset`).
boost::asio::awaitable<WebSocketEnd> relay_websocket(WebSocketPeer& client, WebSocketPeer& origin,
                                                     WebSocketOptions options);

}  // namespace sandgate::session::exchange
