// What the load tool's HTTP/2 client (h2_client_session.hpp) and origin (h2_origin.hpp) share:
// an owned nghttp2 session, header fields, and the I/O loop that moves a session's bytes over a
// TLS stream. nghttp2 is used directly (not the gate's codecs) so that the tool measuring the
// gate shares no HTTP/2 code with it.
#pragma once

#include <nghttp2/nghttp2.h>

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "bench/load/tls.hpp"

namespace sandgate::load {

struct h2_session_deleter {
  void operator()(nghttp2_session* session) const { nghttp2_session_del(session); }
};
using h2_session_ptr = std::unique_ptr<nghttp2_session, h2_session_deleter>;

struct h2_callbacks_deleter {
  void operator()(nghttp2_session_callbacks* callbacks) const {
    nghttp2_session_callbacks_del(callbacks);
  }
};
using h2_callbacks_ptr = std::unique_ptr<nghttp2_session_callbacks, h2_callbacks_deleter>;

// A header field for nghttp2_submit_*: nghttp2 copies name and value, so they need only live
// until the submit returns.
nghttp2_nv h2_field(std::string_view name, std::string_view value);

// How run_h2_io ended.
enum class h2_io_end {
  stopped,         // after_read asked to stop; the session's output so far is written
  finished,        // the session wants neither to read nor to write (GOAWAY both ways)
  write_failed,    // the socket refused a write (closed, reset, or closed by the watchdog)
  read_failed,     // the peer closed, reset, or the watchdog closed the socket
  protocol_error,  // nghttp2 found the peer's bytes broke HTTP/2 (its GOAWAY is written)
};

// Moves `session`'s bytes over `stream` until it ends: writes whatever the session has to send,
// reads what comes (up to 16 KiB at a time) into it, then calls `after_read`, which may submit
// more (written at the next turn) and returns false to stop. Nothing is read while output is
// pending, so a peer that does not read cannot make this side hold more than one batch.
// Completes on the stream's executor; the owner bounds it in time (closing the socket ends it).
boost::asio::awaitable<h2_io_end> run_h2_io(tls_stream& stream, nghttp2_session* session,
                                            std::function<bool()> after_read);

}  // namespace sandgate::load
