// What can go wrong on an HTTP/2 connection, each kind once, each with a sentence for the log
// (describe()) that never quotes the peer's bytes: the error codes of the wire (RFC 9113 section
// 7), why a connection ended, why a stream was refused or ended early, and why the owner's own
// submission was not taken.
#pragma once

#include <cstdint>
#include <string_view>

namespace sandgate::session::exchange::h2 {

// RFC 9113 section 7: the codes of RST_STREAM and GOAWAY.
enum class ErrorCode : std::uint32_t {
  no_error = 0x0,
  protocol_error = 0x1,
  internal_error = 0x2,
  flow_control_error = 0x3,
  settings_timeout = 0x4,
  stream_closed = 0x5,
  frame_size_error = 0x6,
  refused_stream = 0x7,  // the stream was not processed: safe to retry
  cancel = 0x8,
  compression_error = 0x9,
  connect_error = 0xa,
  enhance_your_calm = 0xb,  // the peer is generating excessive load
  inadequate_security = 0xc,
  http_1_1_required = 0xd,
};

// Why a connection ended on the gate's side (the peer's own GOAWAY is an event, not an error).
enum class ConnectionError : std::uint8_t {
  none,
  bad_preface,              // the client's first bytes are not HTTP/2's connection preface
  protocol,                 // the peer broke RFC 9113 (a frame on a closed or idle stream, a bad
                            // SETTINGS value, DATA before SETTINGS, ...): GOAWAY PROTOCOL_ERROR
  flow_control,             // the peer sent more than the window the gate advertised
  compression,              // an HPACK block that does not decode: a table size update over the
                            // advertised size, an index out of the table, a field over 64 KiB
  frame_size,               // a frame longer than SETTINGS_MAX_FRAME_SIZE, or of the wrong size
  too_many_settings,        // a SETTINGS frame with more than Limits::max_settings_entries
  continuation_flood,       // more CONTINUATION frames in one header block than Limits allows
  unread_acknowledgements,  // PING and SETTINGS acknowledgements piled up: the peer sends
                            // without reading (Limits::max_queued_acks)
  control_frame_flood,      // PING and SETTINGS frames faster than Limits allows
  empty_frame_flood,        // consecutive empty DATA frames beyond Limits allows
  rapid_reset,              // streams reset faster than Limits allows (CVE-2023-44487)
  internal,                 // out of memory, or a fault of the gate's: GOAWAY INTERNAL_ERROR
};

// Why a stream was refused or ended early by the codec (or, on the client side, what was wrong
// with the origin's response).
enum class StreamProblem : std::uint8_t {
  none,
  // The head (or trailers) broke RFC 9113 section 8; the codec reset the stream with
  // PROTOCOL_ERROR, as section 8.1.1 requires of a malformed message.
  forbidden_field,        // a connection-specific field, te other than "trailers", an uppercase
                          // name, or a pseudo-header field repeated, unknown or after a regular one
  invalid_field_name,     // a name with a character outside the token set
  invalid_field_value,    // a value with CR, LF, NUL or another control character, or with
                          // leading or trailing whitespace
  missing_pseudo_header,  // :method, :scheme, :path or :authority missing (:status in a
                          // response)
  invalid_pseudo_header,  // a pseudo-header field's value malformed (a :path not starting with
                          // "/", a :status not 100-599, ...)
  authority_invalid,      // :authority (or host) not host[:port], or with userinfo
  host_mismatch,          // both :authority and host, and they differ (RFC 9113 section 8.3.1)
  scheme_mismatch,        // a :scheme other than the connection's
  path_invalid,           // a :path with a space, a control character, '#' or a byte over 0x7e
  protocol_not_enabled,   // :protocol without SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441)
  trailers_invalid,       // trailers without END_STREAM, or with a field trailers may not carry
  content_length_mismatch,  // DATA longer or shorter than content-length (section 8.1.1)
  // Refused, the stream left open for the owner's answer (RequestRejectedEvent::must_answer).
  head_too_large,  // the header list over Limits::max_header_list_size: answer 431
  plain_connect,   // CONNECT without :protocol: a tunnel inside an inspected connection
  // The heads (and trailers) the connection's open streams hold together would pass
  // Limits::connection_head_bytes: a request head is refused with REFUSED_STREAM (safe to
  // retry); trailers, or (client side) a response head, end their stream.
  too_many_open_heads,
  // Ended by the codec for a limit; the stream is reset.
  trailers_too_large,  // trailers over Limits::max_header_list_size
  // (client) the origin's bytes held for the connection's streams passed
  // Limits::origin_held_bytes, and this stream held the most: its client was not reading
  held_too_much,
  // Found by nghttp2 on a stream: the stream is reset with the code it names.
  stream_protocol_error,  // a frame the stream's state does not allow (a WINDOW_UPDATE of 0, ...)
  stream_flow_control,    // more than the stream's window
};

// Why the owner's call was not taken. The stream and the connection are unchanged by a refusal.
enum class SubmitError : std::uint8_t {
  none,
  unknown_stream,            // no such stream, or it is closed (a StreamClosedEvent was given)
  wrong_state,               // not now: a second response head, data after the end, ...
  invalid_head,              // a field the wire may not carry (uppercase, CR/LF/NUL, a
                             // connection-specific field, a status out of range, ...)
  body_not_allowed,          // a body for a HEAD request, or after a 204 or 304
  body_exceeds_length,       // more than the head's content-length
  body_shorter_than_length,  // the end before content-length bytes (the stream is reset)
  stream_limit_reached,      // (client) the origin's SETTINGS_MAX_CONCURRENT_STREAMS or the
                             // gate's own: wait for a StreamClosedEvent, or use another connection
  connect_protocol_not_supported,  // (client) extended CONNECT to an origin that did not send
                                   // SETTINGS_ENABLE_CONNECT_PROTOCOL = 1
  going_away,                      // a GOAWAY was sent or received: no new streams
  connection_ended,                // the connection is over
};

// Sentences for the log, in the house's voice; never the peer's bytes.
std::string_view describe(ErrorCode code);
std::string_view describe(ConnectionError error);
std::string_view describe(StreamProblem problem);
std::string_view describe(SubmitError error);

// The code a connection error ends the connection with (its GOAWAY's).
ErrorCode goaway_code_for(ConnectionError error);

}  // namespace sandgate::session::exchange::h2
