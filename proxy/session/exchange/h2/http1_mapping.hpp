// Heads between HTTP/2 and HTTP/1.1, for an exchange whose two sides speak different versions:
// an HTTP/2 client's request to an HTTP/1.1 origin (and back, its response), and an HTTP/1.1
// client's request to an HTTP/2-only origin. What cannot be carried across is refused, never
// guessed at: two readings of one message on either side of a version change is how a request is
// smuggled. Pure functions on field lists (no Beast: the HTTP/1.1 side's parser has read and
// checked the raw head already); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/session/exchange/h2/messages.hpp"
#include "rules/expected.hpp"

namespace sandgate::session::exchange::h2 {

enum class MappingProblem : std::uint8_t {
  none,
  extended_connect,        // an RFC 8441 CONNECT: the WebSocket stage translates it, not this
  plain_connect,           // CONNECT (a tunnel) has no HTTP/2 form the gate sends
  target_not_origin_form,  // an HTTP/1.1 target other than "/..." or "*"
  missing_host,            // an HTTP/1.1 request without Host, or with two
  invalid_field,           // a name that is no token, or a value with a control character
  conflicting_length,      // content-length fields that differ, or one that is not a number
  status_not_mappable,     // 101 (only the WebSocket stage switches protocols), or outside 100-599
};

std::string_view describe(MappingProblem problem);

// What an HTTP/1.1 origin gets for an HTTP/2 request.
struct Http1Request {
  std::string method;
  std::string target;  // origin-form, or "*"
  // host first (from :authority), then the request's fields in order: its cookie crumbs joined
  // into one cookie field where the first was (RFC 9113 section 8.2.3), te left out (it asked
  // the gate for trailers, not the next hop), and transfer-encoding: chunked when a body follows
  // without a content-length.
  FieldList fields;
  bool chunked = false;  // the body is sent with chunked coding
};

// `has_body`: DATA follows the head (the head did not end the stream).
Expected<Http1Request, MappingProblem> to_http1_request(const RequestHead& head, bool has_body);

// What an HTTP/2 client gets for an HTTP/1.1 response head (as the HTTP/1.1 parser read it: names
// in any case, values as sent). Names lowercased; connection-specific fields left out, and those
// the Connection field names (RFC 9110 section 7.6.1); values trimmed of surrounding whitespace;
// content-length kept once (left out beside transfer-encoding, and in 1xx and 204 responses,
// which have no body HTTP/2 would frame).
Expected<ResponseHead, MappingProblem> to_http2_response(unsigned status, const FieldList& fields);

// What an HTTP/1.1 client gets for an HTTP/2 origin's response head (interim or final, as the
// client codec passed it on: checked fields, no connection-specific one): its status line, a
// reason phrase of the gate's, its fields, and for a final head framing of the gate's: the
// origin's content-length, or `transfer-encoding: chunked` when it gave none and a body follows
// (`content-length: 0` when the head ended the stream). `bodiless`: a response that has no body
// whatever its fields say (to HEAD, or 204 or 304): nothing is added. Ends with the blank line.
struct Http1ResponseHead {
  std::string text;
  bool chunked = false;  // the body that follows is sent in chunks
};
Http1ResponseHead to_http1_response(const ResponseHead& head, bool interim, bool bodiless,
                                    bool end_stream);

// What an HTTP/2-only origin gets for an HTTP/1.1 request (origin-form target, its Host the
// authority, on a connection of `scheme`). As above for the fields; te kept only as "trailers".
Expected<RequestHead, MappingProblem> to_http2_request(std::string_view method,
                                                       std::string_view target,
                                                       const FieldList& fields,
                                                       std::string_view scheme);

}  // namespace sandgate::session::exchange::h2
