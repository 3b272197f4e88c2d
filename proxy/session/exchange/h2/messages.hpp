// What an HTTP/2 exchange carries, as the codecs hand it to their owner and take it back: header
// fields, a request head (the pseudo-header fields read out and checked) and a response head.
// Plain values; the codecs copy what they are given and own what they hand out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::session::exchange::h2 {

// A stream's identifier: odd for the client's streams (RFC 9113 section 5.1.1).
using StreamId = std::int32_t;

// One header field. Names are lowercase (RFC 9113 section 8.2.1); neither the name nor the value
// holds CR, LF or NUL; the value has no leading or trailing space or tab.
struct Field {
  std::string name;
  std::string value;
  // Never put in an HPACK table (RFC 7541 section 7.1.3): the peer sent it so (and the next hop
  // must get it so), or it is a credential. The codecs also send authorization,
  // proxy-authorization and cookie fields so, whatever this says.
  bool never_index = false;
  // Two fields are the same field whatever their HPACK representation.
  bool operator==(const Field& other) const { return name == other.name && value == other.value; }
};
// Fields in the order they came (or are to be sent); a name may repeat (`cookie` crumbs,
// `set-cookie`).
using FieldList = std::vector<Field>;

// A request head. Each pseudo-header field is read out of the list once and carried here; `fields`
// holds only the regular fields (never `host`: its value, when a request had one, is `authority`).
struct RequestHead {
  std::string method;     // a token: "GET", "POST", "CONNECT" (only with `protocol`)
  std::string scheme;     // the connection's scheme: "https" (or "http" on a plain connection)
  std::string authority;  // host[:port], no userinfo
  std::string path;       // origin-form ("/a?b") or "*" (OPTIONS)
  std::string protocol;   // RFC 8441's :protocol ("websocket"), empty unless extended CONNECT
  FieldList fields;
  // The content-length field's value, when there was one (it is also in `fields`). Set by the
  // codecs on what they read; on what the owner submits the field decides and this is ignored.
  std::optional<std::uint64_t> content_length;

  bool extended_connect() const { return !protocol.empty(); }
};

// A response head: interim (1xx but 101, which HTTP/2 does not have) or final (200-599).
struct ResponseHead {
  unsigned status = 200;
  FieldList fields;  // the regular fields; never a pseudo-header field
  // As RequestHead::content_length: read by the codecs, ignored on what the owner submits.
  std::optional<std::uint64_t> content_length;
};

// The value of the first field named `name` (lowercase), or nothing.
const std::string* find_field(const FieldList& fields, std::string_view name);

}  // namespace sandgate::session::exchange::h2
