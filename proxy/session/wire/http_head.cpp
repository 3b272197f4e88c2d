// Plain-HTTP heads: reading, checking, rewriting. See http_head.hpp.
#include "proxy/session/wire/http_head.hpp"

#include <iterator>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <vector>

#include "proxy/asio/use_tuple.hpp"
#include "rules/ascii.hpp"
#include "rules/http_lines.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

std::string_view buffer_text(const beast::flat_buffer& buffer) {
  return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

}  // namespace

bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (beast::iequals(rules::trim_ows(list.substr(0, comma)), token)) {
      return true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    list.remove_prefix(comma + 1);
  }
  return false;
}

bool has_obsolete_fold(std::string_view raw_head) {
  // Every line but the request line starts after a '\n'; the empty line that ends the head
  // starts with '\r', so it never matches.
  for (std::size_t at = raw_head.find('\n');
       at != std::string_view::npos && at + 1 < raw_head.size(); at = raw_head.find('\n', at + 1)) {
    if (raw_head[at + 1] == ' ' || raw_head[at + 1] == '\t') {
      return true;
    }
  }
  return false;
}

asio::awaitable<HeadRead> read_request_head(ByteStream& socket, beast::flat_buffer& buffer,
                                            HeadParser& parser, std::chrono::seconds timeout,
                                            std::size_t limit) {
  HeadRead result;
  asio::steady_timer timer(socket.get_executor());
  timer.expires_after(timeout);
  for (;;) {
    // Empty lines before the request line are ignored (some clients send a CRLF after a body).
    std::string_view data = buffer_text(buffer);
    std::size_t blank = 0;
    while (data.size() >= blank + 2 && data[blank] == '\r' && data[blank + 1] == '\n') {
      blank += 2;
    }
    if (blank > 0) {
      buffer.consume(blank);
      data = buffer_text(buffer);
    }

    // The whole head first, so that the raw bytes can be checked before Beast joins folded
    // lines; Beast needs the whole head in one piece anyway. Its lines are the one rule's
    // (rules/http_lines.hpp): a bare CR or LF is refused as soon as it arrives.
    const rules::HeadScan scan = rules::scan_head(data, limit + 4);
    if (scan.status == rules::HeadScan::Status::malformed) {
      result.status = HeadRead::Status::malformed;
      result.problem = scan.problem;
      co_return result;
    }
    if (scan.status == rules::HeadScan::Status::complete) {
      const std::size_t head_size = scan.length;
      if (head_size > limit) {
        result.status = HeadRead::Status::too_large;
        co_return result;
      }
      if (has_obsolete_fold(data.substr(0, head_size))) {
        result.status = HeadRead::Status::malformed;
        result.problem =
            "a header line starts with whitespace (obsolete line folding is not accepted)";
        co_return result;
      }
      boost::system::error_code error;
      const std::size_t used = parser.put(asio::buffer(data.data(), head_size), error);
      if (error == http::error::header_limit) {
        result.status = HeadRead::Status::too_large;
        co_return result;
      }
      if (!error && !parser.is_header_done()) {
        error = http::error::partial_message;
      }
      if (error) {
        result.status = HeadRead::Status::malformed;
        result.problem = error.message();
        co_return result;
      }
      buffer.consume(used);
      co_return result;
    }
    if (data.size() >= limit || buffer.size() >= buffer.max_size()) {
      result.status = HeadRead::Status::too_large;
      co_return result;
    }

    // More bytes, within what is left of the time limit.
    const std::size_t room = std::min<std::size_t>(
        {std::size_t{4096}, buffer.max_size() - buffer.size(), limit + 4 - data.size()});
    auto outcome = co_await (socket.async_read_some(buffer.prepare(room), use_tuple) ||
                             timer.async_wait(use_tuple));
    if (outcome.index() == 1) {
      result.status = HeadRead::Status::timeout;
      result.partial = buffer.size() > 0;
      co_return result;
    }
    auto [error, n] = std::get<0>(outcome);
    if (error) {
      // End of stream, reset, or closed by the drain: nothing to answer.
      result.status = HeadRead::Status::closed;
      result.partial = buffer.size() > 0;
      co_return result;
    }
    buffer.commit(n);
  }
}

std::optional<std::string> request_framing_problem(const http::request_header<>& head) {
  std::size_t content_lengths = 0;
  std::size_t transfer_encodings = 0;
  std::size_t hosts = 0;
  for (const auto& field : head) {
    switch (field.name()) {
      case http::field::content_length:
        ++content_lengths;
        if (field.value().find(',') != std::string_view::npos) {
          return "the request's Content-Length is a list ('" + std::string(field.value()) +
                 "'); send exactly one length.";
        }
        break;
      case http::field::transfer_encoding: {
        ++transfer_encodings;
        const std::string_view coding = rules::trim_ows(field.value());
        if (!beast::iequals(coding, "chunked")) {
          return "the request's Transfer-Encoding is '" + std::string(field.value()) +
                 "'; only 'chunked' alone is accepted.";
        }
        break;
      }
      case http::field::host:
        ++hosts;
        break;
      default:
        break;
    }
  }
  if (content_lengths > 1) {
    return std::string("the request has more than one Content-Length field.");
  }
  if (transfer_encodings > 1) {
    return std::string("the request has more than one Transfer-Encoding field.");
  }
  if (transfer_encodings > 0 && content_lengths > 0) {
    return std::string("the request has both Transfer-Encoding and Content-Length.");
  }
  if (transfer_encodings > 0 && head.version() < 11) {
    return std::string("an HTTP/1.0 request cannot use Transfer-Encoding.");
  }
  if (hosts > 1) {
    return std::string("the request has more than one Host field.");
  }
  return std::nullopt;
}

bool is_websocket_upgrade(const http::request_header<>& head) {
  if (head.version() < 11) {
    return false;
  }
  bool upgrade = false;
  bool connection_upgrade = false;
  for (const auto& field : head) {
    if (field.name() == http::field::upgrade) {
      if (upgrade || !beast::iequals(rules::trim_ows(field.value()), "websocket")) {
        return false;  // one field, naming websocket alone
      }
      upgrade = true;
    } else if (field.name() == http::field::connection && has_token(field.value(), "upgrade")) {
      connection_upgrade = true;
    }
  }
  return upgrade && connection_upgrade;
}

FieldSnapshot snapshot_fields(const http::fields& fields) {
  FieldSnapshot snapshot;
  for (const auto& field : fields) {
    snapshot.emplace_back(field.name_string(), field.value());
  }
  return snapshot;
}

void restore_fields(http::fields& fields, const FieldSnapshot& snapshot) {
  if (static_cast<std::size_t>(std::distance(fields.begin(), fields.end())) == snapshot.size()) {
    return;  // no trailer came (the parser only ever adds fields)
  }
  for (auto at = fields.begin(); at != fields.end();) {
    at = fields.erase(at);
  }
  for (const auto& [name, value] : snapshot) {
    fields.insert(name, value);
  }
}

void strip_hop_by_hop(http::fields& fields, bool keep_upgrade) {
  // The fields Connection names are hop-by-hop too, but never the ones that frame the message
  // or say where it goes: stripping Content-Length while the body is still framed by it would
  // let the next hop read the body as a request of its own.
  std::vector<std::string> named;
  for (const auto& field : fields) {
    if (field.name() != http::field::connection) {
      continue;
    }
    std::string_view list = field.value();
    while (!list.empty()) {
      const std::size_t comma = list.find(',');
      const std::string_view token = rules::trim_ows(list.substr(0, comma));
      if (!token.empty() && !beast::iequals(token, "content-length") &&
          !beast::iequals(token, "transfer-encoding") && !beast::iequals(token, "host") &&
          !(keep_upgrade && beast::iequals(token, "upgrade"))) {
        named.emplace_back(token);
      }
      if (comma == std::string_view::npos) {
        break;
      }
      list.remove_prefix(comma + 1);
    }
  }
  for (const auto& name : named) {
    fields.erase(name);
  }
  for (const http::field name :
       {http::field::connection, http::field::proxy_connection, http::field::keep_alive,
        http::field::proxy_authorization, http::field::proxy_authenticate, http::field::te,
        http::field::trailer}) {
    fields.erase(name);
  }
  if (!keep_upgrade) {
    fields.erase(http::field::upgrade);
  }
}

void add_via(http::fields& fields) {
  std::string via;
  for (const auto& field : fields) {
    if (field.name() == http::field::via) {
      if (!via.empty()) {
        via += ", ";
      }
      via += field.value();
    }
  }
  if (!via.empty()) {
    via += ", ";
  }
  via += "1.1 sandgate";
  fields.set(http::field::via, via);
}

}  // namespace sandgate::session
