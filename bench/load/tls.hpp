// TLS for the load tool: the origin's server context (its --tls-cert and --tls-key) and the
// clients' context (--ca-file), so the https workloads measure what an inspecting proxy costs
// against an opaque tunnel and against no proxy. Asio's TLS engine is compiled once in the
// project (proxy/launchdarkly/ssl_impl.cpp), which this tool links.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <string>

namespace sandgate::load {

// A client's TLS connection over the slot's socket (the slot keeps owning the socket, so its
// watchdog can still close it under a pending handshake or read).
using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>;

// TLS 1.2 or later, the certificates of `certificate_file` (a PEM chain, leaf first) and its key.
// Throws boost::system::system_error naming the file when either cannot be loaded.
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

}  // namespace sandgate::load
