// ServerCodec (proxy/session/exchange/h2/server_codec.hpp) against a real nghttp2 client in the
// same process, byte for byte: requests and responses, many streams interleaved, one reset while
// the others finish, gRPC's trailers both ways, large bodies under flow control, extended
// CONNECT, GOAWAY, and the requests RFC 9113 section 8 calls malformed.
#include "proxy/session/exchange/h2/server_codec.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/unit/proxy/session/exchange/h2/h2_test_support.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

using testing::Nghttp2Peer;
using testing::RawClient;
using testing::request_block;
using testing::ServerPair;

ServerOptions plain(bool connect_protocol = false) {
  ServerOptions options;
  options.enable_connect_protocol = connect_protocol;
  return options;
}

ResponseHead ok(FieldList fields = {}) { return ResponseHead{200, std::move(fields), {}}; }

std::string field(const FieldList& fields, std::string_view name) {
  const std::string* value = find_field(fields, name);
  return value ? *value : std::string("<none>");
}

TEST(H2ServerCodec, AGetIsPassedOnCheckedAndAnswered) {
  ServerPair pair;
  const auto id = pair.client().submit_request(
      request_block("GET", "/index.html?q=1", "example.test", "https",
                    {{"accept", "text/html"}, {"user-agent", "nghttp2"}}));
  pair.relay();

  const auto heads = pair.all<RequestHeadEvent>();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_EQ(heads[0].stream, id);
  EXPECT_EQ(heads[0].head.method, "GET");
  EXPECT_EQ(heads[0].head.scheme, "https");
  EXPECT_EQ(heads[0].head.authority, "example.test");
  EXPECT_EQ(heads[0].head.path, "/index.html?q=1");
  EXPECT_TRUE(heads[0].end_stream);
  EXPECT_EQ(heads[0].head.fields, (FieldList{{"accept", "text/html"}, {"user-agent", "nghttp2"}}));
  ASSERT_EQ(pair.all<EndEvent>().size(), 1U);

  ASSERT_EQ(pair.codec.submit_response(id, ok({{"content-type", "text/plain"}}), false),
            SubmitError::none);
  ASSERT_EQ(*pair.codec.send_data(id, "hello"), 5U);
  ASSERT_EQ(pair.codec.end_stream(id), SubmitError::none);
  pair.relay();

  const auto& stream = pair.client().streams[id];
  ASSERT_EQ(stream.heads.size(), 1U);
  EXPECT_EQ(field(stream.heads[0], ":status"), "200");
  EXPECT_EQ(field(stream.heads[0], "content-type"), "text/plain");
  EXPECT_EQ(stream.body, "hello");
  EXPECT_TRUE(stream.ended);
  EXPECT_FALSE(stream.reset);
  const StreamClosedEvent* closed = pair.closed(id);
  ASSERT_NE(closed, nullptr);
  EXPECT_EQ(closed->by, Closer::finished);
  EXPECT_EQ(pair.codec.open_streams(), 0U);
}

TEST(H2ServerCodec, APostBodyArrivesInOrderAndEnds) {
  ServerPair pair;
  std::string body(200000, '\0');
  for (std::size_t i = 0; i < body.size(); ++i) {
    body[i] = static_cast<char>('a' + i % 26);
  }
  const auto id =
      pair.client().submit_request(request_block("POST", "/upload", "example.test", "https",
                                                 {{"content-length", std::to_string(body.size())}}),
                                   body);
  pair.relay();
  const auto heads = pair.all<RequestHeadEvent>();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_FALSE(heads[0].end_stream);
  EXPECT_EQ(heads[0].head.content_length, body.size());
  EXPECT_EQ(pair.body(id), body);
  ASSERT_EQ(pair.all<EndEvent>().size(), 1U);
  EXPECT_TRUE(std::holds_alternative<EndEvent>(pair.events.back()));
}

TEST(H2ServerCodec, ManyStreamsInterleavedEachGetsItsOwnAnswer) {
  ServerPair pair;
  std::map<StreamId, std::string> sent;
  for (int i = 0; i < 50; ++i) {
    const std::string body = "request " + std::to_string(i) + std::string(i * 1000, 'x');
    sent[pair.client().submit_request(request_block("POST", "/item/" + std::to_string(i)), body)] =
        body;
  }
  pair.relay();
  ASSERT_EQ(pair.all<RequestHeadEvent>().size(), 50U);
  // Bodies interleave on the wire: each stream's pieces still arrive whole and in order.
  for (const auto& [id, body] : sent) {
    EXPECT_EQ(pair.body(id), body) << id;
  }
  // Answered in reverse order, each with its own path echoed.
  for (auto it = sent.rbegin(); it != sent.rend(); ++it) {
    ASSERT_EQ(pair.codec.submit_response(it->first, ok(), false), SubmitError::none);
  }
  for (auto it = sent.rbegin(); it != sent.rend(); ++it) {
    ASSERT_TRUE(pair.codec.send_data(it->first, "echo:" + it->second.substr(0, 12)));
    ASSERT_EQ(pair.codec.end_stream(it->first), SubmitError::none);
  }
  pair.relay();
  for (const auto& [id, body] : sent) {
    EXPECT_EQ(pair.client().streams[id].body, "echo:" + body.substr(0, 12));
    EXPECT_TRUE(pair.client().streams[id].ended);
  }
  EXPECT_EQ(pair.all<StreamClosedEvent>().size(), 50U);
  EXPECT_EQ(pair.codec.open_streams(), 0U);
}

TEST(H2ServerCodec, OneStreamResetWhileTheOthersFinish) {
  ServerPair pair;
  const auto a = pair.client().submit_request(request_block("GET", "/a"));
  const auto b = pair.client().submit_request(request_block("GET", "/b"));
  const auto c = pair.client().submit_request(request_block("GET", "/c"));
  pair.relay();
  ASSERT_EQ(pair.all<RequestHeadEvent>().size(), 3U);

  // The owner resets b (a refused request); the client resets c (cancelled).
  ASSERT_EQ(pair.codec.reset_stream(b, ErrorCode::refused_stream), SubmitError::none);
  pair.client().reset(c, NGHTTP2_CANCEL);
  pair.relay();
  ASSERT_EQ(pair.codec.submit_response(a, ok(), false), SubmitError::none);
  ASSERT_TRUE(pair.codec.send_data(a, "a's answer"));
  ASSERT_EQ(pair.codec.end_stream(a), SubmitError::none);
  pair.relay();

  EXPECT_EQ(pair.client().streams[a].body, "a's answer");
  EXPECT_TRUE(pair.client().streams[a].ended);
  EXPECT_EQ(pair.client().streams[b].reset, NGHTTP2_REFUSED_STREAM);
  ASSERT_NE(pair.closed(a), nullptr);
  EXPECT_EQ(pair.closed(a)->by, Closer::finished);
  ASSERT_NE(pair.closed(b), nullptr);
  EXPECT_EQ(pair.closed(b)->by, Closer::owner);
  EXPECT_EQ(pair.closed(b)->code, ErrorCode::refused_stream);
  ASSERT_NE(pair.closed(c), nullptr);
  EXPECT_EQ(pair.closed(c)->by, Closer::peer);
  EXPECT_EQ(pair.closed(c)->code, ErrorCode::cancel);
  // A closed stream takes nothing more.
  EXPECT_EQ(pair.codec.submit_response(c, ok(), true), SubmitError::unknown_stream);
  EXPECT_EQ(pair.codec.error(), ConnectionError::none);
}

TEST(H2ServerCodec, GrpcTrailersBothWays) {
  ServerPair pair;
  const auto id = pair.client().submit_request(
      request_block("POST", "/helloworld.Greeter/SayHello", "example.test", "https",
                    {{"content-type", "application/grpc"}, {"te", "trailers"}}),
      std::string("\0\0\0\0\x07\x0a\x05world", 12), {{"grpc-client-trailer", "yes"}});
  pair.relay();
  const auto heads = pair.all<RequestHeadEvent>();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_EQ(field(heads[0].head.fields, "te"), "trailers");
  EXPECT_EQ(field(heads[0].head.fields, "content-type"), "application/grpc");
  const auto trailers = pair.all<TrailersEvent>();
  ASSERT_EQ(trailers.size(), 1U);
  EXPECT_EQ(trailers[0].fields, (FieldList{{"grpc-client-trailer", "yes"}}));
  EXPECT_EQ(pair.body(id).size(), 12U);

  ASSERT_EQ(pair.codec.submit_response(id, ok({{"content-type", "application/grpc"}}), false),
            SubmitError::none);
  ASSERT_TRUE(pair.codec.send_data(id, std::string("\0\0\0\0\x07\x0a\x05hello", 12)));
  ASSERT_EQ(pair.codec.submit_trailers(id, {{"grpc-status", "0"}, {"grpc-message", "OK"}}),
            SubmitError::none);
  pair.relay();
  const auto& stream = pair.client().streams[id];
  EXPECT_EQ(stream.body.size(), 12U);
  EXPECT_EQ(stream.trailers, (FieldList{{"grpc-status", "0"}, {"grpc-message", "OK"}}));
  EXPECT_TRUE(stream.ended);
  EXPECT_FALSE(stream.reset);
}

TEST(H2ServerCodec, TrailersOnlyResponseEndsWithTheHead) {
  // gRPC's "Trailers-Only" answer: one HEADERS with END_STREAM, its status in the head.
  ServerPair pair;
  const auto id = pair.client().submit_request(request_block("POST", "/pkg.Service/Method"), "");
  pair.relay();
  ASSERT_EQ(pair.codec.submit_response(
                id, ok({{"content-type", "application/grpc"}, {"grpc-status", "7"}}), true),
            SubmitError::none);
  pair.relay();
  EXPECT_EQ(field(pair.client().streams[id].heads.at(0), "grpc-status"), "7");
  EXPECT_TRUE(pair.client().streams[id].ended);
}

TEST(H2ServerCodec, InterimResponsesComeBeforeTheFinalOne) {
  ServerPair pair;
  const auto id = pair.client().submit_request(
      request_block("POST", "/", "example.test", "https", {{"expect", "100-continue"}}), "x");
  pair.relay();
  ASSERT_EQ(pair.codec.submit_interim(id, ResponseHead{100, {}, {}}), SubmitError::none);
  ASSERT_EQ(
      pair.codec.submit_interim(id, ResponseHead{103, {{"link", "</s.css>; rel=preload"}}, {}}),
      SubmitError::none);
  EXPECT_EQ(pair.codec.submit_interim(id, ResponseHead{101, {}, {}}), SubmitError::invalid_head);
  ASSERT_EQ(pair.codec.submit_response(id, ok(), true), SubmitError::none);
  EXPECT_EQ(pair.codec.submit_interim(id, ResponseHead{100, {}, {}}), SubmitError::wrong_state);
  pair.relay();
  const auto& heads = pair.client().streams[id].heads;
  ASSERT_EQ(heads.size(), 3U);
  EXPECT_EQ(field(heads[0], ":status"), "100");
  EXPECT_EQ(field(heads[1], ":status"), "103");
  EXPECT_EQ(field(heads[2], ":status"), "200");
}

TEST(H2ServerCodec, TheOwnersHeadIsCheckedBeforeTheWire) {
  ServerPair pair;
  const auto id = pair.client().submit_request(request_block("GET", "/"));
  pair.relay();
  for (const FieldList& fields : std::vector<FieldList>{{{"Content-Type", "text/plain"}},
                                                        {{"x-a", "one\r\nx-b: two"}},
                                                        {{"connection", "close"}},
                                                        {{"transfer-encoding", "chunked"}},
                                                        {{":status", "200"}},
                                                        {{"x", std::string("nul\0", 4)}}}) {
    EXPECT_EQ(pair.codec.submit_response(id, ok(fields), true), SubmitError::invalid_head)
        << fields[0].name;
  }
  EXPECT_EQ(pair.codec.submit_response(id, ResponseHead{99, {}, {}}, true),
            SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_response(id, ResponseHead{600, {}, {}}, true),
            SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_response(id, ResponseHead{103, {}, {}}, true),
            SubmitError::invalid_head);
  EXPECT_EQ(pair.codec.submit_trailers(id, {{"content-length", "0"}}), SubmitError::invalid_head);
  ASSERT_EQ(pair.codec.submit_response(id, ok(), true), SubmitError::none);
  EXPECT_EQ(pair.codec.submit_response(id, ok(), true), SubmitError::wrong_state);
  pair.relay();
  EXPECT_EQ(field(pair.client().streams[id].heads.at(0), ":status"), "200");
}

TEST(H2ServerCodec, ContentLengthIsHeldToTheBodySent) {
  ServerPair pair;
  const auto a = pair.client().submit_request(request_block("GET", "/a"));
  const auto b = pair.client().submit_request(request_block("GET", "/b"));
  const auto c = pair.client().submit_request(request_block("GET", "/c"));
  pair.relay();
  // Too much: refused before the wire, the stream unchanged.
  ASSERT_EQ(pair.codec.submit_response(a, ok({{"content-length", "3"}}), false), SubmitError::none);
  EXPECT_EQ(pair.codec.send_data(a, "four").error(), SubmitError::body_exceeds_length);
  ASSERT_EQ(*pair.codec.send_data(a, "abc"), 3U);
  EXPECT_EQ(pair.codec.end_stream(a), SubmitError::none);
  // Too little: the stream is reset rather than ended short.
  ASSERT_EQ(pair.codec.submit_response(b, ok({{"content-length", "10"}}), false),
            SubmitError::none);
  ASSERT_EQ(*pair.codec.send_data(b, "short"), 5U);
  EXPECT_EQ(pair.codec.end_stream(b), SubmitError::body_shorter_than_length);
  // A length with END_STREAM on the head and no body.
  EXPECT_EQ(pair.codec.submit_response(c, ok({{"content-length", "10"}}), true),
            SubmitError::body_shorter_than_length);
  pair.relay();
  EXPECT_EQ(pair.client().streams[a].body, "abc");
  EXPECT_TRUE(pair.client().streams[a].ended);
  EXPECT_EQ(pair.client().streams[b].reset, NGHTTP2_INTERNAL_ERROR);
}

TEST(H2ServerCodec, NoBodyForHeadOr204Or304) {
  ServerPair pair;
  const auto head = pair.client().submit_request(request_block("HEAD", "/"));
  const auto empty = pair.client().submit_request(request_block("GET", "/empty"));
  pair.relay();
  ASSERT_EQ(pair.codec.submit_response(head, ok({{"content-length", "1000"}}), false),
            SubmitError::none);
  EXPECT_EQ(pair.codec.send_data(head, "x").error(), SubmitError::body_not_allowed);
  EXPECT_EQ(pair.codec.end_stream(head), SubmitError::none);
  ASSERT_EQ(pair.codec.submit_response(empty, ResponseHead{204, {}, {}}, false), SubmitError::none);
  EXPECT_EQ(pair.codec.send_data(empty, "x").error(), SubmitError::body_not_allowed);
  EXPECT_EQ(pair.codec.end_stream(empty), SubmitError::none);
  pair.relay();
  EXPECT_TRUE(pair.client().streams[head].ended);
  EXPECT_FALSE(pair.client().streams[head].reset);
  EXPECT_EQ(field(pair.client().streams[head].heads.at(0), "content-length"), "1000");
  EXPECT_TRUE(pair.client().streams[empty].ended);
}

TEST(H2ServerCodec, AResponseWholeBeforeTheRequestStopsTheRequestWithNoError) {
  ServerPair pair;
  const auto id =
      pair.client().submit_request(request_block("POST", "/big"), std::nullopt, {}, true);
  pair.client().send_body(id, "the first part");
  pair.relay();
  ASSERT_EQ(pair.all<RequestHeadEvent>().size(), 1U);
  ASSERT_EQ(pair.codec.submit_response(id, ResponseHead{413, {}, {}}, true), SubmitError::none);
  pair.relay();
  EXPECT_EQ(field(pair.client().streams[id].heads.at(0), ":status"), "413");
  EXPECT_EQ(pair.client().streams[id].reset, NGHTTP2_NO_ERROR);
  ASSERT_NE(pair.closed(id), nullptr);
  EXPECT_EQ(pair.closed(id)->by, Closer::finished);
}

TEST(H2ServerCodec, AClientThatDoesNotReadStallsOnlyItsOwnStream) {
  // The client reads stream b and not stream a (its connection window is given back for both, as
  // a client's library does when bytes arrive): a stops at HTTP/2's default stream window of
  // 65535 bytes and the owner is refused room beyond its buffer; b goes through whole. When the
  // client reads a, the owner is told there is room again.
  ServerPair pair(ServerOptions{}, {}, /*client_consumes=*/false);
  const auto a = pair.client().submit_request(request_block("GET", "/a"));
  const auto b = pair.client().submit_request(request_block("GET", "/b"));
  pair.relay();
  ASSERT_EQ(pair.codec.submit_response(a, ok(), false), SubmitError::none);
  ASSERT_EQ(pair.codec.submit_response(b, ok(), false), SubmitError::none);
  const std::string body(300000, 'z');
  std::size_t given_a = 0;
  std::size_t given_b = 0;
  std::size_t read_a = 0;
  std::size_t read_b = 0;
  for (int round = 0; round < 100; ++round) {
    given_a += *pair.codec.send_data(a, std::string_view(body).substr(given_a));
    given_b += *pair.codec.send_data(b, std::string_view(body).substr(given_b));
    pair.relay();
    const std::size_t now_a = pair.client().streams[a].body.size();
    const std::size_t now_b = pair.client().streams[b].body.size();
    pair.client().consume_connection(now_a - read_a);
    pair.client().consume(b, now_b - read_b);
    read_a = now_a;
    read_b = now_b;
  }
  EXPECT_EQ(pair.client().streams[b].body, body);
  EXPECT_EQ(pair.client().streams[a].body.size(), 65535U);
  EXPECT_EQ(given_a, 65535U + kStreamSendBuffer);
  EXPECT_EQ(pair.codec.send_capacity(a), 0U);
  const auto ready_before = pair.all<SendReadyEvent>().size();

  pair.client().consume(a, 65535);
  pair.relay();
  const auto ready = pair.all<SendReadyEvent>();
  ASSERT_EQ(ready.size(), ready_before + 1);
  EXPECT_EQ(ready.back().stream, a);
  EXPECT_GT(pair.codec.send_capacity(a), 0U);
}

TEST(H2ServerCodec, AnOwnerThatDoesNotForwardStallsOnlyThatStream) {
  // The owner consumes only stream b's bytes: a's upload stops at the gate's stream window
  // (1 MiB), b's goes through whole.
  ServerPair pair;
  pair.auto_consume = false;
  const std::string big(3 << 20, 'u');
  const auto a = pair.client().submit_request(request_block("POST", "/a"), big);
  const auto b = pair.client().submit_request(request_block("POST", "/b"), big);
  std::size_t consumed = 0;
  for (int round = 0; round < 200; ++round) {
    pair.relay();
    const std::size_t received = pair.body(b).size();
    if (received == consumed) {
      break;
    }
    pair.codec.consume(b, received - consumed);
    consumed = received;
  }
  EXPECT_EQ(pair.body(b).size(), big.size());
  EXPECT_EQ(pair.body(a).size(), static_cast<std::size_t>(kStreamWindow));
  EXPECT_FALSE(pair.client().streams[a].ended);
  // Forwarding a's bytes opens its window again.
  pair.codec.consume(a, pair.body(a).size());
  pair.relay();
  EXPECT_GT(pair.body(a).size(), static_cast<std::size_t>(kStreamWindow));
}

TEST(H2ServerCodec, ExtendedConnectExposesProtocolWhenEnabled) {
  ServerPair pair(plain(true));
  pair.relay();
  EXPECT_EQ(nghttp2_session_get_remote_settings(pair.client().session(),
                                                NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL),
            1U);
  FieldList block =
      request_block("CONNECT", "/chat", "example.test", "https", {{"sec-websocket-version", "13"}});
  block.insert(block.begin() + 1, Field{":protocol", "websocket"});
  const auto id = pair.client().submit_request(block, std::nullopt, {}, true);
  pair.relay();
  const auto heads = pair.all<RequestHeadEvent>();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_EQ(heads[0].head.method, "CONNECT");
  EXPECT_EQ(heads[0].head.protocol, "websocket");
  EXPECT_TRUE(heads[0].head.extended_connect());
  EXPECT_EQ(heads[0].head.path, "/chat");
  // 200 opens the tunnel; frames flow both ways as DATA.
  ASSERT_EQ(pair.codec.submit_response(id, ok(), false), SubmitError::none);
  ASSERT_TRUE(pair.codec.send_data(id, "server frame"));
  pair.client().send_body(id, "client frame");
  pair.relay();
  EXPECT_EQ(pair.client().streams[id].body, "server frame");
  EXPECT_EQ(pair.body(id), "client frame");
}

TEST(H2ServerCodec, ExtendedConnectIsRefusedWhenNotEnabled) {
  ServerPair pair(plain(false), {}, true, /*strict=*/false);
  pair.relay();
  EXPECT_EQ(nghttp2_session_get_remote_settings(pair.client().session(),
                                                NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL),
            0U);
  FieldList block = request_block("CONNECT", "/chat");
  block.insert(block.begin() + 1, Field{":protocol", "websocket"});
  const auto id = pair.client().submit_request(block);
  pair.relay();
  EXPECT_TRUE(pair.all<RequestHeadEvent>().empty());
  EXPECT_EQ(pair.client().streams[id].reset, NGHTTP2_PROTOCOL_ERROR);
}

// RFC 8441 lets a server allow extended CONNECT in a later SETTINGS (the gate does once its
// origin's SETTINGS say the origin allows it): a :protocol before is refused on its stream alone,
// one after is taken.
TEST(H2ServerCodec, ExtendedConnectEnabledLaterIsTakenFromThen) {
  ServerPair pair(plain(false), {}, true, /*strict=*/false);
  pair.relay();
  FieldList block = request_block("CONNECT", "/chat");
  block.insert(block.begin() + 1, Field{":protocol", "websocket"});
  const auto early = pair.client().submit_request(block, std::nullopt, {}, true);
  const auto other = pair.client().submit_request(request_block("GET", "/other"));
  pair.relay();
  EXPECT_EQ(pair.client().streams[early].reset, NGHTTP2_PROTOCOL_ERROR);
  ASSERT_EQ(pair.all<RequestHeadEvent>().size(), 1U);
  EXPECT_EQ(pair.all<RequestHeadEvent>()[0].stream, other);
  EXPECT_FALSE(pair.codec.connect_protocol_enabled());

  pair.codec.enable_connect_protocol();
  pair.codec.enable_connect_protocol();  // once only: never sent again, never withdrawn
  EXPECT_TRUE(pair.codec.connect_protocol_enabled());
  pair.relay();
  EXPECT_EQ(nghttp2_session_get_remote_settings(pair.client().session(),
                                                NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL),
            1U);
  const auto later = pair.client().submit_request(block, std::nullopt, {}, true);
  pair.relay();
  const auto heads = pair.all<RequestHeadEvent>();
  ASSERT_EQ(heads.size(), 2U);
  EXPECT_EQ(heads[1].stream, later);
  EXPECT_EQ(heads[1].head.protocol, "websocket");
  EXPECT_EQ(pair.codec.error(), ConnectionError::none);
}

TEST(H2ServerCodec, PlainConnectWaitsForTheOwnersRefusal) {
  ServerPair pair(plain(true), {}, true, false);
  const auto id = pair.client().submit_request(
      FieldList{{":method", "CONNECT"}, {":authority", "elsewhere.test:443"}}, std::nullopt, {},
      true);
  pair.relay();
  const auto rejected = pair.all<RequestRejectedEvent>();
  ASSERT_EQ(rejected.size(), 1U);
  EXPECT_EQ(rejected[0].problem, StreamProblem::plain_connect);
  EXPECT_TRUE(rejected[0].must_answer);
  EXPECT_TRUE(pair.all<RequestHeadEvent>().empty());
  ASSERT_EQ(pair.codec.submit_response(id, ResponseHead{405, {}, {}}, true), SubmitError::none);
  pair.relay();
  EXPECT_EQ(field(pair.client().streams[id].heads.at(0), ":status"), "405");
  ASSERT_NE(pair.closed(id), nullptr);
}

TEST(H2ServerCodec, ShutdownLetsStreamsBegunFinishAndTakesNoNewOne) {
  ServerPair pair;
  const auto first = pair.client().submit_request(request_block("GET", "/first"));
  pair.relay();
  pair.codec.shutdown();
  pair.relay();
  ASSERT_TRUE(pair.client().goaway_received);
  EXPECT_EQ(pair.client().goaway_received->last_stream_id, first);
  EXPECT_EQ(pair.client().goaway_received->code, NGHTTP2_NO_ERROR);
  EXPECT_FALSE(pair.codec.finished());

  // A request sent anyway (the client had not seen the GOAWAY) is not taken.
  RawClient raw;
  raw.send(raw.request(1, request_block("GET", "/one")));
  raw.codec.shutdown();
  raw.frames();
  raw.send(raw.request(3, request_block("GET", "/late")));
  EXPECT_EQ(testing::only<RequestHeadEvent>(raw.events).size(), 1U);

  ASSERT_EQ(pair.codec.submit_response(first, ok(), true), SubmitError::none);
  pair.relay();
  EXPECT_TRUE(pair.client().streams[first].ended);
  EXPECT_TRUE(pair.codec.finished());
  EXPECT_EQ(pair.codec.error(), ConnectionError::none);
}

TEST(H2ServerCodec, TheClientsGoawayIsAnEventAndStreamsGoOn) {
  ServerPair pair;
  const auto id = pair.client().submit_request(request_block("GET", "/"));
  pair.relay();
  pair.client().goaway(0, NGHTTP2_NO_ERROR);
  pair.relay();
  const auto goaway = pair.all<GoawayEvent>();
  ASSERT_EQ(goaway.size(), 1U);
  EXPECT_EQ(goaway[0].code, ErrorCode::no_error);
  ASSERT_EQ(pair.codec.submit_response(id, ok(), true), SubmitError::none);
  pair.relay();
  EXPECT_TRUE(pair.client().streams[id].ended);
  EXPECT_TRUE(pair.codec.finished());
}

TEST(H2ServerCodec, TerminateSendsItsCodeAndEnds) {
  ServerPair pair;
  pair.client().submit_request(request_block("GET", "/"));
  pair.relay();
  pair.codec.terminate(ErrorCode::internal_error);
  pair.relay();
  ASSERT_TRUE(pair.client().goaway_received);
  EXPECT_EQ(pair.client().goaway_received->code, NGHTTP2_INTERNAL_ERROR);
  EXPECT_TRUE(pair.codec.finished());
}

TEST(H2ServerCodec, NotHttp2IsABadPreface) {
  ServerCodec codec;
  EXPECT_EQ(codec.receive("GET / HTTP/1.1\r\nHost: example.test\r\n\r\n"),
            ConnectionError::bad_preface);
  const auto frames = testing::read_frames(codec.pending_output());
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().type, testing::kGoaway);
  EXPECT_EQ(frames.back().error_code(), NGHTTP2_PROTOCOL_ERROR);
  codec.consume_output(codec.pending_output().size());
  EXPECT_TRUE(codec.finished());
}

TEST(H2ServerCodec, BytesInAnyPiecesReadTheSame) {
  // The same client bytes fed one byte at a time give the same events.
  Nghttp2Peer client(Nghttp2Peer::Role::client);
  client.submit_request(
      request_block("POST", "/a", "example.test", "https", {{"content-type", "text/plain"}}),
      "body bytes", {{"x-trailer", "1"}});
  const std::string bytes = client.take_output();
  ServerCodec whole;
  ServerCodec pieces;
  whole.receive(bytes);
  for (const char c : bytes) {
    ASSERT_EQ(pieces.receive(std::string_view(&c, 1)), ConnectionError::none);
  }
  std::vector<std::string> a;
  std::vector<std::string> b;
  const auto describe_event = [](const ServerEvent& event) {
    return std::to_string(event.index()) + ":" + std::to_string(testing::stream_of(event));
  };
  std::string body_a;
  std::string body_b;
  while (auto event = whole.next_event()) {
    if (const auto* data = std::get_if<DataEvent>(&*event)) {
      body_a += data->bytes;
    } else {
      a.push_back(describe_event(*event));
    }
  }
  while (auto event = pieces.next_event()) {
    if (const auto* data = std::get_if<DataEvent>(&*event)) {
      body_b += data->bytes;
    } else {
      b.push_back(describe_event(*event));
    }
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(body_a, "body bytes");
  EXPECT_EQ(body_b, "body bytes");
}

// Requests RFC 9113 section 8 calls malformed, or the gate refuses, each sent by a real nghttp2
// client (its own checks off): refused with PROTOCOL_ERROR on that stream, the reason told to the
// owner, and the connection unharmed (the next request goes through).
struct Malformed {
  const char* what;
  FieldList block;
  StreamProblem problem;
};

TEST(H2ServerCodec, MalformedRequestsAreResetAloneWithTheirReason) {
  const FieldList base = request_block("GET", "/");
  const auto with = [&](FieldList extra) {
    FieldList block = base;
    block.insert(block.end(), extra.begin(), extra.end());
    return block;
  };
  const auto replace = [&](std::string_view name, std::string value) {
    FieldList block = base;
    for (Field& f : block) {
      if (f.name == name) {
        f.value = std::move(value);
      }
    }
    return block;
  };
  const auto without = [&](std::string_view name) {
    FieldList block;
    for (const Field& f : base) {
      if (f.name != name) {
        block.push_back(f);
      }
    }
    return block;
  };
  const std::vector<Malformed> cases{
      {"connection", with({{"connection", "keep-alive"}}), StreamProblem::forbidden_field},
      {"keep-alive", with({{"keep-alive", "5"}}), StreamProblem::forbidden_field},
      {"proxy-connection", with({{"proxy-connection", "x"}}), StreamProblem::forbidden_field},
      {"transfer-encoding", with({{"transfer-encoding", "chunked"}}),
       StreamProblem::forbidden_field},
      {"upgrade", with({{"upgrade", "websocket"}}), StreamProblem::forbidden_field},
      {"te gzip", with({{"te", "gzip"}}), StreamProblem::forbidden_field},
      {"CR LF in a value", with({{"x-a", "1\r\nx-b: 2"}}), StreamProblem::invalid_field_value},
      {"NUL in a value", with({{"x-a", std::string("a\0b", 3)}}),
       StreamProblem::invalid_field_value},
      {"leading space", with({{"x-a", " a"}}), StreamProblem::invalid_field_value},
      {"space in a name", with({{"x a", "1"}}), StreamProblem::invalid_field_name},
      {"colon in a name", with({{"x:a", "1"}}), StreamProblem::invalid_field_name},
      {"no :path", without(":path"), StreamProblem::missing_pseudo_header},
      {"no :method", without(":method"), StreamProblem::missing_pseudo_header},
      {"no :scheme", without(":scheme"), StreamProblem::missing_pseudo_header},
      {"no authority", without(":authority"), StreamProblem::missing_pseudo_header},
      {"pseudo after regular",
       [] {
         FieldList block{{":method", "GET"},
                         {":scheme", "https"},
                         {"accept", "*/*"},
                         {":authority", "example.test"},
                         {":path", "/"}};
         return block;
       }(),
       StreamProblem::forbidden_field},
      {"unknown pseudo", with({{":special", "1"}}), StreamProblem::forbidden_field},
      {"status in a request", with({{":status", "200"}}), StreamProblem::forbidden_field},
      {"two content-length", with({{"content-length", "0"}, {"content-length", "0"}}),
       StreamProblem::forbidden_field},
      {"content-length not a number", with({{"content-length", "1e3"}}),
       StreamProblem::forbidden_field},
      {"path without slash", replace(":path", "index.html"), StreamProblem::path_invalid},
      {"path with a space", replace(":path", "/a b"), StreamProblem::forbidden_field},
      {"path with a fragment", replace(":path", "/a#b"), StreamProblem::path_invalid},
      {"path with a byte over 0x7e", replace(":path", "/caf\xc3\xa9"), StreamProblem::path_invalid},
      {"userinfo in authority", replace(":authority", "user@example.test"),
       StreamProblem::authority_invalid},
      {"authority with a path", replace(":authority", "example.test/x"),
       StreamProblem::forbidden_field},
      {"authority port too large", replace(":authority", "example.test:70000"),
       StreamProblem::authority_invalid},
      {"host differs", with({{"host", "other.test"}}), StreamProblem::host_mismatch},
      {"scheme http on https", replace(":scheme", "http"), StreamProblem::scheme_mismatch},
      {"protocol without CONNECT", with({{":protocol", "websocket"}}),
       StreamProblem::forbidden_field},
  };
  ServerPair pair(ServerOptions{}, {}, true, /*strict=*/false);
  for (const Malformed& c : cases) {
    const std::size_t before = pair.events.size();
    const auto id = pair.client().submit_request(c.block);
    pair.relay();
    EXPECT_EQ(pair.client().streams[id].reset, NGHTTP2_PROTOCOL_ERROR) << c.what;
    std::vector<ServerEvent> fresh(pair.events.begin() + static_cast<long>(before),
                                   pair.events.end());
    EXPECT_TRUE(testing::only<RequestHeadEvent>(fresh).empty()) << c.what;
    const auto rejected = testing::only<RequestRejectedEvent>(fresh);
    ASSERT_EQ(rejected.size(), 1U) << c.what;
    EXPECT_EQ(rejected[0].problem, c.problem) << c.what << ": " << describe(rejected[0].problem);
    EXPECT_FALSE(rejected[0].must_answer) << c.what;
    EXPECT_EQ(testing::only<StreamClosedEvent>(fresh).size(), 1U) << c.what;
  }
  EXPECT_EQ(pair.codec.error(), ConnectionError::none);
  const auto fine = pair.client().submit_request(request_block("GET", "/still-fine"));
  pair.relay();
  ASSERT_EQ(pair.all<RequestHeadEvent>().size(), 1U);
  EXPECT_EQ(pair.all<RequestHeadEvent>()[0].stream, fine);
}

TEST(H2ServerCodec, AnUppercaseNameIsMalformed) {
  // nghttp2's client lowercases what it is given, so the block is encoded by hand.
  RawClient raw;
  raw.send(raw.request(1, request_block("GET", "/", "example.test", "https", {{"X-Upper", "1"}})));
  const auto frames = raw.frames();
  const auto reset = RawClient::find(frames, testing::kRstStream, 1);
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->error_code(), NGHTTP2_PROTOCOL_ERROR);
  const auto rejected = testing::only<RequestRejectedEvent>(raw.events);
  ASSERT_EQ(rejected.size(), 1U);
  EXPECT_EQ(rejected[0].problem, StreamProblem::forbidden_field);
}

TEST(H2ServerCodec, HostStandsInForAMissingAuthorityAndIsNotKept) {
  ServerPair pair(ServerOptions{}, {}, true, false);
  pair.client().submit_request(FieldList{
      {":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {"host", "Example.Test:8443"}});
  pair.client().submit_request(
      request_block("GET", "/", "example.test", "https", {{"host", "EXAMPLE.test"}}));
  pair.relay();
  const auto heads = pair.all<RequestHeadEvent>();
  ASSERT_EQ(heads.size(), 2U);
  EXPECT_EQ(heads[0].head.authority, "Example.Test:8443");
  EXPECT_EQ(heads[1].head.authority, "example.test");
  EXPECT_EQ(find_field(heads[0].head.fields, "host"), nullptr);
  EXPECT_EQ(find_field(heads[1].head.fields, "host"), nullptr);
}

TEST(H2ServerCodec, TheRequestsBodyMustMatchItsContentLength) {
  ServerPair pair(ServerOptions{}, {}, true, false);
  const auto longer = pair.client().submit_request(
      request_block("POST", "/", "example.test", "https", {{"content-length", "3"}}), "four");
  const auto shorter = pair.client().submit_request(
      request_block("POST", "/", "example.test", "https", {{"content-length", "9"}}), "four");
  pair.relay();
  for (const auto id : {longer, shorter}) {
    EXPECT_EQ(pair.client().streams[id].reset, NGHTTP2_PROTOCOL_ERROR) << id;
    ASSERT_NE(pair.closed(id), nullptr) << id;
    EXPECT_EQ(pair.closed(id)->by, Closer::codec);
    EXPECT_EQ(pair.closed(id)->problem, StreamProblem::content_length_mismatch) << id;
  }
}

TEST(H2ServerCodec, TrailersThatFrameRouteOrCarryCredentialsAreRefused) {
  for (const char* name : {"content-length", "host", "authorization", "cookie", "te"}) {
    ServerPair pair(ServerOptions{}, {}, true, false);
    const auto id =
        pair.client().submit_request(request_block("POST", "/"), "body", {{name, "trailers"}});
    pair.relay();
    EXPECT_TRUE(pair.all<TrailersEvent>().empty()) << name;
    EXPECT_EQ(pair.client().streams[id].reset, NGHTTP2_PROTOCOL_ERROR) << name;
    ASSERT_NE(pair.closed(id), nullptr) << name;
    EXPECT_EQ(pair.closed(id)->problem, StreamProblem::trailers_invalid) << name;
  }
}

}  // namespace
}  // namespace sandgate::session::exchange::h2
