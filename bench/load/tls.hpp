// TLS for the load tool: the origin's server context (its --tls-cert and --tls-key) and the
// clients' context (--ca-file), so the https and h2 workloads measure what an inspecting proxy
// costs against an opaque tunnel and against no proxy; and ALPN, by which the h2 workloads and
// the origin agree on HTTP/2. Asio's TLS engine is compiled once in the project
// (proxy/asio/ssl_impl.cpp), which this tool links.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "bench/load/client_slot.hpp"
#include "bench/load/tunnel.hpp"

namespace sandgate::load {

// A client's TLS connection over the slot's socket (the slot keeps owning the socket, so its
// watchdog can still close it under a pending handshake or read).
using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>;

// ALPN protocol lists in their wire form (each name after its length): what an HTTP/2 client
// such as curl offers, h2 first.
inline constexpr std::string_view alpn_h2_or_http11{"\x02h2\x08http/1.1", 12};

// TLS 1.2 or later, the certificates of `certificate_file` (a PEM chain, leaf first) and its key.
// By ALPN the server chooses h2 when the client offers it, else http/1.1 when offered, else
// nothing (a client that offers no ALPN, as the https workloads, is served HTTP/1.1). Throws
// boost::system::system_error naming the file when either cannot be loaded.
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(
    const std::string& certificate_file, const std::string& key_file);

// TLS 1.2 or later, trusting only the CAs in `ca_file` (a PEM bundle: whoever may sign the
// certificate the client is shown, i.e. the origin's CA and every inspecting proxy's). Throws
// boost::system::system_error naming the file when it cannot be loaded.
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const std::string& ca_file);

// Sets up a fresh client stream for `host`: SNI (for a name; RFC 6066 has none for an address)
// and verification of the peer's certificate for that name or address. Call before the
// handshake. False when OpenSSL refused the server name.
bool prepare_client_tls(tls_stream& stream, const std::string& host);

// The client's TLS handshake on an open tunnel (or a direct connection), bounded by the slot's
// deadline: SNI and the certificate verified for `host` against the --ca-file bundle, and
// `alpn` (wire form; empty: no ALPN) offered. Completes on the slot's executor with none or tls.
boost::asio::awaitable<error_kind> client_tls_handshake(client_slot& slot, tls_stream& stream,
                                                        const std::string& host,
                                                        std::string_view alpn = {});

// The protocol the handshake agreed by ALPN ("h2", "http/1.1"), empty when none; either side.
std::string_view chosen_protocol(SSL* ssl);

}  // namespace sandgate::load
