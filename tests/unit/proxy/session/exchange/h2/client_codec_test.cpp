// ClientCodec (proxy/session/exchange/h2/client_codec.hpp) against a real nghttp2 server in the
// same process, byte for byte: requests and responses, 1xx interim heads, trailers both ways,
// bodies under flow control, resets, the origin's concurrency limit, GOAWAY and which streams may
// be retried, ping, extended CONNECT, and responses RFC 9113 section 8 calls malformed.
#include "proxy/session/exchange/h2/client_codec.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/proxy/session/exchange/h2/h2_test_support.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

using testing::ClientPair;
using testing::Nghttp2Peer;

RequestHead get(std::string path, FieldList fields = {}) {
  return RequestHead{"GET", "https", "origin.test", std::move(path), {}, std::move(fields), {}};
}
RequestHead post(std::string path, FieldList fields = {}) {
  return RequestHead{"POST", "https", "origin.test", std::move(path), {}, std::move(fields), {}};
}
FieldList status(std::string code, FieldList fields = {}) {
  FieldList block{{":status", std::move(code)}};
  block.insert(block.end(), fields.begin(), fields.end());
  return block;
}
std::string field(const FieldList& fields, std::string_view name) {
  const std::string* value = find_field(fields, name);
  return value ? *value : std::string("<none>");
}

TEST(H2ClientCodec, ARequestAndItsResponse) {
  ClientPair pair;
  pair.relay();
  ASSERT_EQ(pair.all<PeerSettingsEvent>().size(), 1U);
  const auto id = pair.codec.submit_request(get("/a?b=c", {{"accept", "*/*"}}), true);
  ASSERT_TRUE(id);
  pair.relay();
  const auto& seen = pair.server().streams[*id];
  ASSERT_EQ(seen.heads.size(), 1U);
  EXPECT_EQ(seen.heads[0], (FieldList{{":method", "GET"},
                                      {":scheme", "https"},
                                      {":authority", "origin.test"},
                                      {":path", "/a?b=c"},
                                      {"accept", "*/*"}}));
  EXPECT_TRUE(seen.ended);

  pair.server().submit_response(*id, status("200", {{"content-type", "text/plain"}}), "hi there");
  pair.relay();
  const auto heads = pair.all<ResponseHeadEvent>();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_EQ(heads[0].head.status, 200U);
  EXPECT_EQ(heads[0].head.fields, (FieldList{{"content-type", "text/plain"}}));
  EXPECT_EQ(pair.body(*id), "hi there");
  ASSERT_EQ(pair.all<EndEvent>().size(), 1U);
  ASSERT_NE(pair.closed(*id), nullptr);
  EXPECT_EQ(pair.closed(*id)->by, Closer::finished);
  EXPECT_EQ(pair.codec.open_streams(), 0U);
}

TEST(H2ClientCodec, InterimHeadsComeBeforeTheFinalOne) {
  ClientPair pair;
  pair.relay();
  const auto id = pair.codec.submit_request(get("/"), true);
  pair.relay();
  pair.server().submit_headers(*id, status("103", {{"link", "</a.css>; rel=preload"}}), false);
  pair.server().submit_headers(*id, status("100"), false);
  pair.server().submit_response(*id, status("204"));
  pair.relay();
  const auto interim = pair.all<InterimHeadEvent>();
  ASSERT_EQ(interim.size(), 2U);
  EXPECT_EQ(interim[0].head.status, 103U);
  EXPECT_EQ(field(interim[0].head.fields, "link"), "</a.css>; rel=preload");
  EXPECT_EQ(interim[1].head.status, 100U);
  const auto final_head = pair.all<ResponseHeadEvent>();
  ASSERT_EQ(final_head.size(), 1U);
  EXPECT_EQ(final_head[0].head.status, 204U);
  EXPECT_TRUE(final_head[0].end_stream);
}

TEST(H2ClientCodec, GrpcTrailersBothWays) {
  ClientPair pair;
  pair.relay();
  const auto id = pair.codec.submit_request(
      post("/helloworld.Greeter/SayHello",
           {{"content-type", "application/grpc"}, {"te", "trailers"}, {"grpc-timeout", "1S"}}),
      false);
  ASSERT_TRUE(id);
  ASSERT_TRUE(pair.codec.send_data(*id, std::string("\0\0\0\0\x02\x08\x01", 7)));
  ASSERT_EQ(pair.codec.submit_trailers(*id, {{"x-client-trailer", "1"}}), SubmitError::none);
  pair.relay();
  const auto& seen = pair.server().streams[*id];
  EXPECT_EQ(field(seen.heads.at(0), "te"), "trailers");
  EXPECT_EQ(seen.body.size(), 7U);
  EXPECT_EQ(seen.trailers, (FieldList{{"x-client-trailer", "1"}}));
  EXPECT_TRUE(seen.ended);

  pair.server().submit_response(*id, status("200", {{"content-type", "application/grpc"}}),
                                std::string("\0\0\0\0\x02\x08\x02", 7),
                                {{"grpc-status", "0"}, {"grpc-message", ""}});
  pair.relay();
  const auto trailers = pair.all<TrailersEvent>();
  ASSERT_EQ(trailers.size(), 1U);
  EXPECT_EQ(trailers[0].fields, (FieldList{{"grpc-status", "0"}, {"grpc-message", ""}}));
  EXPECT_EQ(pair.body(*id).size(), 7U);
  EXPECT_EQ(pair.all<EndEvent>().size(), 1U);
}

TEST(H2ClientCodec, AGrpcErrorInTheHeadAlone) {
  ClientPair pair;
  pair.relay();
  const auto id = pair.codec.submit_request(post("/pkg.S/M"), true);
  pair.relay();
  pair.server().submit_headers(
      *id, status("200", {{"content-type", "application/grpc"}, {"grpc-status", "14"}}), true);
  pair.relay();
  const auto heads = pair.all<ResponseHeadEvent>();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_TRUE(heads[0].end_stream);
  EXPECT_EQ(field(heads[0].head.fields, "grpc-status"), "14");
}

TEST(H2ClientCodec, AnUploadGoesAsTheOriginReadsIt) {
  // The origin reads nothing: the upload stops at its 65535-byte window plus the codec's buffer;
  // when the origin reads, the owner is told there is room again.
  ClientPair pair(ClientOptions{}, {}, /*server_consumes=*/false);
  pair.relay();
  const auto id = pair.codec.submit_request(post("/upload"), false);
  std::size_t given = 0;
  const std::string piece(10000, 'p');
  for (int i = 0; i < 100; ++i) {
    const auto taken = pair.codec.send_data(*id, piece);
    ASSERT_TRUE(taken);
    given += *taken;
    pair.relay();
    if (*taken < piece.size()) {
      break;
    }
  }
  EXPECT_EQ(pair.server().streams[*id].body.size(), 65535U);
  EXPECT_EQ(given, 65535U + kStreamSendBuffer);
  EXPECT_EQ(pair.codec.send_capacity(*id), 0U);
  pair.server().consume(*id, 65535);
  pair.relay();
  ASSERT_EQ(pair.all<SendReadyEvent>().size(), 1U);
}

TEST(H2ClientCodec, AResponseTheOwnerDoesNotForwardStopsAtTheWindow) {
  ClientPair pair;
  pair.auto_consume = false;
  pair.relay();
  const auto slow = pair.codec.submit_request(get("/slow"), true);
  const auto quick = pair.codec.submit_request(get("/quick"), true);
  pair.relay();
  const std::string big(2 << 20, 'd');
  pair.server().submit_response(*slow, status("200"), big);
  pair.server().submit_response(*quick, status("200"), "small");
  pair.relay();
  EXPECT_EQ(pair.body(*slow).size(), static_cast<std::size_t>(kStreamWindow));
  EXPECT_EQ(pair.body(*quick), "small");
  ASSERT_NE(pair.closed(*quick), nullptr);
  EXPECT_EQ(pair.closed(*slow), nullptr);
  pair.codec.consume(*slow, pair.body(*slow).size());
  pair.relay();
  pair.codec.consume(*slow, pair.body(*slow).size() - kStreamWindow);
  pair.relay();
  EXPECT_EQ(pair.body(*slow).size(), big.size());
  ASSERT_NE(pair.closed(*slow), nullptr);
}

TEST(H2ClientCodec, OneStreamResetByTheOriginOthersFinish) {
  ClientPair pair;
  pair.relay();
  const auto a = pair.codec.submit_request(get("/a"), true);
  const auto b = pair.codec.submit_request(get("/b"), true);
  const auto c = pair.codec.submit_request(get("/c"), true);
  pair.relay();
  pair.server().reset(*b, NGHTTP2_INTERNAL_ERROR);
  pair.server().reset(*c, NGHTTP2_REFUSED_STREAM);
  pair.server().submit_response(*a, status("200"), "a");
  pair.relay();
  EXPECT_EQ(pair.body(*a), "a");
  EXPECT_EQ(pair.closed(*a)->by, Closer::finished);
  EXPECT_EQ(pair.closed(*b)->by, Closer::peer);
  EXPECT_EQ(pair.closed(*b)->code, ErrorCode::internal_error);
  EXPECT_FALSE(pair.closed(*b)->retry_safe);
  // REFUSED_STREAM: the origin did not process it (RFC 9113 section 8.7).
  EXPECT_EQ(pair.closed(*c)->code, ErrorCode::refused_stream);
  EXPECT_TRUE(pair.closed(*c)->retry_safe);
}

TEST(H2ClientCodec, TheOwnerResetsOneStream) {
  ClientPair pair;
  pair.relay();
  const auto a = pair.codec.submit_request(post("/a"), false);
  const auto b = pair.codec.submit_request(get("/b"), true);
  ASSERT_TRUE(pair.codec.send_data(*a, "partial"));
  pair.relay();
  ASSERT_EQ(pair.codec.reset_stream(*a, ErrorCode::cancel), SubmitError::none);
  pair.server().submit_response(*b, status("200"), "b");
  pair.relay();
  EXPECT_EQ(pair.server().streams[*a].reset, NGHTTP2_CANCEL);
  EXPECT_EQ(pair.closed(*a)->by, Closer::owner);
  EXPECT_EQ(pair.body(*b), "b");
  EXPECT_EQ(pair.codec.send_data(*a, "more").error(), SubmitError::unknown_stream);
}

TEST(H2ClientCodec, TheOriginsConcurrencyLimitRefusesNotQueues) {
  ClientPair pair(ClientOptions{}, {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 2}});
  pair.relay();
  const auto settings = pair.all<PeerSettingsEvent>();
  ASSERT_EQ(settings.size(), 1U);
  EXPECT_EQ(settings[0].max_concurrent_streams, 2U);
  EXPECT_EQ(pair.codec.available_streams(), 2U);
  const auto a = pair.codec.submit_request(get("/a"), true);
  const auto b = pair.codec.submit_request(get("/b"), true);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(pair.codec.available_streams(), 0U);
  EXPECT_EQ(pair.codec.submit_request(get("/c"), true).error(), SubmitError::stream_limit_reached);
  pair.relay();
  pair.server().submit_response(*a, status("200"));
  pair.relay();
  ASSERT_NE(pair.closed(*a), nullptr);
  EXPECT_EQ(pair.codec.available_streams(), 1U);
  EXPECT_TRUE(pair.codec.submit_request(get("/c"), true));
}

TEST(H2ClientCodec, TheGatesOwnLimitBindsAMoreGenerousOrigin) {
  ClientOptions options;
  options.limits.max_concurrent_streams = 3;
  ClientPair pair(options, {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}});
  pair.relay();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(pair.codec.submit_request(get("/" + std::to_string(i)), true));
  }
  EXPECT_EQ(pair.codec.submit_request(get("/3"), true).error(), SubmitError::stream_limit_reached);
}

TEST(H2ClientCodec, GoawayTellsWhichStreamsMayBeRetried) {
  ClientPair pair;
  pair.relay();
  const auto a = pair.codec.submit_request(get("/a"), true);
  const auto b = pair.codec.submit_request(get("/b"), true);
  const auto c = pair.codec.submit_request(get("/c"), true);
  pair.relay();
  // The origin processed a only.
  pair.server().goaway(*a, NGHTTP2_NO_ERROR);
  pair.server().submit_response(*a, status("200"), "a");
  pair.relay();
  const auto goaway = pair.all<GoawayEvent>();
  ASSERT_EQ(goaway.size(), 1U);
  EXPECT_EQ(goaway[0].last_stream_id, *a);
  EXPECT_EQ(pair.body(*a), "a");
  EXPECT_FALSE(pair.closed(*a)->retry_safe);
  for (const auto id : {*b, *c}) {
    ASSERT_NE(pair.closed(id), nullptr) << id;
    EXPECT_EQ(pair.closed(id)->by, Closer::goaway) << id;
    EXPECT_TRUE(pair.closed(id)->retry_safe) << id;
  }
  EXPECT_EQ(pair.codec.available_streams(), 0U);
  EXPECT_EQ(pair.codec.submit_request(get("/d"), true).error(), SubmitError::going_away);
}

TEST(H2ClientCodec, ARequestNotYetSentWhenGoawayComesIsRetrySafe) {
  ClientPair pair;
  pair.relay();
  pair.server().goaway(0, NGHTTP2_NO_ERROR);
  const auto queued = pair.codec.submit_request(get("/queued"), true);
  ASSERT_TRUE(queued);
  // The GOAWAY arrives before the codec wrote the request.
  pair.codec.receive(pair.server().take_output());
  pair.relay();
  ASSERT_NE(pair.closed(*queued), nullptr);
  EXPECT_TRUE(pair.closed(*queued)->retry_safe);
  EXPECT_TRUE(pair.server().streams.find(*queued) == pair.server().streams.end() ||
              pair.server().streams[*queued].heads.empty());
}

TEST(H2ClientCodec, PingIsAnswered) {
  ClientPair pair;
  pair.relay();
  pair.codec.ping();
  pair.relay();
  EXPECT_EQ(pair.all<PingAckEvent>().size(), 1U);
}

TEST(H2ClientCodec, ExtendedConnectOnlyToAnOriginThatAllowsIt) {
  RequestHead websocket{"CONNECT", "https",     "origin.test",
                        "/chat",   "websocket", {{"sec-websocket-version", "13"}},
                        {}};
  {
    ClientPair pair;
    pair.relay();
    EXPECT_FALSE(pair.codec.peer_allows_connect_protocol());
    EXPECT_EQ(pair.codec.submit_request(websocket, false).error(),
              SubmitError::connect_protocol_not_supported);
  }
  ClientPair pair(ClientOptions{}, {{NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1}});
  pair.relay();
  EXPECT_TRUE(pair.all<PeerSettingsEvent>().at(0).connect_protocol);
  const auto id = pair.codec.submit_request(websocket, false);
  ASSERT_TRUE(id);
  ASSERT_TRUE(pair.codec.send_data(*id, "frame"));
  pair.relay();
  EXPECT_EQ(field(pair.server().streams[*id].heads.at(0), ":protocol"), "websocket");
  EXPECT_EQ(pair.server().streams[*id].body, "frame");
  pair.server().submit_headers(*id, status("200"), false);
  pair.server().send_body(*id, "reply");
  pair.relay();
  EXPECT_EQ(pair.all<ResponseHeadEvent>().at(0).head.status, 200U);
}

TEST(H2ClientCodec, TheOwnersRequestIsCheckedBeforeTheWire) {
  ClientPair pair;
  pair.relay();
  EXPECT_EQ(pair.codec.submit_request(get("/", {{"Accept", "x"}}), true).error(),
            SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_request(get("/", {{"connection", "close"}}), true).error(),
            SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_request(get("/", {{"x", "a\r\nb: c"}}), true).error(),
            SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_request(get("no-slash"), true).error(), SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_request(get("/", {{"host", "elsewhere.test"}}), true).error(),
            SubmitError::invalid_head);
  RequestHead connect{"CONNECT", "https", "origin.test:443", "", {}, {}, {}};
  EXPECT_EQ(pair.codec.submit_request(connect, false).error(), SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_request(post("/", {{"content-length", "5"}}), true).error(),
            SubmitError::body_shorter_than_length);
  EXPECT_EQ(pair.codec.open_streams(), 0U);
}

struct BadResponse {
  const char* what;
  FieldList block;
  StreamProblem problem;
};

TEST(H2ClientCodec, MalformedResponsesResetTheirStreamAlone) {
  const std::vector<BadResponse> cases{
      {"connection field", status("200", {{"connection", "close"}}),
       StreamProblem::forbidden_field},
      {"transfer-encoding", status("200", {{"transfer-encoding", "chunked"}}),
       StreamProblem::forbidden_field},
      {"CR LF in a value", status("200", {{"x", "a\r\nb"}}), StreamProblem::invalid_field_value},
      {"status 101", status("101"), StreamProblem::forbidden_field},
      {"status 600", status("600"), StreamProblem::invalid_pseudo_header},
      {"status 099", status("099"), StreamProblem::invalid_pseudo_header},
      {"status two digits", status("20"), StreamProblem::forbidden_field},
      {"no status", FieldList{{"content-type", "text/plain"}},
       StreamProblem::missing_pseudo_header},
      {"request pseudo", status("200", {{":path", "/"}}), StreamProblem::forbidden_field},
  };
  ClientPair pair(ClientOptions{}, {}, true, /*strict=*/false);
  pair.relay();
  for (const BadResponse& c : cases) {
    const auto id = pair.codec.submit_request(get("/"), true);
    ASSERT_TRUE(id) << c.what;
    pair.relay();
    pair.server().submit_response(*id, c.block, "body");
    pair.relay();
    EXPECT_EQ(pair.server().streams[*id].reset, NGHTTP2_PROTOCOL_ERROR) << c.what;
    ASSERT_NE(pair.closed(*id), nullptr) << c.what;
    EXPECT_EQ(pair.closed(*id)->by, Closer::codec) << c.what;
    EXPECT_EQ(pair.closed(*id)->problem, c.problem)
        << c.what << ": " << describe(pair.closed(*id)->problem);
  }
  EXPECT_TRUE(pair.all<ResponseHeadEvent>().empty());
  EXPECT_EQ(pair.codec.error(), ConnectionError::none);
}

TEST(H2ClientCodec, AResponseBodyLongerThanItsContentLengthIsReset) {
  ClientPair pair(ClientOptions{}, {}, true, false);
  pair.relay();
  const auto id = pair.codec.submit_request(get("/"), true);
  pair.relay();
  pair.server().submit_response(*id, status("200", {{"content-length", "2"}}), "three");
  pair.relay();
  ASSERT_NE(pair.closed(*id), nullptr);
  EXPECT_EQ(pair.closed(*id)->problem, StreamProblem::content_length_mismatch);
}

TEST(H2ClientCodec, AResponseToHeadHasNoBody) {
  ClientPair pair;
  pair.relay();
  const auto id =
      pair.codec.submit_request(RequestHead{"HEAD", "https", "origin.test", "/", {}, {}, {}}, true);
  pair.relay();
  pair.server().submit_response(*id, status("200", {{"content-length", "1234"}}));
  pair.relay();
  const auto heads = pair.all<ResponseHeadEvent>();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_EQ(heads[0].head.content_length, 1234U);
  EXPECT_EQ(pair.closed(*id)->by, Closer::finished);
}

TEST(H2ClientCodec, ServerPushIsOffAndAPushIsAProtocolError) {
  ClientPair pair(ClientOptions{}, {}, true, false);
  pair.relay();
  const auto id = pair.codec.submit_request(get("/"), true);
  pair.relay();
  // nghttp2's server refuses to push to a client that turned push off, so the frame is made by
  // hand: PUSH_PROMISE for stream 2 on the request's stream.
  testing::HpackEncoder encoder;
  std::string payload =
      std::string("\0\0\0\x02", 4) + encoder.encode({{":method", "GET"},
                                                     {":scheme", "https"},
                                                     {":authority", "origin.test"},
                                                     {":path", "/pushed"}});
  pair.codec.receive(testing::frame(testing::kPushPromise, testing::kEndHeaders,
                                    static_cast<std::uint32_t>(*id), payload));
  const auto frames = testing::read_frames(pair.codec.pending_output());
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().type, testing::kGoaway);
  EXPECT_EQ(frames.back().error_code(), NGHTTP2_PROTOCOL_ERROR);
  EXPECT_EQ(pair.codec.error(), ConnectionError::protocol);
}

}  // namespace
}  // namespace sandgate::session::exchange::h2
