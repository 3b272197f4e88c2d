// Fuzz target: the proxy's request-head path, on arbitrary bytes from a client.
//
// What it runs, as proxy/session/fronts/client_session.cpp and http_forward.cpp do:
//   1. session::read_request_head() itself, reading from a real socket (one end of a socketpair,
//      the input written to the other end in chunks, each taken by its own read) into a
//      request_parser<empty_body> with a 16 KiB head limit and a 17 KiB buffer, as serve_client()
//      sets them up;
//   2. for comparison, Beast's own http::read_header() on the same parser settings, from a stream
//      that hands the input out in chunks of 1 to 13 bytes, and once more all at once;
//   3. on the head read (the proxy's, or Beast's where the proxy refused it, so that the checks
//      below also see heads the proxy would refuse for their shape alone): for CONNECT,
//      rules::parse_authority() on the target and read_client_hello() on the bytes that came
//      after the head; otherwise parse_http_target(), request_framing_problem(),
//      is_websocket_upgrade(), and the head rewritten for the origin: strip_hop_by_hop(), target
//      and Host from the URL, add_via();
//   4. that rewritten head serialised as the proxy sends it, and parsed again.
// Invariants, beyond "no crash, no out-of-bounds access, no undefined behaviour":
//   - read_request_head() ends (never by its timeout here, the stream being closed at the end);
//     when it reads a head, the head is the input's first `\r\n\r\n`-terminated block after any
//     empty lines, within the limit, without obsolete line folding, and what stays in the
//     buffer is exactly the bytes that followed it (nothing lost or reordered for the tunnel);
//   - it agrees with Beast (for input not starting with an empty line): a head it reads, Beast
//     reads the same; a head Beast reads without folding, it reads too;
//   - chunking does not matter to Beast: both reads fail, or both give the same head;
//   - a parsed head holds no CR, LF or NUL in any field value and no control byte or space in
//     the target (anything else could split one request into two on the way upstream);
//   - a CONNECT target or http:// URL that parses yields a host in normal form (see
//     host_invariants.hpp); a URL's authority and origin-form, put back together, parse to the
//     same destination;
//   - after rewriting, no hop-by-hop field is left (Connection and what it names, Keep-Alive,
//     Proxy-*, TE, Trailer, Upgrade but for a WebSocket upgrade), the framing fields are
//     untouched, Host is the URL's authority, and Via ends in "1.1 sandgate";
//   - the serialised head is exactly one well-formed head that parses back to the same start
//     line and fields, with no byte left over.
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/asio/use_tuple.hpp"
#include "proxy/session/wire/http_head.hpp"
#include "proxy/session/wire/http_target.hpp"
#include "rules/host.hpp"
#include "rules/tls_client_hello.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/host_invariants.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace rules = sandgate::rules;
namespace session = sandgate::session;
using sandgate::fuzz::escaped;

// As in client_session.cpp: the head limit, and the read buffer a little larger.
constexpr std::size_t kHeadLimit = 16 * 1024;
constexpr std::size_t kBufferLimit = kHeadLimit + 1024;

// ---- The proxy's reader, session::read_request_head(), over a real socket ----

struct ProxyRead {
  bool finished = false;
  session::HeadRead result;
  std::string left;  // the buffer afterwards: what was read past the head
};

// Writes `input` into `peer` `chunk` bytes at a time, then ends the stream. Between chunks the
// coroutine yields twice, so the reactor sees the bytes and the reader's pending read takes them:
// each read returns one chunk. Stops early once the reader has closed its end.
asio::awaitable<void> feed(asio::local::stream_protocol::socket peer, std::string_view input,
                           std::size_t chunk) {
  const auto executor = co_await asio::this_coro::executor;
  while (!input.empty()) {
    const std::size_t n = std::min(chunk, input.size());
    auto [error, written] =
        co_await asio::async_write(peer, asio::buffer(input.data(), n), sandgate::use_tuple);
    if (error) {
      co_return;
    }
    input.remove_prefix(written);
    co_await asio::post(executor, asio::use_awaitable);
    co_await asio::post(executor, asio::use_awaitable);
  }
  boost::system::error_code ignored;
  peer.shutdown(asio::socket_base::shutdown_send, ignored);
}

// As serve_client() does: read the head into `parser` with a 17 KiB buffer and a 16 KiB limit.
// `parser` and `out` belong to the caller, which runs the io_context until this is done.
asio::awaitable<void> read_as_proxy(asio::ip::tcp::socket socket, session::HeadParser* parser,
                                    ProxyRead* out) {
  beast::flat_buffer buffer(kBufferLimit);
  session::ByteStream stream(socket);
  out->result = co_await session::read_request_head(stream, buffer, *parser,
                                                    std::chrono::seconds(60), kHeadLimit);
  out->left.assign(static_cast<const char*>(buffer.data().data()), buffer.size());
  out->finished = true;
  boost::system::error_code ignored;
  socket.close(ignored);
}

void rethrow(const std::exception_ptr& error) {
  if (error) {
    std::rethrow_exception(error);
  }
}

ProxyRead read_with_proxy_code(std::string_view input, std::size_t chunk,
                               session::HeadParser& parser) {
  static asio::io_context io;  // one per process; each input runs it to completion
  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, "socketpair failed");
  // read_request_head() takes a tcp::socket; any stream descriptor serves for reading.
  asio::ip::tcp::socket client(io);
  client.assign(asio::ip::tcp::v4(), fds[0]);
  asio::local::stream_protocol::socket peer(io, asio::local::stream_protocol(), fds[1]);
  parser.header_limit(kHeadLimit);
  parser.body_limit(boost::none);
  ProxyRead out;
  asio::co_spawn(io, feed(std::move(peer), input, chunk), rethrow);
  asio::co_spawn(io, read_as_proxy(std::move(client), &parser, &out), rethrow);
  io.restart();
  io.run();
  return out;
}

std::string_view status_name(session::HeadRead::Status status) {
  switch (status) {
    case session::HeadRead::Status::ok:
      return "ok";
    case session::HeadRead::Status::closed:
      return "closed";
    case session::HeadRead::Status::timeout:
      return "timeout";
    case session::HeadRead::Status::too_large:
      return "too_large";
    case session::HeadRead::Status::malformed:
      return "malformed";
  }
  return "out-of-range";
}

// ---- Beast's reader, for comparison ----

// A SyncReadStream over fixed bytes that returns at most `chunk` bytes per read_some(), then
// end of stream: a client's bytes as a socket delivers them.
class ChunkedStream {
 public:
  ChunkedStream(std::string_view data, std::size_t chunk) : data_(data), chunk_(chunk) {}

  template <typename MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
    if (data_.empty()) {
      ec = asio::error::eof;
      return 0;
    }
    ec = {};
    const std::size_t n =
        asio::buffer_copy(buffers, asio::buffer(data_.data(), std::min(chunk_, data_.size())));
    data_.remove_prefix(n);
    return n;
  }

  template <typename MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers) {
    boost::system::error_code ec;
    const std::size_t n = read_some(buffers, ec);
    if (ec) {
      throw boost::system::system_error(ec);
    }
    return n;
  }

 private:
  std::string_view data_;
  std::size_t chunk_;
};

using Fields = std::vector<std::pair<std::string, std::string>>;

Fields fields_of(const http::fields& fields) {
  Fields out;
  for (const auto& field : fields) {
    out.emplace_back(field.name_string(), field.value());
  }
  return out;
}

std::string show(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    out += "[" + escaped(name) + ": " + escaped(value) + "]";
  }
  return out;
}

struct HeadOutcome {
  boost::system::error_code error;
  std::string start_line;  // method, target, version
  Fields fields;
  std::string rest;  // what was read past the head: for CONNECT, the tunnel's first bytes
};

HeadOutcome read_head(std::string_view input, std::size_t chunk,
                      http::request_parser<http::empty_body>& parser) {
  parser.header_limit(kHeadLimit);
  beast::flat_buffer buffer(kBufferLimit);
  ChunkedStream stream(input, chunk);
  HeadOutcome outcome;
  http::read_header(stream, buffer, parser, outcome.error);
  if (!outcome.error) {
    FUZZ_CHECK(parser.is_header_done(), "read_header succeeded without a whole head");
    const auto& head = parser.get();
    outcome.start_line = std::string(head.method_string()) + " " + std::string(head.target()) +
                         " " + std::to_string(head.version());
    outcome.fields = fields_of(head);
    outcome.rest.assign(static_cast<const char*>(buffer.data().data()), buffer.size());
  }
  return outcome;
}

void check_parsed_head(const http::request_header<>& head) {
  for (const char c : head.target()) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_CHECK(byte > 0x20 && byte != 0x7f,
               "control byte or space in target '" + escaped(head.target()) + "'");
  }
  FUZZ_CHECK(!head.method_string().empty(), "empty method");
  for (const auto& field : head) {
    const auto where = [&] {
      return "field '" + escaped(field.name_string()) + ": " + escaped(field.value()) + "'";
    };
    FUZZ_CHECK(!field.name_string().empty(), where());
    for (const char c : field.name_string()) {
      const auto byte = static_cast<unsigned char>(c);
      FUZZ_CHECK(byte > 0x20 && byte < 0x7f && c != ':', "non-token name in " + where());
    }
    for (const char c : field.value()) {
      FUZZ_CHECK(c != '\r' && c != '\n' && c != '\0', "CR, LF or NUL in value of " + where());
    }
  }
}

// As http_forward.cpp's set_host_first(): Host first, then the other fields in their order.
void set_host_first(http::fields& fields, std::string_view authority) {
  fields.erase(http::field::host);
  const Fields rest = fields_of(fields);
  fields.clear();
  fields.insert(http::field::host, authority);
  for (const auto& [name, value] : rest) {
    fields.insert(name, value);
  }
}

void check_connect(const http::request_header<>& head, std::string_view tunnel_bytes) {
  const std::string_view target = head.target();
  if (const auto authority = rules::parse_authority(target)) {
    sandgate::fuzz::check_host_normal_form(authority->host, target);
    FUZZ_CHECK(authority->port != 0, "port 0 from '" + escaped(target) + "'");
    // As open_tunnel.cpp does on a TLS port: the bytes already read after the head are the
    // start of the client's ClientHello.
    const rules::ClientHello hello = rules::read_client_hello(tunnel_bytes);
    FUZZ_CHECK(hello.status == rules::ClientHello::Status::tls || hello.server_name.empty(),
               "a server name without a ClientHello");
  }
}

void check_forward(const http::request_header<>& parsed) {
  const std::string_view raw_target = parsed.target();
  const bool options = parsed.method() == http::verb::options;
  const auto target = session::parse_http_target(raw_target, options);
  if (!target) {
    FUZZ_CHECK(!session::target_error_code(target.error()).empty(), escaped(raw_target));
    (void)session::target_error_text(target.error(), raw_target);
    return;
  }
  const auto where = [&] { return "target '" + escaped(raw_target) + "'"; };
  sandgate::fuzz::check_host_normal_form(target->host, raw_target);
  FUZZ_CHECK(target->port != 0, where());
  const std::string expected_authority =
      target->host.display() + (target->port == 80 ? "" : ":" + std::to_string(target->port));
  FUZZ_CHECK(target->authority == expected_authority,
             "authority '" + escaped(target->authority) + "' for " + where());
  const std::string& origin_form = target->origin_form;
  FUZZ_CHECK(origin_form.starts_with('/') || (options && origin_form == "*"),
             "origin-form '" + escaped(origin_form) + "' for " + where());
  FUZZ_CHECK(origin_form.find('#') == std::string::npos, where());

  // The destination the origin is told about reads back as the same destination.
  const std::string rebuilt =
      "http://" + target->authority + (origin_form == "*" ? "" : origin_form);
  const auto again = session::parse_http_target(rebuilt, options);
  FUZZ_CHECK(again.has_value() && again->host == target->host && again->port == target->port &&
                 again->origin_form == origin_form,
             "rebuilt URL '" + escaped(rebuilt) + "' differs for " + where());

  (void)session::request_framing_problem(parsed);
  const bool websocket = session::is_websocket_upgrade(parsed);

  // The head as the origin gets it (http_forward.cpp, step 5).
  http::request_header<> head = parsed;
  std::vector<std::string> named;  // what Connection names, lower-cased
  for (const auto& field : parsed) {
    if (field.name() == http::field::connection) {
      std::string_view list = field.value();
      while (!list.empty()) {
        const std::size_t comma = list.find(',');
        std::string_view token = list.substr(0, comma);
        while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) {
          token.remove_prefix(1);
        }
        while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) {
          token.remove_suffix(1);
        }
        if (!token.empty()) {
          named.emplace_back(token);
        }
        list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
      }
    }
  }
  const std::size_t content_lengths = parsed.count(http::field::content_length);
  const std::size_t transfer_encodings = parsed.count(http::field::transfer_encoding);
  session::strip_hop_by_hop(head, websocket);
  if (websocket) {
    head.set(http::field::connection, "Upgrade");
  }
  head.target(origin_form);
  head.version(11);
  set_host_first(head, target->authority);
  session::add_via(head);

  const auto after = [&] { return show(fields_of(head)); };
  for (const http::field hop :
       {http::field::proxy_connection, http::field::keep_alive, http::field::proxy_authorization,
        http::field::proxy_authenticate, http::field::te, http::field::trailer}) {
    FUZZ_CHECK(head.count(hop) == 0,
               "hop-by-hop field '" + std::string(http::to_string(hop)) + "' kept: " + after());
  }
  FUZZ_CHECK(head.count(http::field::connection) == (websocket ? 1u : 0u), after());
  FUZZ_CHECK(websocket || head.count(http::field::upgrade) == 0, "Upgrade kept: " + after());
  for (const std::string& name : named) {
    // Never stripped: the framing fields and Host. Re-added after stripping: Via.
    const bool framing = beast::iequals(name, "content-length") ||
                         beast::iequals(name, "transfer-encoding") ||
                         beast::iequals(name, "host") || beast::iequals(name, "via");
    const bool kept_upgrade =
        websocket && (beast::iequals(name, "upgrade") || beast::iequals(name, "connection"));
    if (!framing && !kept_upgrade) {
      FUZZ_CHECK(head.count(name) == 0,
                 "field '" + escaped(name) + "' named by Connection kept: " + after());
    }
  }
  FUZZ_CHECK(head.count(http::field::content_length) == content_lengths &&
                 head.count(http::field::transfer_encoding) == transfer_encodings,
             "framing fields changed: " + after());
  FUZZ_CHECK(head.count(http::field::host) == 1 && head[http::field::host] == target->authority,
             "Host is not the URL's authority: " + after());
  FUZZ_CHECK(head.count(http::field::via) == 1 && head[http::field::via].ends_with("1.1 sandgate"),
             "Via: " + after());

  // Serialised as the proxy writes it, the head is one head that reads back unchanged.
  std::ostringstream out;
  out << head;
  const std::string wire = out.str();
  http::request_parser<http::empty_body> reparser;
  reparser.header_limit(kHeadLimit * 2);
  reparser.eager(false);
  boost::system::error_code error;
  const std::size_t used = reparser.put(asio::buffer(wire), error);
  FUZZ_CHECK(!error && reparser.is_header_done() && used == wire.size(),
             "rewritten head '" + escaped(wire) + "' does not parse as one head: " +
                 error.message() + ", used " + std::to_string(used));
  const auto& back = reparser.get();
  FUZZ_CHECK(back.method_string() == head.method_string() && back.target() == head.target() &&
                 back.version() == 11,
             "start line changed in '" + escaped(wire) + "'");
  FUZZ_CHECK(fields_of(back) == fields_of(head),
             "fields changed: sent " + after() + " read " + show(fields_of(back)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 2 * kBufferLimit) {
    return 0;  // the limits end every read before this; longer inputs only cost time
  }
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // 1. The proxy's reader, the input arriving in up to about 16 chunks.
  session::HeadParser proxy_parser;
  const ProxyRead proxy =
      read_with_proxy_code(input, std::max<std::size_t>(1 + size % 61, size / 16), proxy_parser);
  const auto proxy_where = [&] {
    return "read_request_head: " + std::string(status_name(proxy.result.status)) + " '" +
           escaped(proxy.result.problem) + "' on '" + escaped(input) + "'";
  };
  FUZZ_CHECK(proxy.finished && proxy.result.status != session::HeadRead::Status::timeout,
             proxy_where());
  FUZZ_CHECK(status_name(proxy.result.status) != "out-of-range", proxy_where());
  std::string_view after_blank = input;  // the empty lines before the request line are skipped
  while (after_blank.starts_with("\r\n")) {
    after_blank.remove_prefix(2);
  }
  const std::size_t head_end = after_blank.find("\r\n\r\n");
  const std::string_view raw_head =
      after_blank.substr(0, head_end == std::string_view::npos ? head_end : head_end + 4);
  const bool proxy_ok = proxy.result.status == session::HeadRead::Status::ok;
  if (proxy_ok) {
    FUZZ_CHECK(proxy_parser.is_header_done() && head_end != std::string_view::npos &&
                   raw_head.size() <= kHeadLimit && !session::has_obsolete_fold(raw_head),
               proxy_where());
    FUZZ_CHECK(after_blank.substr(raw_head.size()).starts_with(proxy.left),
               "the bytes after the head are not what followed it ('" + escaped(proxy.left) +
                   "'): " + proxy_where());
  }

  // 2. Beast's reader, in chunks of 1 to 13 bytes and all at once.
  http::request_parser<http::empty_body> chunked_parser;
  const HeadOutcome chunked = read_head(input, 1 + size % 13, chunked_parser);
  http::request_parser<http::empty_body> whole_parser;
  const HeadOutcome whole = read_head(input, size + 1, whole_parser);
  // The error itself may differ: Beast checks the start line as soon as it has it in one piece,
  // but once it has asked for more it waits for the end of the head (or of the stream) first.
  FUZZ_CHECK(!chunked.error == !whole.error && chunked.start_line == whole.start_line &&
                 chunked.fields == whole.fields,
             "chunked read: '" + chunked.error.message() + "' " + escaped(chunked.start_line) +
                 show(chunked.fields) + "; whole read: '" + whole.error.message() + "' " +
                 escaped(whole.start_line) + show(whole.fields));
  if (!input.starts_with('\r') && !input.starts_with('\n')) {
    if (proxy_ok) {
      const auto& head = proxy_parser.get();
      const std::string start_line = std::string(head.method_string()) + " " +
                                     std::string(head.target()) + " " +
                                     std::to_string(head.version());
      FUZZ_CHECK(!whole.error && whole.start_line == start_line && whole.fields == fields_of(head),
                 "Beast reads '" + whole.error.message() + "' " + escaped(whole.start_line) +
                     show(whole.fields) + ", the proxy " + escaped(start_line) +
                     show(fields_of(head)));
    } else if (!whole.error) {
      FUZZ_CHECK(head_end != std::string_view::npos, "Beast read a head without an end");
      FUZZ_CHECK(session::has_obsolete_fold(raw_head),
                 "Beast reads a head without folding that the proxy refuses: " + proxy_where());
    }
  }

  // 3. What the handlers do with the head.
  const http::request_header<>* head = nullptr;
  std::string_view rest;
  if (proxy_ok) {
    head = &proxy_parser.get();
    rest = proxy.left;
  } else if (!chunked.error) {
    head = &chunked_parser.get();
    rest = chunked.rest;
  } else {
    return 0;
  }
  check_parsed_head(*head);
  (void)session::has_token((*head)[http::field::connection], "close");
  if (head->method() == http::verb::connect) {
    check_connect(*head, rest);
  } else {
    check_forward(*head);
  }
  return 0;
}
