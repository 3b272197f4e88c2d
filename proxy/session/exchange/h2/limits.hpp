// The limits of HTTP/2 as the field learned them (the 2019 Netflix advisories, CVE-2019-9511 to
// 9518; the rapid reset, CVE-2023-44487; the CONTINUATION flood, CVE-2024-27316 and 28182): each
// a named constant saying why its value, each exceeded by a test in
// tests/unit/proxy/session/exchange/h2/limits_test.cpp. The codecs take them as a Limits value
// so that a test can lower one; the gate uses the defaults.
//
// What a connection may hold, from these: request bodies up to the connection window (4 MiB; a
// stream's up to its window, 1 MiB), an origin's response bodies up to 16 MiB (a stream's up to
// its window), decoded heads up to 2 MiB, bodies the owner handed over up
// to 1 MiB (a stream's up to 64 KiB), serialized output up to 64 KiB plus one frame, and
// nghttp2's own state (its HPACK tables of 4 KiB each way, at most 128 queued acknowledgements).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sandgate::session::exchange::h2 {

// Streams a peer may have open at once: SETTINGS_MAX_CONCURRENT_STREAMS, advertised (nghttp2
// refuses one more with REFUSED_STREAM, and a peer that exceeds the acknowledged value loses the
// connection). 100 is RFC 9113's smallest recommended value and what nghttpx, Envoy and Go
// advertise; browsers and gRPC channels are built for it. The client codec opens no more than
// this towards an origin either, whatever the origin allows.
inline constexpr std::uint32_t kMaxConcurrentStreams = 100;

// A header list's size as RFC 9113 section 6.5.2 counts it (each field's name and value plus 32
// bytes), requests and responses alike: SETTINGS_MAX_HEADER_LIST_SIZE, advertised and enforced.
// 64 KiB is the HTTP/1.1 side's response head limit (kResponseHeadLimit), nghttpx's default and
// near Envoy's 60 KiB; it fits the largest real heads (a browser's cookies, a cloud SDK's signed
// headers) several times over. A request head over it gets a 431 (RFC 9113 section 10.5.1); the
// fields past the limit are decoded (HPACK must stay in step) but never stored, so an HPACK bomb
// (a few bytes that reference a large table entry many times) costs no memory.
inline constexpr std::uint32_t kMaxHeaderListSize = 64 * 1024;

// The HPACK dynamic table, each way: SETTINGS_HEADER_TABLE_SIZE advertised for the decoder (a
// table size update above it is a COMPRESSION_ERROR), and the encoder's own cap whatever the peer
// allows. 4096 is HTTP/2's default: what every peer expects, and 8 KiB of state per connection.
inline constexpr std::uint32_t kHpackTableSize = 4096;

// CONTINUATION frames after one HEADERS: more is a flood (CVE-2024-27316 class), and the
// connection ends. A header list of kMaxHeaderListSize in frames of 16 KiB (the default
// SETTINGS_MAX_FRAME_SIZE) takes four; eight leaves room for a peer that cuts blocks smaller.
inline constexpr std::size_t kMaxContinuations = 8;

// Flow-control windows the gate advertises for what the peer sends (a client's request bodies,
// an origin's response bodies). Bytes count against them until the owner says it forwarded them
// (consume()), so a slow far side slows the sender and the gate never holds more than the
// windows. A stream's 1 MiB carries 10 MiB/s at 100 ms of round trip (the window must cover the
// bandwidth-delay product) and lets a stream that is not read stall alone; the connection's
// 4 MiB bounds what one connection can make the gate hold whatever its number of streams (100
// streams of 1 MiB would be 100 MiB), and lets four streams run at full speed together.
inline constexpr std::int32_t kStreamWindow = 1 << 20;
inline constexpr std::int32_t kConnectionWindow = 4 << 20;

// (Client side) the origin's body bytes the gate holds for its streams, all together, before
// their clients take them. An origin connection is shared by the streams of many clients, and a
// stream's bytes held against the connection's window would let one client that does not read
// (its stream full at its 1 MiB window) take a quarter of that window from every other client,
// and four such streams all of it: so the connection's window is given back as the bytes arrive,
// and what a stream may hold is its own window. This bounds the total instead: 16 MiB is sixteen
// streams at their full window, more than a connection carrying readers ever holds; past it the
// stream holding the most is reset (CANCEL: its client reads the least), and the others go on.
inline constexpr std::size_t kOriginHeldBytes = 16 << 20;

// Body bytes the owner may hand a codec ahead of the peer's window, per stream and per
// connection. 64 KiB is four full DATA frames: enough to keep a stream's frames flowing while the
// owner reads the next piece from the far side, which is local and quick. The connection's 1 MiB
// lets 16 streams be full at once; a stream refused room is told when there is room again
// (SendReadyEvent), so the owner reads the far side only as fast as the peer takes the bytes.
inline constexpr std::size_t kStreamSendBuffer = 64 * 1024;
inline constexpr std::size_t kConnectionSendBuffer = 1 << 20;

// The decoded heads (and trailers) of a connection's open streams together: what the owner holds
// while its stages judge them, a question to a person possibly among them. 2 MiB is 32 heads at
// the list limit, or every one of 100 streams with 20 KiB of head when real heads are 1-2 KiB.
// A request whose head would pass it is refused with REFUSED_STREAM (the client may retry
// later); trailers that would, or an origin's response head, end their stream.
inline constexpr std::size_t kConnectionHeadBytes = 2 << 20;

// Output serialized ahead of the socket: what pending_output() holds at most (plus one frame).
// 64 KiB is one large socket write; nghttp2 keeps the rest as frames not yet made.
inline constexpr std::size_t kOutputBatch = 64 * 1024;

// Streams the peer resets (RST_STREAM), or makes the gate reset (a malformed request, a refused
// head, DATA that disagrees with its content-length), per period: the rapid-reset attack
// (CVE-2023-44487) opens and cancels streams by the hundred thousand a second, so that the gate
// does the work of each request and the concurrency limit never binds. A token bucket: 100 at once,
// then 20 a second; more ends the connection with GOAWAY ENHANCE_YOUR_CALM. A person's browser or
// an SDK cancelling on timeouts resets a few a second at most; nghttp2's own fix allows 33 a
// second, with a burst of 1000.
inline constexpr std::uint32_t kStreamResetBurst = 100;
inline constexpr std::uint32_t kStreamResetsPerSecond = 20;

// PING and SETTINGS frames (without ACK) the peer sends, each of which costs the gate a reply: a
// token bucket of 100 at once and 20 a second, plus one token for each HEADERS or DATA frame the
// gate sends (gRPC measures the bandwidth-delay product with a PING per burst of DATA it
// receives, so pings grow with the data the gate sends, which earns them). A flood
// (CVE-2019-9512, 9515) ends the connection with ENHANCE_YOUR_CALM.
inline constexpr std::uint32_t kControlFrameBurst = 100;
inline constexpr std::uint32_t kControlFramesPerSecond = 20;

// Empty DATA frames without END_STREAM in a row (CVE-2019-9518): they carry nothing, so flow
// control never stops them. Envoy allows one; a few allow for a sender that flushes oddly.
inline constexpr std::uint32_t kMaxConsecutiveEmptyFrames = 10;

// Acknowledgements (of PING and SETTINGS) nghttp2 may queue for a peer that does not read what
// the gate writes (CVE-2019-9512, 9515): more ends the connection. nghttp2's default is 1000; a
// peer that has not read 128 of them is not reading at all.
inline constexpr std::size_t kMaxQueuedAcks = 128;

// Entries in one SETTINGS frame. HTTP/2 defines nine settings; browsers add a GREASE entry or two.
// 32 is nghttp2's default; more is a flood of work for each frame.
inline constexpr std::size_t kMaxSettingsEntries = 32;

// The limits a codec applies; every field defaults to the constant above of its name.
struct Limits {
  std::uint32_t max_concurrent_streams = kMaxConcurrentStreams;
  std::uint32_t max_header_list_size = kMaxHeaderListSize;
  std::uint32_t hpack_table_size = kHpackTableSize;
  std::size_t max_continuations = kMaxContinuations;
  std::int32_t stream_window = kStreamWindow;
  std::int32_t connection_window = kConnectionWindow;
  std::size_t origin_held_bytes = kOriginHeldBytes;
  std::size_t stream_send_buffer = kStreamSendBuffer;
  std::size_t connection_send_buffer = kConnectionSendBuffer;
  std::size_t connection_head_bytes = kConnectionHeadBytes;
  std::size_t output_batch = kOutputBatch;
  std::uint32_t stream_reset_burst = kStreamResetBurst;
  std::uint32_t stream_resets_per_second = kStreamResetsPerSecond;
  std::uint32_t control_frame_burst = kControlFrameBurst;
  std::uint32_t control_frames_per_second = kControlFramesPerSecond;
  std::uint32_t max_consecutive_empty_frames = kMaxConsecutiveEmptyFrames;
  std::size_t max_queued_acks = kMaxQueuedAcks;
  std::size_t max_settings_entries = kMaxSettingsEntries;
};

}  // namespace sandgate::session::exchange::h2
