// The load tool's origin over HTTP/2 (a TLS session whose client chose h2 by ALPN): each request
// is answered as the HTTP/1.1 origin answers it, "GET /N" with an N-byte body of 'h' (at most
// 64 KiB), and "/hold" with a response head whose body never comes, so that a stream stays open
// through a proxy for as long as the client likes (the h2-hold workload). nghttp2 directly, with
// up to 1000 streams at once per connection.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "bench/load/tls.hpp"

namespace sandgate::load {

// Serves the connection (after its TLS handshake) until the client goes or breaks HTTP/2.
// Completes on the stream's executor; the stream must outlive it.
boost::asio::awaitable<void> serve_h2(tls_stream& stream);

}  // namespace sandgate::load
