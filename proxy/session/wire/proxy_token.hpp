// The gate's token check (SANDGATE_TOKEN), shared by the HTTP front end (Proxy-Authorization)
// and SOCKS5 (RFC 1929 user name and password): strict parsing of the credentials and a
// comparison in time that does not depend on where a guess goes wrong. Pure; thread-safe.
#pragma once

#include <boost/beast/http/fields.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::session {

// How a request's credentials compare with the gate's token.
enum class AuthCheck : std::uint8_t {
  ok,         // no token is required, or the request carries the right one
  missing,    // no Proxy-Authorization field
  malformed,  // not exactly one `Proxy-Authorization: Basic <base64 of user:password>`
  wrong,      // well-formed Basic credentials whose password is not the token
};

struct AuthResult {
  AuthCheck check = AuthCheck::ok;
  std::string_view problem;  // for `malformed`: why, as a phrase
};

// Checks the Proxy-Authorization fields of a request head against `token` (empty: none is
// required). Any user name is accepted; the password must equal the token, compared in time
// that does not depend on where they differ. Parsed strictly: the scheme `Basic` (any case),
// one or more spaces, canonical padded base64 and nothing after it, a ':' in what it decodes
// to, and exactly one such field. Pure; thread-safe.
AuthResult check_proxy_authorization(const boost::beast::http::fields& head,
                                     std::string_view token);

// True when `given` equals `secret`, in time that depends on the two lengths only, never on how
// much of the secret a guess got right. The token checks of HTTP and SOCKS5 both use it. Pure.
bool equals_secret(std::string_view given, std::string_view secret);

}  // namespace sandgate::session
