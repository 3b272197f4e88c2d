// Heads between HTTP/2 and HTTP/1.1 (proxy/session/exchange/h2/http1_mapping.hpp): what crosses,
// what is left out, and what is refused rather than guessed at.
#include "proxy/session/exchange/h2/http1_mapping.hpp"

#include <gtest/gtest.h>

namespace sandgate::session::exchange::h2 {
namespace {

RequestHead h2_request(std::string method, FieldList fields,
                       std::optional<std::uint64_t> length = {}) {
  return RequestHead{std::move(method), "https", "api.example.test:8443", "/v1/items?x=1", {},
                     std::move(fields), length};
}

TEST(H2Http1Mapping, RequestHostFirstCookiesJoinedTeLeftOut) {
  const auto mapped = to_http1_request(h2_request("GET", {{"cookie", "a=1"},
                                                          {"accept", "*/*"},
                                                          {"cookie", "b=2"},
                                                          {"te", "trailers"},
                                                          {"cookie", "c=3"}}),
                                       false);
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->method, "GET");
  EXPECT_EQ(mapped->target, "/v1/items?x=1");
  EXPECT_EQ(mapped->fields, (FieldList{{"host", "api.example.test:8443"},
                                       {"cookie", "a=1; b=2; c=3"},
                                       {"accept", "*/*"}}));
  EXPECT_FALSE(mapped->chunked);
}

TEST(H2Http1Mapping, ABodyWithoutLengthGoesChunked) {
  const auto chunked = to_http1_request(h2_request("POST", {{"content-type", "x"}}), true);
  ASSERT_TRUE(chunked);
  EXPECT_TRUE(chunked->chunked);
  EXPECT_EQ(chunked->fields.back(), (Field{"transfer-encoding", "chunked"}));
  const auto sized = to_http1_request(h2_request("POST", {{"content-length", "5"}}, 5), true);
  ASSERT_TRUE(sized);
  EXPECT_FALSE(sized->chunked);
  EXPECT_EQ(find_field(sized->fields, "transfer-encoding"), nullptr);
  EXPECT_EQ(*find_field(sized->fields, "content-length"), "5");
}

TEST(H2Http1Mapping, RequestsThatDoNotCross) {
  RequestHead websocket = h2_request("CONNECT", {});
  websocket.protocol = "websocket";
  EXPECT_EQ(to_http1_request(websocket, true).error(), MappingProblem::extended_connect);
  EXPECT_EQ(to_http1_request(h2_request("CONNECT", {}), true).error(),
            MappingProblem::plain_connect);
}

TEST(H2Http1Mapping, ResponseFieldsLowercasedHopByHopOut) {
  const auto head = to_http2_response(200, {{"Content-Type", "text/html"},
                                            {"Connection", "keep-alive, X-Hop"},
                                            {"Keep-Alive", "timeout=5"},
                                            {"X-Hop", "gone"},
                                            {"Transfer-Encoding", "chunked"},
                                            {"Upgrade", "h2c"},
                                            {"Proxy-Connection", "close"},
                                            {"Set-Cookie", "a=1"},
                                            {"Set-Cookie", "b=2"},
                                            {"X-Padded", "  value\t"}});
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200U);
  EXPECT_EQ(head->fields, (FieldList{{"content-type", "text/html"},
                                     {"set-cookie", "a=1"},
                                     {"set-cookie", "b=2"},
                                     {"x-padded", "value"}}));
}

TEST(H2Http1Mapping, ResponseContentLength) {
  const auto once = to_http2_response(200, {{"Content-Length", "10"}, {"content-length", "10"}});
  ASSERT_TRUE(once);
  EXPECT_EQ(once->fields, (FieldList{{"content-length", "10"}}));
  EXPECT_EQ(once->content_length, 10U);
  EXPECT_EQ(to_http2_response(200, {{"Content-Length", "10"}, {"Content-Length", "11"}}).error(),
            MappingProblem::conflicting_length);
  EXPECT_EQ(to_http2_response(200, {{"Content-Length", "ten"}}).error(),
            MappingProblem::conflicting_length);
  // Beside Transfer-Encoding the length is not the body's.
  const auto chunked =
      to_http2_response(200, {{"Transfer-Encoding", "chunked"}, {"Content-Length", "10"}});
  ASSERT_TRUE(chunked);
  EXPECT_TRUE(chunked->fields.empty());
  EXPECT_FALSE(chunked->content_length);
  // 1xx and 204 have no body for HTTP/2 to frame; 304's length describes the resource.
  EXPECT_TRUE(to_http2_response(204, {{"Content-Length", "0"}})->fields.empty());
  EXPECT_TRUE(to_http2_response(103, {{"Content-Length", "0"}})->fields.empty());
  EXPECT_EQ(to_http2_response(304, {{"Content-Length", "7"}})->fields.size(), 1U);
}

TEST(H2Http1Mapping, ResponsesThatDoNotCross) {
  EXPECT_EQ(to_http2_response(101, {}).error(), MappingProblem::status_not_mappable);
  EXPECT_EQ(to_http2_response(99, {}).error(), MappingProblem::status_not_mappable);
  EXPECT_EQ(to_http2_response(600, {}).error(), MappingProblem::status_not_mappable);
  EXPECT_EQ(to_http2_response(200, {{"Bad Name", "x"}}).error(), MappingProblem::invalid_field);
  EXPECT_EQ(to_http2_response(200, {{"X", "a\r\nb"}}).error(), MappingProblem::invalid_field);
  EXPECT_EQ(to_http2_response(200, {{"X", std::string("a\0b", 3)}}).error(),
            MappingProblem::invalid_field);
}

TEST(H2Http1Mapping, AnHttp1RequestForAnHttp2Origin) {
  const auto head = to_http2_request("POST", "/upload",
                                     {{"Host", "origin.test"},
                                      {"Connection", "keep-alive, TE"},
                                      {"TE", "trailers, deflate"},
                                      {"Transfer-Encoding", "chunked"},
                                      {"Content-Type", "application/grpc"}},
                                     "https");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->method, "POST");
  EXPECT_EQ(head->scheme, "https");
  EXPECT_EQ(head->authority, "origin.test");
  EXPECT_EQ(head->path, "/upload");
  EXPECT_EQ(head->fields, (FieldList{{"content-type", "application/grpc"}, {"te", "trailers"}}));
  EXPECT_FALSE(head->content_length);

  EXPECT_EQ(to_http2_request("GET", "/", {}, "https").error(), MappingProblem::missing_host);
  EXPECT_EQ(to_http2_request("GET", "/", {{"Host", "a.test"}, {"Host", "b.test"}}, "https").error(),
            MappingProblem::missing_host);
  EXPECT_EQ(to_http2_request("GET", "/", {{"Host", "u@a.test"}}, "https").error(),
            MappingProblem::missing_host);
  EXPECT_EQ(to_http2_request("GET", "http://a.test/", {{"Host", "a.test"}}, "https").error(),
            MappingProblem::target_not_origin_form);
  EXPECT_EQ(to_http2_request("CONNECT", "a.test:443", {{"Host", "a.test:443"}}, "https").error(),
            MappingProblem::plain_connect);
}

// An HTTP/2 response head for an HTTP/1.1 client: the origin's length kept, chunks when it gave
// none, nothing added where no body can follow, a reason phrase only where one is usual.
TEST(H2Http1Mapping, AResponseHeadForAnHttp1ClientGetsFramingTheClientCanTrust) {
  const ResponseHead sized{200, {{"content-length", "5"}, {"x-a", "1"}}, 5};
  const auto kept = to_http1_response(sized, false, false, false);
  EXPECT_EQ(kept.text, "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: 1\r\n\r\n");
  EXPECT_FALSE(kept.chunked);
  const ResponseHead unsized{200, {{"content-type", "text/plain"}}, {}};
  const auto chunked = to_http1_response(unsized, false, false, false);
  EXPECT_EQ(chunked.text,
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n");
  EXPECT_TRUE(chunked.chunked);
  EXPECT_EQ(to_http1_response(unsized, false, false, true).text,
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 0\r\n\r\n");
  // To HEAD, 204 and 304: nothing added, no chunks.
  EXPECT_FALSE(to_http1_response(unsized, false, true, false).chunked);
  EXPECT_EQ(to_http1_response({204, {}, {}}, false, false, false).text,
            "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(to_http1_response({304, {}, {}}, false, false, false).text,
            "HTTP/1.1 304 Not Modified\r\n\r\n");
  // Interim heads as they are; a status without a usual phrase gets none.
  EXPECT_EQ(to_http1_response({103, {{"link", "</s>"}}, {}}, true, false, false).text,
            "HTTP/1.1 103 Early Hints\r\nlink: </s>\r\n\r\n");
  EXPECT_EQ(to_http1_response({299, {}, {}}, false, false, true).text,
            "HTTP/1.1 299 \r\ncontent-length: 0\r\n\r\n");
}

TEST(H2Http1Mapping, EveryProblemHasASentence) {
  for (int i = 0; i <= static_cast<int>(MappingProblem::status_not_mappable); ++i) {
    EXPECT_NE(describe(static_cast<MappingProblem>(i)), "an unknown mapping problem") << i;
  }
}

}  // namespace
}  // namespace sandgate::session::exchange::h2
