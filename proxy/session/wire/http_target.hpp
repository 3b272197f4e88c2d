// The target of a plain-HTTP proxy request (`GET http://host:port/path?q HTTP/1.1`), parsed
// strictly into what the policy checks and what is sent upstream, so the two cannot disagree.
//
// Pure functions on values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rules/expected.hpp"
#include "rules/host.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

// Why a request target was refused. Each maps to a reason (target_error_reason) and a sentence
// (target_error_text).
enum class TargetError : std::uint8_t {
  origin_form,         // `/path`: a bare path, as sent to an origin server, not to a proxy
  https,               // `https://...`: must be tunnelled with CONNECT
  unsupported_scheme,  // anything but `http://` (`ftp://`, `*`, `host:port`, ...)
  bad_character,       // a control character, space or DEL in the target
  fragment,            // `#...`: never sent on the wire
  host,                // the authority is no valid host[:port]; see `host_error`
};

struct TargetFailure {
  TargetError error;
  rules::HostError host_error = rules::HostError::empty;  // when error == host
};

struct HttpTarget {
  rules::Host host;
  std::uint16_t port = 80;
  std::string authority;    // for the Host header: `name`, `name:port`, `[v6]:port` (normalised)
  std::string origin_form;  // the request-target sent upstream: `/path?q` (or `*` for OPTIONS)
};

// Parses an absolute-form target: scheme `http` in any case, `//`, an authority without user
// information, an optional port (plain decimal 1..65535, no leading zero; default 80), then a
// path that starts with '/' (an empty path becomes "/", or "*" for OPTIONS), an optional query,
// and no fragment.
Expected<HttpTarget, TargetFailure> parse_http_target(std::string_view target,
                                                      bool is_options = false);

// The reason a refused target is logged and answered with (origin-form, invalid-host, ...), and
// its code.
rules::Reason target_error_reason(const TargetFailure& failure);
std::string_view target_error_code(const TargetFailure& failure);
std::string target_error_text(const TargetFailure& failure, std::string_view target);

}  // namespace sandgate::session
