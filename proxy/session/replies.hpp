// The replies the proxy writes itself: denials and upstream failures, each with an RFC 9209
// Proxy-Status header carrying a stable reason code and a human sentence, and a short text body.
// Built from two constant tables (status per reply kind, Proxy-Status error type per reply kind).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sandgate::session {

// Why the proxy answered instead of the destination.
enum class ReplyKind : std::uint8_t {
  denied,              // 403: the policy denied the destination (reason code in details)
  denied_address,      // 403: the destination's address is prohibited (loopback, metadata, ...)
  bad_request,         // 400: malformed request, target or host
  header_too_large,    // 431: request head over the limit
  request_timeout,     // 408: the request head did not arrive in time
  dns_not_found,       // 502: the name does not exist or has no addresses
  dns_failure,         // 502: the resolver failed (server failure)
  dns_timeout,         // 504: the resolver did not answer in time
  connection_refused,  // 502: every address refused the connection
  unreachable,         // 502: no route to any address
  connect_timeout,     // 504: no address answered in time
  connection_limit,    // 503: too many clients at once
  upstream_failure,    // 502: the origin closed or broke the exchange (plain HTTP)
  not_implemented,     // 501: a method or form the proxy does not carry
  auth_required,       // 407: the gate needs a token (SANDGATE_TOKEN) and got none or a wrong one
};

struct ReplyInfo {
  unsigned status;
  std::string_view status_text;
  std::string_view proxy_status_error;  // RFC 9209 error type
  std::string_view extra_field = {};     // a header field line (no CRLF) this kind needs, if any
};

const ReplyInfo& reply_info(ReplyKind kind);

// A complete HTTP/1.1 response with `Connection: close`. `code` is the sandgate reason code
// (e.g. "blocklist", "dns-error"), `sentence` the human explanation.
std::string build_reply(ReplyKind kind, std::string_view code, std::string_view sentence);

// Escapes text for an RFC 8941 sf-string (the details parameter): printable ASCII only,
// '"' and '\' escaped, anything else replaced by '?'.
std::string to_sf_string(std::string_view text);

}  // namespace sandgate::session
