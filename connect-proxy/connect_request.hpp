// The HTTP side of sandgate-connect, without any I/O: the CONNECT request for a destination, the
// proxy's response head, and the one-line message a person running git can act on when the
// proxy says no.
//
// Pure functions on values; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "rules/expected.hpp"

namespace sandgate::connect_proxy {

// The largest response head accepted from the proxy; sandgate's own replies are a few hundred
// bytes, so anything this big is not a proxy talking.
inline constexpr std::size_t kMaxResponseHead = 16 * 1024;

// The authority `host:port` for CONNECT from ssh's %h and %p: IPv6 literals get brackets (a
// bracketed one is kept), the port must be 1..65535, and the host may hold no byte that could
// end the request line or smuggle a header (controls, space, DEL) nor '/', '?', '#', '@', '\',
// '"'. The proxy checks the host strictly as well; this only keeps the request well formed.
Expected<std::string, std::string> make_authority(std::string_view host, std::string_view port);

// `CONNECT authority HTTP/1.1`, a Host header with the same authority, with `credentials`
// (`user:password`) a `Proxy-Authorization: Basic` header, and the blank line.
std::string build_connect_request(std::string_view authority, std::string_view credentials = {});

// Base64 (RFC 4648 section 4, padded), for Basic credentials.
std::string encode_base64(std::string_view bytes);

// Where the response head in `bytes` ends (the offset just past its blank line), or nullopt if
// the blank line has not arrived yet. Accepts CRLF and bare LF line ends.
std::optional<std::size_t> find_head_end(std::string_view bytes);

struct ResponseHead {
  int status = 0;      // 100..599
  std::string reason;  // the reason phrase, possibly empty
  // From `Proxy-Status: ...; details="CODE: sentence"` (RFC 9209), unescaped; empty if absent.
  std::string details;
};

// Parses a complete response head (status line and header fields, up to the blank line). The
// error says what was wrong, quoting a little of the text.
Expected<ResponseHead, std::string> parse_response_head(std::string_view head);

// The `details` parameter of a Proxy-Status field value, unescaped (`\"` and `\\`), or nullopt.
// A bare token is accepted as well as an sf-string.
std::optional<std::string> proxy_status_details(std::string_view field_value);

// The message for a CONNECT that did not get 200, without the program prefix: e.g.
// "the proxy at 127.0.0.1:9877 refused other.test:22 with 403 Forbidden (ssh-non-git-host):
// other.test is not a git host (GOOSE_SANDBOX_GIT_HOSTS)." For sandgate's own 407 (reason
// auth-required or auth-failed), `sent_credentials` says whether the request carried any: the
// message then says the token was not accepted, or where sandgate-connect takes one from.
std::string describe_refusal(const ResponseHead& head, std::string_view proxy,
                             std::string_view authority, bool sent_credentials = false);

// `text` made safe for one line on a terminal: controls become '?', and it is cut at `limit`.
std::string printable(std::string_view text, std::size_t limit = 300);

}  // namespace sandgate::connect_proxy
