// The replies the proxy writes itself: denials and upstream failures, each with an RFC 9209
// Proxy-Status header carrying a stable reason code and a human sentence, and a short text body.
// The status and the Proxy-Status error type are the reason's row in the one reason table
// (rules/reason.hpp); nothing here lists reasons of its own.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rules/reason.hpp"

namespace sandgate::session {

// What a denial is about, where that decides the Proxy-Status error type. A reason's row gives
// the type for a decision on the request's own target; an address that the target's name
// resolved to is RFC 9209's `destination_ip_prohibited` whatever rule refused it (the blocklist
// naming the address, say): the address is what is prohibited, not the name.
enum class DeniedAt : std::uint8_t {
  target,            // the row's error type
  resolved_address,  // `destination_ip_prohibited`
};

// The reason phrase of a status the gate replies with ("Forbidden", "Bad Gateway", ...).
std::string_view status_text(unsigned status);

// The parts of the gate's reply for `reason`, for any wire: its row's status (500 for a reason
// without one), the Proxy-Status field's value (the error type and `details`: the reason code
// and `sentence`), and a short text body (kReplyContentType) carrying both.
struct Reply {
  unsigned status = 500;
  std::string proxy_status;
  std::string body;
};
inline constexpr std::string_view kReplyContentType = "text/plain; charset=utf-8";
Reply reply_for(rules::Reason reason, std::string_view sentence, DeniedAt at = DeniedAt::target);

// A complete HTTP/1.1 response with `Connection: close` for `reason`, which must be one the
// gate replies for (its row's status is not 0; otherwise a 500 with `proxy_internal_error`).
// Proxy-Status `details` and the body carry the reason code and `sentence`; a 407 also carries
// `Proxy-Authenticate: Basic realm="sandgate"` (RFC 9110 section 11.7.1).
std::string build_reply(rules::Reason reason, std::string_view sentence,
                        DeniedAt at = DeniedAt::target);

// Escapes text for an RFC 8941 sf-string (the details parameter): printable ASCII only,
// '"' and '\' escaped, anything else replaced by '?'.
std::string to_sf_string(std::string_view text);

}  // namespace sandgate::session
