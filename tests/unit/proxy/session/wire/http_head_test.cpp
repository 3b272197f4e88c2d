// A head put back after its body was read (proxy/session/wire/http_head.hpp): Beast's parser
// inserts a chunked body's trailer fields into the head it read, a second Host beside the first;
// restore_fields leaves the head as it was before the body, in its order.
#include "proxy/session/wire/http_head.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>

namespace sandgate::session {
namespace {

namespace http = boost::beast::http;

// Feeds `bytes` to the parser as a socket would, as far as it takes them.
void feed(http::request_parser<http::string_body>& parser, std::string_view bytes) {
  boost::system::error_code error;
  while (!bytes.empty() && !parser.is_done()) {
    const std::size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), error);
    ASSERT_FALSE(error) << error.message();
    ASSERT_GT(used, 0u);
    bytes.remove_prefix(used);
  }
}

std::string fields_text(const http::fields& fields) {
  std::string out;
  for (const auto& field : fields) {
    out += std::string(field.name_string()) + ": " + std::string(field.value()) + "\n";
  }
  return out;
}

TEST(RestoreFields, ATrailerAddedToTheHeadIsRemovedAndTheOrderKept) {
  const std::string head =
      "POST /mcp HTTP/1.1\r\nHost: mcp.example.com\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\nVia: 1.1 sandgate\r\n\r\n";
  const std::string body = "2\r\n{}\r\n0\r\nHost: other.example.com\r\nX-Smuggled: yes\r\n\r\n";
  http::request_parser<http::string_body> parser;
  parser.eager(false);
  feed(parser, head);
  ASSERT_TRUE(parser.is_header_done());
  const FieldSnapshot before = snapshot_fields(parser.get());
  const std::string as_decided = fields_text(parser.get());
  parser.eager(true);
  feed(parser, body);
  ASSERT_TRUE(parser.is_done());
  // The parser took the trailer into the head, the second Host beside the first.
  ASSERT_EQ(parser.get().count(http::field::host), 2u) << fields_text(parser.get());
  restore_fields(parser.get(), before);
  EXPECT_EQ(fields_text(parser.get()), as_decided);
  EXPECT_EQ(parser.get().body(), "{}");
  // Without a trailer, nothing changes.
  http::fields plain;
  plain.insert(http::field::host, "a");
  restore_fields(plain, snapshot_fields(plain));
  EXPECT_EQ(fields_text(plain), "Host: a\n");
}

}  // namespace
}  // namespace sandgate::session
