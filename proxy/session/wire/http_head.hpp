// Plain-HTTP message heads: reading a request head on a kept-alive connection (with the checks
// Beast leaves out), refusing request-smuggling shapes, and rewriting heads as they pass through
// the proxy (hop-by-hop fields out, Host from the URL, Via in).
//
// The checks exist because a proxy that frames a message differently from the origin lets one
// client request be read as two (request smuggling). Beast already refuses, at head-parse time:
// conflicting Content-Length values, Content-Length after Transfer-Encoding: chunked (and the
// reverse), a second Transfer-Encoding after one ending in chunked, a space or other non-token
// character in a field name (so whitespace before the colon), control characters in field values,
// and control characters, spaces and NUL/CR/LF in the request target. It accepts, and
// request_framing_problem() refuses: a repeated identical Content-Length (or the list `5, 5`),
// Transfer-Encoding together with Content-Length when the coding is not chunked, any coding
// other than a lone `chunked` (`gzip, chunked`, `chunked, gzip`, `identity`), two
// Transfer-Encoding fields, Transfer-Encoding in an HTTP/1.0 request, and repeated Host fields.
// Beast also accepts obsolete line folding (it joins the lines); read_request_head() looks at
// the raw bytes before Beast does and refuses it.
//
// Everything here runs on the calling session's thread; nothing is shared.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/session/wire/byte_stream.hpp"

namespace sandgate::session {

// A request head, read before its body is known (the body is read by the exchange).
using HeadParser = boost::beast::http::request_parser<boost::beast::http::empty_body>;

// The request head limit, the same on every request of a connection.
inline constexpr std::size_t kHttpHeadLimit = 16 * 1024;
// The most a client's bytes may fill of the buffer a front end reads its requests into: a head
// (kHttpHeadLimit), or a chunk line or trailer section of a body, with room for what follows.
// Beast 1.81 limits neither chunk extensions nor trailers: the buffer's maximum is that limit (a
// read fails with buffer_overflow instead of growing). Every front end that reads HTTP from a
// client (the proxy's, capture's, an inspected connection's) makes its buffer with it.
inline constexpr std::size_t kClientBufferLimit = kHttpHeadLimit + 1024;

struct HeadRead {
  enum class Status : std::uint8_t {
    ok,         // the head is in the parser; what followed it is still in the buffer
    closed,     // the client closed (or reset) the connection, or the drain closed it
    timeout,    // the head did not arrive in time; `partial` says whether any of it did
    too_large,  // over the limit
    malformed,  // not valid HTTP/1.1; `problem` says why
  };
  Status status = Status::ok;
  bool partial = false;
  std::string problem;
};

// Reads the next request head from `socket` into `parser` (which must be fresh, with its limits
// set), within `timeout`. Empty lines (CRLF) before the request line are skipped (RFC 9112
// section 2.2). Every line must end in CRLF (rules/http_lines.hpp: a bare CR or LF is
// malformed), and the raw head is checked for obsolete line folding before Beast parses it.
// The one reader of request heads: the explicit proxy, SOCKS5's first byte's fallback and the
// capture all read with it. Completes on
// the socket's executor; closing the socket cancels it.
boost::asio::awaitable<HeadRead> read_request_head(ByteStream& socket,
                                                   boost::beast::flat_buffer& buffer,
                                                   HeadParser& parser, std::chrono::seconds timeout,
                                                   std::size_t limit = kHttpHeadLimit);

// True when a raw head (request line, fields, the empty line) has a line that starts with a
// space or tab: obsolete line folding, or whitespace before the first field.
bool has_obsolete_fold(std::string_view raw_head);

// A sentence naming the request-smuggling shape of a parsed request head, or nothing.
std::optional<std::string> request_framing_problem(
    const boost::beast::http::request_header<>& head);

// True for `Upgrade: websocket` with `Connection: upgrade` on an HTTP/1.1 request.
bool is_websocket_upgrade(const boost::beast::http::request_header<>& head);

// Removes the hop-by-hop fields: Connection and every field it names (except the framing
// fields Content-Length and Transfer-Encoding, and Host, which no peer may strip), Keep-Alive,
// Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer, and Upgrade unless
// `keep_upgrade`. Transfer-Encoding stays: the serializer frames the body by it.
void strip_hop_by_hop(boost::beast::http::fields& fields, bool keep_upgrade);

// A head's fields, in order, to put back after its body was read. A parser inserts a chunked
// body's trailer fields into the head it read (beside any field of the same name: a second Host
// lands after the first); a head the gate sends after reading the body (a body it read ahead, an
// answer it held whole) is put back as it was, so that what goes out is what was decided on the
// head alone.
using FieldSnapshot = std::vector<std::pair<std::string, std::string>>;
FieldSnapshot snapshot_fields(const boost::beast::http::fields& fields);
void restore_fields(boost::beast::http::fields& fields, const FieldSnapshot& snapshot);

// Appends `1.1 sandgate` to the Via field (creating it).
void add_via(boost::beast::http::fields& fields);

// True when a comma-separated field value holds `token` (case-insensitive).
bool has_token(std::string_view list, std::string_view token);

}  // namespace sandgate::session
