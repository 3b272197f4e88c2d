// The WebSocket upgrade on an inspected connection, as the gate shapes and checks it (RFC 6455
// section 4, and RFC 8441 section 5 over HTTP/2): what it takes out of the client's upgrade
// request, and what an origin's 101 (or 200) must show before the gate relays a single frame.
#pragma once

#include <boost/beast/http/message.hpp>
#include <optional>
#include <string>

namespace sandgate::session::exchange {

// Takes every extension offer (Sec-WebSocket-Extensions) out of the client's upgrade request.
// The gate reads every frame the origin sends to clean it of secret values (redaction), and a
// compressed payload (permessage-deflate) hides them: so no extension is negotiated, the
// payloads travel plain, and a reserved bit set on a frame is an error. An allow-list of none:
// an extension the gate does not know could change what the payload bytes mean.
void offer_no_extensions(boost::beast::http::request_header<>& request);

// Why the origin's 101 to `request` (as it was sent, offers taken out) is not a WebSocket
// handshake the gate may relay, or nothing: its Sec-WebSocket-Accept must be the one the
// request's Sec-WebSocket-Key asks for, any extension it chose must have been offered (none
// was), a subprotocol it chose must be one the client offered.
std::optional<std::string> upgrade_problem(const boost::beast::http::request_header<>& request,
                                           const boost::beast::http::response_header<>& response);

// Why an origin's answer to a WebSocket handshake chose what was not offered, or nothing: any
// extension it chose must have been offered (none is), a subprotocol it chose must be one the
// client offered, and at most one. upgrade_problem() checks this after the key; over HTTP/2 (RFC
// 8441 section 5: a 200 to an extended CONNECT, no key and no accept) it is all there is to check.
std::optional<std::string> choice_problem(const boost::beast::http::request_header<>& request,
                                          const boost::beast::http::response_header<>& response);

// The Sec-WebSocket-Accept for `key` (base64 of SHA-1 of the key and RFC 6455's GUID).
std::string accept_for(std::string_view key);

}  // namespace sandgate::session::exchange
