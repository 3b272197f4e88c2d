// The one rule for where an HTTP/1 head ends and how its lines break, shared by every reader of
// a head in the gate: the explicit proxy's and SOCKS5's request heads and the capture's (through
// proxy/session/wire/http_head.hpp's read_request_head), and a parent proxy's reply head
// (proxy/parent/parent_proxy.hpp). Every line ends in CRLF. A bare LF (which RFC 9112 section
// 2.2 lets a recipient take for a line end, and Python's http.server and nginx do) or a bare CR
// is refused, never read one way here and another way by the origin: two readings of one head
// are how a second request is smuggled past the Host check. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sandgate::rules {

struct HeadScan {
  enum class Status : std::uint8_t {
    need_more,  // no end yet, and nothing wrong so far
    complete,   // `length` bytes: the head, its empty line included
    malformed,  // `problem` says why (a bare CR or LF, and where)
  };
  Status status = Status::need_more;
  std::size_t length = 0;
  std::string problem;
};

// Scans a head from its first byte (empty lines before a request line already skipped). Looks at
// no more than `limit` bytes; a head longer than that stays need_more (the caller's limit says).
HeadScan scan_head(std::string_view bytes, std::size_t limit);

}  // namespace sandgate::rules
