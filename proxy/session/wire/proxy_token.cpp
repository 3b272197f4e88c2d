// The gate's token check. See proxy_token.hpp.
#include "proxy/session/wire/proxy_token.hpp"

#include "rules/ascii.hpp"
#include "rules/base64.hpp"

namespace sandgate::session {
namespace {

namespace http = boost::beast::http;

}  // namespace

// The time taken depends on the secret's length and on the given length (which the client
// knows), never on how much of the secret a guess got right.
bool equals_secret(std::string_view given, std::string_view secret) {
  unsigned char difference = given.size() == secret.size() ? 0 : 1;
  for (std::size_t i = 0; i < secret.size(); ++i) {
    const char g = i < given.size() ? given[i] : '\0';
    difference |= static_cast<unsigned char>(g ^ secret[i]);
  }
  // Through a volatile so that no compiler turns the loop into an early-exit comparison.
  volatile unsigned char result = difference;
  return result == 0;
}

AuthResult check_proxy_authorization(const http::fields& head, std::string_view token) {
  if (token.empty()) {
    return {AuthCheck::ok, {}};
  }
  const auto count = head.count(http::field::proxy_authorization);
  if (count == 0) {
    return {AuthCheck::missing, {}};
  }
  if (count > 1) {
    return {AuthCheck::malformed, "the request has more than one Proxy-Authorization field"};
  }
  std::string_view value = head[http::field::proxy_authorization];
  value = rules::trim_ows(value);
  // `Basic` SP+ token68 (RFC 9110 section 11.4, RFC 7617).
  const auto space = value.find(' ');
  if (space == std::string_view::npos || !rules::ascii_iequals(value.substr(0, space), "Basic")) {
    return {AuthCheck::malformed,
            "the gate accepts only Basic credentials (Proxy-Authorization: Basic "
            "base64(user:token))"};
  }
  std::string_view encoded = value.substr(space);
  while (encoded.starts_with(' ')) {
    encoded.remove_prefix(1);
  }
  const auto decoded = rules::base64_decoded(encoded);
  if (!decoded) {
    return {AuthCheck::malformed, "the Basic credentials are not valid base64"};
  }
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) {
    return {AuthCheck::malformed,
            "the Basic credentials have no ':' between the user name and the token"};
  }
  const bool right = equals_secret(std::string_view(*decoded).substr(colon + 1), token);
  return {right ? AuthCheck::ok : AuthCheck::wrong, {}};
}

}  // namespace sandgate::session
