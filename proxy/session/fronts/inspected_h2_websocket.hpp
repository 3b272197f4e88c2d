// WebSockets over HTTP/2 (RFC 8441) on an inspected connection: the HTTP/2 front's part of them,
// with the same treatment as a WebSocket on HTTP/1.1 (inspected_websocket.hpp):
//   - the gate allows extended CONNECT to the client only once the origin connection allowed it
//     (inspected_h2.cpp, on the origin's SETTINGS; never withdrawn);
//   - the extended CONNECT is judged, filled and counted as its HTTP/1.1 upgrade would be: a GET
//     of its path, its extension offers taken out (as_upgrade_request); a :protocol other than
//     websocket is refused on its stream, since the gate reads no other protocol's frames;
//   - the origin's 2xx must choose only what was offered (answer_problem), or the client gets
//     502 on that stream;
//   - then the stream's DATA both ways is relayed by the one WebSocket frame relay
//     (exchange/websocket_relay.hpp: masking by side, fragments, control frames, close, budgets
//     on payload bytes, secrets' real values cleaned from what the origin sends, the tally for
//     the end line), each side an HTTP/2 stream read and written under its flow control;
//   - the stream ends as RFC 8441 section 5 maps a TCP close: END_STREAM on each side after the
//     close frames (an orderly close), RST_STREAM CANCEL on a side a frame to which was left
//     unfinished (a reset). The connection's other streams go on.
//
// Single-threaded: everything here runs on the connection's worker thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/session/admission.hpp"
#include "proxy/session/exchange/websocket_message_tap.hpp"
#include "proxy/session/fronts/inspected_h2_stream.hpp"

namespace sandgate::session::h2_front {

// The method a stream is judged, counted and logged with: GET for a WebSocket's extended CONNECT
// (as its HTTP/1.1 upgrade is a GET), the request's own otherwise.
std::string_view judged_method(const h2::RequestHead& request);

// Makes `head` (the stream's extended CONNECT as the admission and secrets stages read it) the
// HTTP/1.1 upgrade those stages judge: a GET of its path, without Sec-WebSocket-Extensions (the
// payloads must travel plain for redaction). A refusal for a :protocol other than websocket.
std::optional<Refusal> as_upgrade_request(const h2::RequestHead& request,
                                          boost::beast::http::request_header<>& head);

// Why the origin's 2xx to the stream's extended CONNECT `request` (as sent) is not a WebSocket
// handshake the gate may relay, or nothing: extensions and subprotocols as on HTTP/1.1
// (exchange::choice_problem), and no content-length (RFC 9110 section 9.3.6).
std::optional<std::string> answer_problem(const h2::RequestHead& request,
                                          const h2::ResponseHead& response);

// What the WebSocket borrows from its connection, which outlives it.
struct ConnectionLinks {
  h2::ServerCodec& server;
  BorrowedStreams& client;  // the origin side: each stream on its shared origin connection
  std::function<void()> wake_writers;  // the codecs have output: the writing loops go on
  const bool& stopping;                // the connection is ending
  std::chrono::seconds idle{0};        // the settings' idle_timeout (none when zero)
};

// Relays the WebSocket stream `s` carries (s.websocket_open: its 2xx has gone to the client)
// until it ends, then ends the stream's two sides, waiting at most exchange::kEndingWait for the
// origin to end its own. Sets what the end line says of it (outcome, reason, detail, rule, bytes).
// `messages`: where its messages are logged (--log-websocket-messages), or null.
boost::asio::awaitable<void> relay_websocket(ConnectionLinks links, Stream& s,
                                             exchange::MessageLog* messages);

}  // namespace sandgate::session::h2_front
