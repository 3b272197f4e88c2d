// RFC 9113 section 8's checks (proxy/session/exchange/h2/message_checks.hpp), table-driven: the
// pieces (tokens, names, values, authorities, paths, content-length), request and response heads
// read out of blocks, trailers, and what the owner submits.
#include "proxy/session/exchange/h2/message_checks.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandgate::session::exchange::h2 {
namespace {

struct Case {
  std::string text;
  bool valid;
};

TEST(H2MessageChecks, FieldNames) {
  for (const Case& c : std::vector<Case>{{"content-type", true},
                                         {"x-custom_1", true},
                                         {"!#$%&'*+-.^_`|~", true},
                                         {"", false},
                                         {"Content-Type", false},
                                         {"x y", false},
                                         {"x:y", false},
                                         {":path", false},
                                         {"x\"y", false},
                                         {"caf\xc3\xa9", false},
                                         {std::string("a\0b", 3), false}}) {
    EXPECT_EQ(is_field_name(c.text), c.valid) << c.text;
  }
}

TEST(H2MessageChecks, FieldValues) {
  for (const Case& c : std::vector<Case>{{"", true},
                                         {"text/html; charset=utf-8", true},
                                         {"a\tb", true},
                                         {"caf\xc3\xa9", true},
                                         {"a b", true},
                                         {" a", false},
                                         {"a ", false},
                                         {"\ta", false},
                                         {"a\r\nb", false},
                                         {"a\nb", false},
                                         {std::string("a\0b", 3), false},
                                         {"a\x01"
                                          "b",
                                          false},
                                         {"a\x7f", false}}) {
    EXPECT_EQ(is_field_value(c.text), c.valid) << c.text;
  }
}

TEST(H2MessageChecks, Authorities) {
  for (const Case& c : std::vector<Case>{{"example.test", true},
                                         {"example.test:443", true},
                                         {"EXAMPLE.test", true},
                                         {"127.0.0.1:8080", true},
                                         {"[::1]", true},
                                         {"[2001:db8::1]:443", true},
                                         {"a_b.test", true},
                                         {"example.test.", true},
                                         {"", false},
                                         {":443", false},
                                         {"example.test:", false},
                                         {"example.test:65536", false},
                                         {"example.test:123456", false},
                                         {"example.test:8a", false},
                                         {"user@example.test", false},
                                         {"user:pass@example.test", false},
                                         {"example.test/path", false},
                                         {"exa mple.test", false},
                                         {"ex%61mple.test", false},
                                         {"[::1", false},
                                         {"[]", false},
                                         {"[::1]x", false},
                                         {"[zz::1]", false},
                                         {"example.test:443:1", false}}) {
    EXPECT_EQ(is_authority(c.text), c.valid) << c.text;
  }
}

TEST(H2MessageChecks, RequestPaths) {
  for (const Case& c : std::vector<Case>{{"/", true},
                                         {"/a/b?c=d&e=%20f", true},
                                         {"/helloworld.Greeter/SayHello", true},
                                         {"/~user/{x}|y", true},
                                         {"", false},
                                         {"a/b", false},
                                         {"/a b", false},
                                         {"/a#frag", false},
                                         {"/caf\xc3\xa9", false},
                                         {"/a\r\nHost: evil", false},
                                         {"/a\tb", false},
                                         {"*", false},
                                         {"http://example.test/", false}}) {
    EXPECT_EQ(is_request_path(c.text, "GET"), c.valid) << c.text;
  }
  EXPECT_TRUE(is_request_path("*", "OPTIONS"));
}

TEST(H2MessageChecks, ContentLength) {
  EXPECT_EQ(parse_content_length("0"), 0U);
  EXPECT_EQ(parse_content_length("123"), 123U);
  EXPECT_EQ(parse_content_length("999999999999999999"), 999999999999999999ULL);
  for (const char* bad :
       {"", "-1", "+1", "1 ", " 1", "1,1", "0x10", "1e3", "9999999999999999999"}) {
    EXPECT_FALSE(parse_content_length(bad)) << bad;
  }
}

FieldList request(FieldList extra = {}) {
  FieldList block{
      {":method", "POST"}, {":scheme", "https"}, {":authority", "example.test"}, {":path", "/p"}};
  block.insert(block.end(), extra.begin(), extra.end());
  return block;
}

TEST(H2MessageChecks, ARequestHeadIsReadOut) {
  const auto head = read_request_head(
      request({{"content-length", "42"}, {"cookie", "a=1"}, {"cookie", "b=2"}}), {});
  ASSERT_TRUE(head);
  EXPECT_EQ(head->method, "POST");
  EXPECT_EQ(head->scheme, "https");
  EXPECT_EQ(head->authority, "example.test");
  EXPECT_EQ(head->path, "/p");
  EXPECT_EQ(head->content_length, 42U);
  EXPECT_EQ(head->fields,
            (FieldList{{"content-length", "42"}, {"cookie", "a=1"}, {"cookie", "b=2"}}));
}

struct RequestCase {
  const char* what;
  FieldList block;
  RequestRules rules;
  StreamProblem problem;
};

TEST(H2MessageChecks, RequestHeadsRefused) {
  const RequestRules https{};
  const RequestRules websocket{"https", true};
  const std::vector<RequestCase> cases{
      {"no method",
       {{":scheme", "https"}, {":authority", "a.test"}, {":path", "/"}},
       https,
       StreamProblem::missing_pseudo_header},
      {"no path",
       {{":method", "GET"}, {":scheme", "https"}, {":authority", "a.test"}},
       https,
       StreamProblem::missing_pseudo_header},
      {"no authority nor host",
       {{":method", "GET"}, {":scheme", "https"}, {":path", "/"}},
       https,
       StreamProblem::missing_pseudo_header},
      {"method not a token",
       {{":method", "G T"}, {":scheme", "https"}, {":authority", "a.test"}, {":path", "/"}},
       https,
       StreamProblem::invalid_pseudo_header},
      {"empty path",
       {{":method", "GET"}, {":scheme", "https"}, {":authority", "a.test"}, {":path", ""}},
       https,
       StreamProblem::invalid_pseudo_header},
      {"unknown pseudo", request({{":x", "1"}}), https, StreamProblem::forbidden_field},
      {"repeated path",
       [] {
         FieldList block = request();
         block.insert(block.begin() + 1, Field{":path", "/b"});
         return block;
       }(),
       https, StreamProblem::forbidden_field},
      {"pseudo after regular",
       [] {
         FieldList block = request({{"accept", "*/*"}});
         block.push_back({":path", "/again"});
         return block;
       }(),
       https, StreamProblem::forbidden_field},
      {"scheme",
       [] {
         FieldList block = request();
         block[1].value = "http";
         return block;
       }(),
       https, StreamProblem::scheme_mismatch},
      {"plain connect",
       {{":method", "CONNECT"}, {":authority", "a.test:443"}},
       https,
       StreamProblem::plain_connect},
      {"protocol not enabled",
       {{":method", "CONNECT"},
        {":protocol", "websocket"},
        {":scheme", "https"},
        {":authority", "a.test"},
        {":path", "/"}},
       https,
       StreamProblem::protocol_not_enabled},
      {"protocol on GET",
       {{":method", "GET"},
        {":protocol", "websocket"},
        {":scheme", "https"},
        {":authority", "a.test"},
        {":path", "/"}},
       websocket,
       StreamProblem::invalid_pseudo_header},
      {"host mismatch", request({{"host", "b.test"}}), https, StreamProblem::host_mismatch},
      {"two hosts", request({{"host", "example.test"}, {"host", "example.test"}}), https,
       StreamProblem::forbidden_field},
      {"userinfo",
       [] {
         FieldList block = request();
         block[2].value = "u@example.test";
         return block;
       }(),
       https, StreamProblem::authority_invalid},
      {"connection", request({{"connection", "close"}}), https, StreamProblem::forbidden_field},
      {"upgrade", request({{"upgrade", "h2c"}}), https, StreamProblem::forbidden_field},
      {"te gzip", request({{"te", "gzip"}}), https, StreamProblem::forbidden_field},
      {"te trailers, gzip", request({{"te", "trailers, gzip"}}), https,
       StreamProblem::forbidden_field},
      {"two lengths", request({{"content-length", "1"}, {"content-length", "1"}}), https,
       StreamProblem::forbidden_field},
      {"uppercase", request({{"Accept", "*/*"}}), https, StreamProblem::invalid_field_name},
      {"control in value", request({{"x", "a\x01"}}), https, StreamProblem::invalid_field_value},
  };
  for (const RequestCase& c : cases) {
    const auto head = read_request_head(c.block, c.rules);
    ASSERT_FALSE(head) << c.what;
    EXPECT_EQ(head.error(), c.problem) << c.what << ": " << describe(head.error());
  }
}

TEST(H2MessageChecks, TeTrailersAndHostAgreeingPass) {
  const auto head = read_request_head(
      request({{"te", "Trailers"}, {"host", "EXAMPLE.TEST"}, {"content-type", "application/grpc"}}),
      {});
  ASSERT_TRUE(head);
  EXPECT_EQ(head->fields, (FieldList{{"te", "Trailers"}, {"content-type", "application/grpc"}}));
}

TEST(H2MessageChecks, ExtendedConnect) {
  const auto head = read_request_head({{":method", "CONNECT"},
                                       {":protocol", "websocket"},
                                       {":scheme", "https"},
                                       {":authority", "a.test"},
                                       {":path", "/chat"}},
                                      {"https", true});
  ASSERT_TRUE(head);
  EXPECT_TRUE(head->extended_connect());
  EXPECT_EQ(head->protocol, "websocket");
}

TEST(H2MessageChecks, ResponseHeads) {
  const auto head = read_response_head({{":status", "206"}, {"content-length", "10"}});
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 206U);
  EXPECT_EQ(head->content_length, 10U);
  EXPECT_EQ(head->fields, (FieldList{{"content-length", "10"}}));
  EXPECT_TRUE(read_response_head({{":status", "100"}}));
  EXPECT_TRUE(read_response_head({{":status", "599"}}));
  const std::vector<std::pair<FieldList, StreamProblem>> refused{
      {{{"content-type", "x"}}, StreamProblem::missing_pseudo_header},
      {{{":status", "101"}}, StreamProblem::invalid_pseudo_header},
      {{{":status", "600"}}, StreamProblem::invalid_pseudo_header},
      {{{":status", "099"}}, StreamProblem::invalid_pseudo_header},
      {{{":status", "2000"}}, StreamProblem::invalid_pseudo_header},
      {{{":status", "20a"}}, StreamProblem::invalid_pseudo_header},
      {{{":status", "200"}, {":status", "200"}}, StreamProblem::forbidden_field},
      {{{":status", "200"}, {":path", "/"}}, StreamProblem::forbidden_field},
      {{{":status", "200"}, {"transfer-encoding", "chunked"}}, StreamProblem::forbidden_field},
      {{{":status", "200"}, {"x", "a\r\nb"}}, StreamProblem::invalid_field_value},
  };
  for (const auto& [block, problem] : refused) {
    const auto read = read_response_head(block);
    ASSERT_FALSE(read) << block.back().name << "=" << block.back().value;
    EXPECT_EQ(read.error(), problem) << block.back().name << "=" << block.back().value;
  }
}

TEST(H2MessageChecks, Trailers) {
  EXPECT_EQ(check_trailers({{"grpc-status", "0"}, {"grpc-message", "OK"}}), StreamProblem::none);
  for (const char* name : {"content-length", "host", "te", "trailer", "authorization",
                           "proxy-authorization", "cookie", "connection", "transfer-encoding"}) {
    EXPECT_EQ(check_trailers({{name, "x"}}), StreamProblem::trailers_invalid) << name;
  }
  EXPECT_EQ(check_trailers({{":status", "200"}}), StreamProblem::trailers_invalid);
  EXPECT_EQ(check_trailers({{"X-Upper", "1"}}), StreamProblem::invalid_field_name);
  EXPECT_EQ(check_trailers({{"x", "a\nb"}}), StreamProblem::invalid_field_value);
}

TEST(H2MessageChecks, WhatTheOwnerSubmits) {
  const RequestHead get{"GET", "https", "origin.test", "/", {}, {{"accept", "*/*"}}, {}};
  EXPECT_EQ(check_outgoing_request(get), SubmitError::none);
  RequestHead bad = get;
  bad.scheme = "ftp";
  EXPECT_EQ(check_outgoing_request(bad), SubmitError::invalid_head);
  bad = get;
  bad.fields.push_back({"keep-alive", "1"});
  EXPECT_EQ(check_outgoing_request(bad), SubmitError::invalid_head);
  bad = get;
  bad.path = "/a b";
  EXPECT_EQ(check_outgoing_request(bad), SubmitError::invalid_head);

  EXPECT_EQ(check_outgoing_response({200, {{"content-type", "x"}}, {}}, false), SubmitError::none);
  EXPECT_EQ(check_outgoing_response({103, {}, {}}, true), SubmitError::none);
  EXPECT_EQ(check_outgoing_response({101, {}, {}}, true), SubmitError::invalid_head);
  EXPECT_EQ(check_outgoing_response({200, {}, {}}, true), SubmitError::invalid_head);
  EXPECT_EQ(check_outgoing_response({100, {}, {}}, false), SubmitError::invalid_head);
  EXPECT_EQ(
      check_outgoing_response({200, {{"content-length", "1"}, {"content-length", "2"}}, {}}, false),
      SubmitError::invalid_head);
  EXPECT_EQ(check_outgoing_trailers({{"grpc-status", "0"}}), SubmitError::none);
  EXPECT_EQ(check_outgoing_trailers({{"cookie", "x"}}), SubmitError::invalid_head);
}

}  // namespace
}  // namespace sandgate::session::exchange::h2

namespace sandgate::session::exchange::h2 {
namespace {

TEST(H2Problems, EveryValueHasASentenceAndEveryConnectionErrorACode) {
  for (int i = 0; i <= static_cast<int>(StreamProblem::stream_flow_control); ++i) {
    EXPECT_NE(describe(static_cast<StreamProblem>(i)), "an unknown stream problem") << i;
  }
  for (int i = 0; i <= static_cast<int>(SubmitError::connection_ended); ++i) {
    EXPECT_NE(describe(static_cast<SubmitError>(i)), "an unknown submit error") << i;
  }
  for (int i = 0; i <= static_cast<int>(ConnectionError::internal); ++i) {
    const auto error = static_cast<ConnectionError>(i);
    EXPECT_NE(describe(error), "an unknown connection error") << i;
    EXPECT_EQ(goaway_code_for(error) == ErrorCode::no_error, error == ConnectionError::none) << i;
  }
  for (std::uint32_t code = 0; code <= 0xd; ++code) {
    EXPECT_NE(describe(static_cast<ErrorCode>(code)), "an unknown HTTP/2 error code") << code;
  }
}

}  // namespace
}  // namespace sandgate::session::exchange::h2
