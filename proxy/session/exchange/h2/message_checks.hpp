// RFC 9113 section 8 as the gate checks it: header blocks read with their size bounded, request
// and response heads read out of a block strictly, trailers, and what the owner submits checked
// before it reaches the wire. Pure functions; thread-safe.
//
// nghttp2 (with its HTTP messaging checks, which the codecs keep on) already refuses, before a
// field reaches the codec: a name with an uppercase letter or a character outside the token set,
// a value with CR, LF, NUL or leading or trailing whitespace, connection-specific fields
// (connection, keep-alive, proxy-connection, transfer-encoding, upgrade), te other than
// "trailers", a pseudo-header field repeated, unknown, empty or after a regular field, :protocol
// without SETTINGS_ENABLE_CONNECT_PROTOCOL, a request without :method, :scheme and :path (or
// without :authority and host), a :path that is not "/..." (or "*" for OPTIONS), two
// content-length fields or one that is not digits, DATA that disagrees with content-length,
// trailers without END_STREAM, a :status that is not three digits or is 101. The checks here
// repeat those (a second reading costs little and holds if nghttp2 changes) and add what nghttp2
// leaves out: any control character in a value, a :path with a byte nghttp2 allows but an
// HTTP/1.1 origin may read differently ('#', bytes over 0x7e), userinfo in :authority, host
// differing from :authority, a :scheme other than the connection's, a :status outside 100-599,
// trailers carrying framing, routing or credential fields, and CONNECT without :protocol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "proxy/session/exchange/h2/messages.hpp"
#include "proxy/session/exchange/h2/problems.hpp"
#include "rules/expected.hpp"

namespace sandgate::session::exchange::h2 {

// A header block as it is decoded: its fields in order (pseudo-header fields first), and its size
// as SETTINGS_MAX_HEADER_LIST_SIZE counts it. Past `limit` it is marked too large and keeps no
// field, so a block's memory never passes its limit whatever the peer sends.
class HeaderBlock {
 public:
  explicit HeaderBlock(std::size_t limit) : limit_(limit) {}
  void add(std::string_view name, std::string_view value, bool never_index = false);
  bool too_large() const { return too_large_; }
  // The size counted so far (name + value + 32 per field, RFC 9113 section 6.5.2).
  std::size_t size() const { return size_; }
  const FieldList& fields() const { return fields_; }
  FieldList take_fields() { return std::move(fields_); }

 private:
  std::size_t limit_;
  std::size_t size_ = 0;
  bool too_large_ = false;
  FieldList fields_;
};

// An RFC 9110 token (a method, a field name before lowercasing, a :protocol).
bool is_token(std::string_view text);
// A field name as HTTP/2 carries it: a token without uppercase letters.
bool is_field_name(std::string_view name);
// A field value: visible ASCII, spaces, tabs and bytes over 0x7f, with no leading or trailing
// space or tab (no control character at all: not CR, LF or NUL, nor any other).
bool is_field_value(std::string_view value);
// connection, keep-alive, proxy-connection, transfer-encoding, upgrade (RFC 9113 section 8.2.2).
bool is_connection_specific(std::string_view name);
// host[:port] where host is a name of letters, digits, '-', '.', '_' and '~', or a bracketed
// IPv6 address; the port 0-65535. No userinfo, no percent-encoding, nothing empty.
bool is_authority(std::string_view authority);
// A request's :path: "*" for OPTIONS, else "/" followed by visible ASCII but '#'.
bool is_request_path(std::string_view path, std::string_view method);
// content-length's value: decimal digits only, at most 2^63 - 1.
std::optional<std::uint64_t> parse_content_length(std::string_view value);

// What a connection accepts of a request head.
struct RequestRules {
  std::string_view scheme = "https";  // the connection's: the only :scheme accepted
  bool connect_protocol = false;      // SETTINGS_ENABLE_CONNECT_PROTOCOL was sent (RFC 8441)
};

// Reads a request head out of a decoded block (pseudo-header fields first, as they came).
// host, when present, must equal :authority (case aside) and stands in for it when it is missing;
// it is not kept in the fields. CONNECT without :protocol is refused (plain_connect).
Expected<RequestHead, StreamProblem> read_request_head(FieldList block, const RequestRules& rules);
// Reads a response head (interim or final) out of a decoded block.
Expected<ResponseHead, StreamProblem> read_response_head(FieldList block);
// Checks a trailer section: regular fields only, each valid, and none of the fields that frame,
// route or authenticate a message (content-length, host, te, trailer, authorization,
// proxy-authorization, cookie): a next hop that merges trailers into the head must not find
// them, and credentials belong in the head, where the gate's secrets stage reads them.
StreamProblem check_trailers(const FieldList& fields);

// What the owner submits, checked before it reaches the wire.
SubmitError check_outgoing_request(const RequestHead& head);
// `interim`: a 1xx head (100-199 but 101); else a final one (200-599).
SubmitError check_outgoing_response(const ResponseHead& head, bool interim);
SubmitError check_outgoing_trailers(const FieldList& fields);

}  // namespace sandgate::session::exchange::h2
