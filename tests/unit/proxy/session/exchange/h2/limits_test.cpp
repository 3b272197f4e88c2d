// Every limit of proxy/session/exchange/h2/limits.hpp exceeded, mostly at its default value and
// with raw frames (what no well-behaved peer sends): the stream or the connection ends as the
// limit says, with the error code the peer is told and the reason the owner is told; one step
// under the limit passes.
#include "proxy/session/exchange/h2/limits.hpp"

#include <gtest/gtest.h>

#include <string>

#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/exchange/h2/server_codec.hpp"
#include "tests/unit/proxy/session/exchange/h2/h2_test_support.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

using namespace std::chrono_literals;
using testing::ClientPair;
using testing::Frame;
using testing::ManualClock;
using testing::RawClient;
using testing::request_block;
using testing::ServerPair;

// A header block over HEADERS and as many CONTINUATIONs as pieces of `piece` bytes it takes.
std::string split_block(std::uint32_t stream, std::string_view block, bool end_stream,
                        std::size_t piece = 16384) {
  std::string out =
      testing::headers_frame(stream, block.substr(0, piece), end_stream, block.size() <= piece);
  for (std::size_t at = piece; at < block.size(); at += piece) {
    out += testing::continuation_frame(stream, block.substr(at, piece), at + piece >= block.size());
  }
  return out;
}

// A request whose header list (as RFC 9113 counts it) is exactly `size` bytes.
FieldList request_of_list_size(std::size_t size) {
  FieldList block = request_block("GET", "/");
  std::size_t used = 0;
  for (const Field& f : block) {
    used += f.name.size() + f.value.size() + 32;
  }
  const std::string name = "x-filler";
  std::size_t left = size - used;
  while (left > 0) {
    const std::size_t value = std::min<std::size_t>(left - name.size() - 32, 4000);
    block.push_back(Field{name, std::string(value, 'f')});
    left -= name.size() + value + 32;
    if (left > 0 && left < name.size() + 32 + 1) {
      // Leave room for one more field of at least one byte.
      block.back().value.resize(block.back().value.size() - 64);
      left += 64;
    }
  }
  return block;
}

std::size_t list_size(const FieldList& fields) {
  std::size_t size = 0;
  for (const Field& f : fields) {
    size += f.name.size() + f.value.size() + 32;
  }
  return size;
}

std::optional<Frame> goaway(const std::vector<Frame>& frames) {
  return RawClient::find(frames, testing::kGoaway);
}

TEST(H2Limits, ConcurrentStreamsBeyondTheAdvertisedLimitAreRefused) {
  // Before the client acknowledged the gate's SETTINGS: the stream over the limit is refused
  // alone (REFUSED_STREAM, safe to retry).
  RawClient raw;
  for (std::uint32_t i = 0; i < kMaxConcurrentStreams; ++i) {
    raw.send(raw.request(1 + 2 * i, request_block("GET", "/")));
  }
  raw.send(raw.request(1 + 2 * kMaxConcurrentStreams, request_block("GET", "/one-too-many")));
  const auto frames = raw.frames();
  EXPECT_EQ(testing::only<RequestHeadEvent>(raw.events).size(), kMaxConcurrentStreams);
  const auto refused = RawClient::find(frames, testing::kRstStream, 1 + 2 * kMaxConcurrentStreams);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error_code(), NGHTTP2_REFUSED_STREAM);
  EXPECT_FALSE(goaway(frames).has_value());

  // After it: a client that ignores the limit it acknowledged loses the connection.
  RawClient acked;
  acked.send(testing::settings_ack());
  for (std::uint32_t i = 0; i <= kMaxConcurrentStreams; ++i) {
    acked.send(acked.request(1 + 2 * i, request_block("GET", "/")));
  }
  const auto end = goaway(acked.frames());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), NGHTTP2_PROTOCOL_ERROR);
  EXPECT_EQ(acked.codec.error(), ConnectionError::protocol);
}

TEST(H2Limits, AHeadOverTheListLimitIsLeftForTheOwnersAnswer) {
  RawClient raw;
  const FieldList at_limit = request_of_list_size(kMaxHeaderListSize);
  const FieldList over = request_of_list_size(kMaxHeaderListSize + 1);
  ASSERT_EQ(list_size(at_limit), kMaxHeaderListSize);
  ASSERT_EQ(list_size(over), kMaxHeaderListSize + 1);
  raw.send(split_block(1, raw.encoder.encode(at_limit), true));
  raw.send(split_block(3, raw.encoder.encode(over), true));
  ASSERT_EQ(raw.last_error, ConnectionError::none);
  const auto heads = testing::only<RequestHeadEvent>(raw.events);
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_EQ(heads[0].stream, 1);
  const auto rejected = testing::only<RequestRejectedEvent>(raw.events);
  ASSERT_EQ(rejected.size(), 1U);
  EXPECT_EQ(rejected[0].stream, 3);
  EXPECT_EQ(rejected[0].problem, StreamProblem::head_too_large);
  EXPECT_TRUE(rejected[0].must_answer);
  // The owner answers 431 (RFC 9113 section 10.5.1); the connection goes on.
  ASSERT_EQ(raw.codec.submit_response(3, ResponseHead{431, {}, {}}, true), SubmitError::none);
  const auto frames = raw.frames();
  const auto answer = RawClient::find(frames, testing::kHeaders, 3);
  ASSERT_TRUE(answer.has_value());
  testing::HpackDecoder decoder;
  EXPECT_EQ(decoder.decode(answer->payload), (FieldList{{":status", "431"}}));
  EXPECT_FALSE(goaway(frames).has_value());
}

TEST(H2Limits, AnHpackBombCostsNoMemoryAndIsRefused) {
  // A 3000-byte field enters the decoder's table with the first request; the second refers to
  // it 16000 times in 16 KB: 48 MB of header fields, decoded and dropped as they come.
  RawClient raw;
  const std::string big(3000, 'b');
  raw.send(raw.request(1, request_block("GET", "/", "example.test", "https", {{"x-big", big}})));
  ASSERT_EQ(testing::only<RequestHeadEvent>(raw.events).size(), 1U);
  std::string bomb = raw.encoder.encode(request_block("GET", "/bomb"));
  // The field again is one byte, an index into the table the two encoders share.
  const std::string reference = raw.encoder.encode({{"x-big", big}});
  ASSERT_EQ(reference.size(), 1U);
  for (int i = 0; i < 16000; ++i) {
    bomb += reference;
  }
  raw.send(split_block(3, bomb, true));
  EXPECT_EQ(raw.last_error, ConnectionError::none);
  const auto rejected = testing::only<RequestRejectedEvent>(raw.events);
  ASSERT_EQ(rejected.size(), 1U);
  EXPECT_EQ(rejected[0].problem, StreamProblem::head_too_large);
}

TEST(H2Limits, HeaderBlockKeepsNothingPastItsLimit) {
  HeaderBlock block(1000);
  block.add("a", std::string(900, 'x'));
  EXPECT_FALSE(block.too_large());
  EXPECT_EQ(block.fields().size(), 1U);
  block.add("b", std::string(100, 'y'));
  EXPECT_TRUE(block.too_large());
  EXPECT_TRUE(block.fields().empty());
  for (int i = 0; i < 100000; ++i) {
    block.add("c", std::string(1000, 'z'));
  }
  EXPECT_TRUE(block.fields().empty());
  EXPECT_EQ(block.fields().capacity(), 0U);
}

TEST(H2Limits, ADynamicTableLargerThanAdvertisedIsACompressionError) {
  RawClient raw;
  // A dynamic table size update to 8192 (RFC 7541 section 6.3), over the 4096 advertised.
  const std::string update("\x3f\xe1\x3f", 3);
  raw.send(testing::headers_frame(1, update + raw.encoder.encode(request_block("GET", "/")), true));
  EXPECT_EQ(raw.codec.error(), ConnectionError::compression);
  const auto end = goaway(raw.frames());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), NGHTTP2_COMPRESSION_ERROR);

  // At the limit it is fine.
  RawClient fine;
  const std::string update_4096("\x3f\xe1\x1f", 3);
  fine.send(testing::headers_frame(1, update_4096 + fine.encoder.encode(request_block("GET", "/")),
                                   true));
  EXPECT_EQ(fine.codec.error(), ConnectionError::none);
  EXPECT_EQ(testing::only<RequestHeadEvent>(fine.events).size(), 1U);
}

TEST(H2Limits, TheGatesEncoderTableStaysSmallWhateverTheClientAllows) {
  ServerPair pair(ServerOptions{}, {{NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 1 << 20}});
  pair.relay();
  for (int i = 0; i < 20; ++i) {
    const auto id = pair.client().submit_request(request_block("GET", "/"));
    pair.relay();
    ASSERT_EQ(
        pair.codec.submit_response(
            id, ResponseHead{200, {{"x-" + std::to_string(i), std::string(1000, 'v')}}, {}}, true),
        SubmitError::none);
    pair.relay();
  }
  EXPECT_LE(nghttp2_session_get_hd_inflate_dynamic_table_size(pair.client().session()),
            kHpackTableSize);
}

TEST(H2Limits, ContinuationFloodEndsTheConnection) {
  const std::string block = testing::HpackEncoder().encode(request_block("GET", "/"));
  const auto with_continuations = [&](std::size_t count) {
    RawClient raw;
    std::string frames = testing::headers_frame(1, block, true, false);
    for (std::size_t i = 0; i < count; ++i) {
      frames += testing::continuation_frame(1, "", i + 1 == count);
    }
    raw.send(frames);
    return raw.codec.error();
  };
  EXPECT_EQ(with_continuations(kMaxContinuations), ConnectionError::none);
  EXPECT_EQ(with_continuations(kMaxContinuations + 1), ConnectionError::continuation_flood);
  // Endless CONTINUATIONs that never end the block: cut at the limit, whatever follows.
  RawClient raw;
  raw.send(testing::headers_frame(1, block, true, false));
  for (int i = 0; i < 1000 && raw.codec.error() == ConnectionError::none; ++i) {
    raw.send(testing::continuation_frame(1, "", false));
  }
  EXPECT_EQ(raw.codec.error(), ConnectionError::continuation_flood);
  const auto end = goaway(raw.frames());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_TRUE(raw.codec.finished());
}

TEST(H2Limits, RapidResetEndsTheConnectionWithEnhanceYourCalm) {
  ManualClock clock;
  ServerOptions options;
  options.clock = clock.clock();
  RawClient raw(options);
  // The burst passes ...
  std::uint32_t stream = 1;
  for (std::uint32_t i = 0; i < kStreamResetBurst; ++i, stream += 2) {
    raw.send(raw.request(stream, request_block("GET", "/"), false) +
             testing::rst_stream_frame(stream, NGHTTP2_CANCEL));
  }
  EXPECT_EQ(raw.codec.error(), ConnectionError::none);
  // ... one more at the same instant does not.
  raw.send(raw.request(stream, request_block("GET", "/"), false) +
           testing::rst_stream_frame(stream, NGHTTP2_CANCEL));
  EXPECT_EQ(raw.codec.error(), ConnectionError::rapid_reset);
  const auto end = goaway(raw.frames());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_TRUE(raw.codec.finished());
}

TEST(H2Limits, ResetsAtTheSustainedRateAreFine) {
  ManualClock clock;
  ServerOptions options;
  options.clock = clock.clock();
  RawClient raw(options);
  std::uint32_t stream = 1;
  // Five times the burst, at the rate the bucket refills.
  for (std::uint32_t i = 0; i < 5 * kStreamResetBurst; ++i, stream += 2) {
    clock.now += std::chrono::milliseconds(1000 / kStreamResetsPerSecond);
    raw.send(raw.request(stream, request_block("GET", "/"), false) +
             testing::rst_stream_frame(stream, NGHTTP2_CANCEL));
  }
  EXPECT_EQ(raw.codec.error(), ConnectionError::none);
}

TEST(H2Limits, StreamsMadeToBeResetCountAsResets) {
  // "MadeYouReset": malformed requests the gate resets itself count like the client's resets.
  ManualClock clock;
  ServerOptions options;
  options.clock = clock.clock();
  RawClient raw(options);
  std::uint32_t stream = 1;
  for (std::uint32_t i = 0; i <= kStreamResetBurst; ++i, stream += 2) {
    raw.send(raw.request(
        stream, request_block("GET", "/", "example.test", "https", {{"connection", "close"}})));
  }
  EXPECT_EQ(raw.codec.error(), ConnectionError::rapid_reset);
}

// Every way a client can make the gate reset a stream it announced: each such stream cost the
// gate a request's work (its admission, its lines), so each counts as a reset, whichever part of
// the codec (nghttp2 itself, or the gate's checks) made the reset.
TEST(H2Limits, EveryStreamTheClientMakesTheGateResetCountsAsAReset) {
  struct Variant {
    const char* name;
    // The frames of stream `id`: a head that passes, then what gets it reset.
    std::string (*frames)(RawClient& raw, std::uint32_t id);
    // How the connection ends: the limit, or at once as a connection error.
    ConnectionError ends_with = ConnectionError::rapid_reset;
  };
  const Variant variants[] = {
      {"DATA longer than its content-length",
       [](RawClient& raw, std::uint32_t id) {
         return raw.request(
                    id,
                    request_block("POST", "/", "example.test", "https", {{"content-length", "1"}}),
                    false) +
                testing::data_frame(id, "xx", true);
       }},
      {"DATA shorter than its content-length",
       [](RawClient& raw, std::uint32_t id) {
         return raw.request(
                    id,
                    request_block("POST", "/", "example.test", "https", {{"content-length", "5"}}),
                    false) +
                testing::data_frame(id, "x", true);
       }},
      {"DATA after END_STREAM",
       [](RawClient& raw, std::uint32_t id) {
         return raw.request(id, request_block("GET", "/"), true) +
                testing::data_frame(id, "x", true);
       },
       ConnectionError::protocol},
      {"trailers that break the rules",
       [](RawClient& raw, std::uint32_t id) {
         return raw.request(id, request_block("POST", "/"), false) +
                testing::headers_frame(id, raw.encoder.encode({{"host", "elsewhere.test"}}), true);
       }},
  };
  for (const Variant& variant : variants) {
    ManualClock clock;
    ServerOptions options;
    options.clock = clock.clock();
    RawClient raw(options);
    std::uint32_t stream = 1;
    for (std::uint32_t i = 0; i <= kStreamResetBurst && raw.last_error == ConnectionError::none;
         ++i, stream += 2) {
      raw.send(variant.frames(raw, stream));
      raw.frames();
    }
    EXPECT_EQ(raw.codec.error(), variant.ends_with) << variant.name;
    EXPECT_LE(testing::only<RequestHeadEvent>(raw.events).size(), kStreamResetBurst + 1)
        << variant.name;
  }
}

TEST(H2Limits, PingAndSettingsFloodsEndTheConnection) {
  for (const bool settings_frames : {false, true}) {
    ManualClock clock;
    ServerOptions options;
    options.clock = clock.clock();
    RawClient raw(options);  // its first SETTINGS took one token
    const std::string one = settings_frames ? testing::settings({}) : testing::ping_frame();
    for (std::uint32_t i = 1; i < kControlFrameBurst; ++i) {
      raw.send(one);
    }
    EXPECT_EQ(raw.codec.error(), ConnectionError::none) << settings_frames;
    raw.send(one);
    EXPECT_EQ(raw.codec.error(), ConnectionError::control_frame_flood) << settings_frames;
    const auto end = goaway(raw.frames());
    ASSERT_TRUE(end.has_value());
    EXPECT_EQ(end->error_code(), NGHTTP2_ENHANCE_YOUR_CALM);
  }
}

TEST(H2Limits, PingsEarnedByDataSentAreFine) {
  // gRPC's flow-control probe: a PING for each burst of DATA the client receives.
  ManualClock clock;
  ServerOptions options;
  options.clock = clock.clock();
  ServerPair pair(options);
  const auto id = pair.client().submit_request(request_block("GET", "/"));
  pair.relay();
  ASSERT_EQ(pair.codec.submit_response(id, ResponseHead{200, {}, {}}, false), SubmitError::none);
  for (std::uint32_t i = 0; i < 3 * kControlFrameBurst; ++i) {
    ASSERT_TRUE(pair.codec.send_data(id, "d"));
    pair.relay();
    pair.client().ping();
    pair.relay();
  }
  EXPECT_EQ(pair.codec.error(), ConnectionError::none);
  EXPECT_EQ(pair.client().ping_acks, static_cast<int>(3 * kControlFrameBurst));
}

TEST(H2Limits, TooManySettingsEntries) {
  std::vector<std::pair<std::uint16_t, std::uint32_t>> entries;
  for (std::size_t i = 0; i < kMaxSettingsEntries; ++i) {
    entries.emplace_back(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100);
  }
  RawClient fine;
  fine.send(testing::settings(entries));
  EXPECT_EQ(fine.codec.error(), ConnectionError::none);
  entries.emplace_back(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100);
  RawClient raw;
  raw.send(testing::settings(entries));
  EXPECT_EQ(raw.codec.error(), ConnectionError::too_many_settings);
  const auto end = goaway(raw.frames());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), NGHTTP2_ENHANCE_YOUR_CALM);
}

TEST(H2Limits, AcknowledgementsAPeerDoesNotReadEndTheConnection) {
  // The client sends PINGs and never reads: the codec's output batch fills, then nghttp2's queue
  // of acknowledgements, then the connection ends. (The control-frame rate is lifted here, and
  // the batch made small, to reach this limit alone.)
  ServerOptions options;
  options.limits.control_frame_burst = 1000000;
  options.limits.output_batch = 1024;
  ServerCodec codec(options);
  codec.receive(std::string(testing::kPreface) + testing::settings({}));
  const std::size_t fits = 1024 / 17 + 2;  // PING ACKs in the batch, and the SETTINGS
  std::size_t sent = 0;
  while (codec.error() == ConnectionError::none && sent < fits + kMaxQueuedAcks + 10) {
    codec.receive(testing::ping_frame());
    ++sent;
  }
  EXPECT_EQ(codec.error(), ConnectionError::unread_acknowledgements);
  EXPECT_GT(sent, kMaxQueuedAcks);
  EXPECT_LE(sent, fits + kMaxQueuedAcks + 2);
}

TEST(H2Limits, EmptyDataFramesInARow) {
  RawClient raw;
  raw.send(raw.request(1, request_block("POST", "/"), false));
  for (std::uint32_t i = 0; i < kMaxConsecutiveEmptyFrames; ++i) {
    raw.send(testing::data_frame(1, "", false));
  }
  // A frame with bytes ends the run.
  raw.send(testing::data_frame(1, "x", false));
  for (std::uint32_t i = 0; i < kMaxConsecutiveEmptyFrames; ++i) {
    raw.send(testing::data_frame(1, "", false));
  }
  EXPECT_EQ(raw.codec.error(), ConnectionError::none);
  raw.send(testing::data_frame(1, "", false));
  EXPECT_EQ(raw.codec.error(), ConnectionError::empty_frame_flood);
  const auto end = goaway(raw.frames());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), NGHTTP2_ENHANCE_YOUR_CALM);
}

TEST(H2Limits, AStreamOverItsWindowIsResetAlone) {
  RawClient raw;
  raw.send(testing::settings_ack());
  raw.send(raw.request(1, request_block("POST", "/a"), false));
  raw.send(raw.request(3, request_block("POST", "/b"), false));
  raw.frames();  // the gate's SETTINGS, its connection window and its ACK
  const std::string piece(16384, 'w');
  for (int i = 0; i < kStreamWindow / 16384; ++i) {
    raw.send(testing::data_frame(1, piece, false));
  }
  EXPECT_TRUE(raw.frames().empty());  // a whole window, nothing wrong (and nothing consumed)
  raw.send(testing::data_frame(1, "!", false));
  const auto frames = raw.frames();
  const auto reset = RawClient::find(frames, testing::kRstStream, 1);
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->error_code(), NGHTTP2_FLOW_CONTROL_ERROR);
  EXPECT_FALSE(goaway(frames).has_value());
  raw.send(testing::data_frame(3, "still open", true));
  EXPECT_EQ(raw.codec.error(), ConnectionError::none);
  const auto closed = testing::only<StreamClosedEvent>(raw.events);
  ASSERT_EQ(closed.size(), 1U);
  EXPECT_EQ(closed[0].problem, StreamProblem::stream_flow_control);
}

TEST(H2Limits, TheConnectionOverItsWindowEnds) {
  RawClient raw;
  raw.send(testing::settings_ack());
  const std::string piece(16384, 'w');
  const int streams = kConnectionWindow / kStreamWindow;
  for (int s = 0; s < streams; ++s) {
    const auto id = static_cast<std::uint32_t>(1 + 2 * s);
    raw.send(raw.request(id, request_block("POST", "/"), false));
    for (int i = 0; i < kStreamWindow / 16384; ++i) {
      raw.send(testing::data_frame(id, piece, false));
    }
  }
  EXPECT_EQ(raw.codec.error(), ConnectionError::none);
  const auto next = static_cast<std::uint32_t>(1 + 2 * streams);
  raw.send(raw.request(next, request_block("POST", "/"), false));
  raw.send(testing::data_frame(next, "!", false));
  EXPECT_EQ(raw.codec.error(), ConnectionError::flow_control);
  const auto end = goaway(raw.frames());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), NGHTTP2_FLOW_CONTROL_ERROR);
}

TEST(H2Limits, TheConnectionsSendBufferIsShared) {
  // The client reads nothing: its connection window (65535) closes at once, and every stream's
  // body waits in the codec, 64 KiB a stream, 1 MiB the connection: the 17th stream gets no room.
  ServerPair pair(ServerOptions{}, {}, /*client_consumes=*/false);
  const std::size_t fill = kConnectionSendBuffer / kStreamSendBuffer;
  std::vector<StreamId> ids;
  for (std::size_t i = 0; i <= fill; ++i) {
    ids.push_back(pair.client().submit_request(request_block("GET", "/")));
  }
  pair.relay();
  const std::string body(kStreamSendBuffer, 'b');
  std::size_t total = 0;
  for (std::size_t i = 0; i < fill; ++i) {
    ASSERT_EQ(pair.codec.submit_response(ids[i], ResponseHead{200, {}, {}}, false),
              SubmitError::none);
    total += *pair.codec.send_data(ids[i], body);
  }
  pair.relay();
  const StreamId last = ids.back();
  ASSERT_EQ(pair.codec.submit_response(last, ResponseHead{200, {}, {}}, false), SubmitError::none);
  EXPECT_LE(pair.codec.send_capacity(last), 65535U);  // only what the client's window took
  EXPECT_EQ(*pair.codec.send_data(last, body), pair.codec.send_capacity(last));
  EXPECT_EQ(total, fill * kStreamSendBuffer);
}

TEST(H2Limits, TheConnectionsHeadBytesAreBounded) {
  // Heads of 60 KiB each, none answered: the stream whose head would pass 2 MiB in all is
  // refused with REFUSED_STREAM; once one closes, room again.
  RawClient raw;
  const FieldList big = request_of_list_size(60 * 1024);
  const std::size_t fit = kConnectionHeadBytes / (60 * 1024);
  std::uint32_t stream = 1;
  for (std::size_t i = 0; i < fit; ++i, stream += 2) {
    raw.send(split_block(stream, raw.encoder.encode(big), true));
  }
  EXPECT_EQ(testing::only<RequestHeadEvent>(raw.events).size(), fit);
  raw.send(split_block(stream, raw.encoder.encode(big), true));
  const auto refused = RawClient::find(raw.frames(), testing::kRstStream, stream);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error_code(), NGHTTP2_REFUSED_STREAM);
  const auto rejected = testing::only<RequestRejectedEvent>(raw.events);
  ASSERT_EQ(rejected.size(), 1U);
  EXPECT_EQ(rejected[0].problem, StreamProblem::too_many_open_heads);
  // The first stream answered and closed: its head's bytes are free again.
  ASSERT_EQ(raw.codec.submit_response(1, ResponseHead{200, {}, {}}, true), SubmitError::none);
  raw.frames();
  stream += 2;
  raw.send(split_block(stream, raw.encoder.encode(big), true));
  EXPECT_EQ(testing::only<RequestHeadEvent>(raw.events).size(), fit + 1);
}

TEST(H2Limits, TrailersCountWithTheHeads) {
  ServerOptions options;
  options.limits.connection_head_bytes = 8 * 1024;
  RawClient raw(options);
  raw.send(raw.request(1, request_block("POST", "/"), false));
  raw.send(split_block(1, raw.encoder.encode({{"x-trailer", std::string(9000, 't')}}), true));
  const auto reset = RawClient::find(raw.frames(), testing::kRstStream, 1);
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->error_code(), NGHTTP2_ENHANCE_YOUR_CALM);
  const auto closed = testing::only<StreamClosedEvent>(raw.events);
  ASSERT_EQ(closed.size(), 1U);
  EXPECT_EQ(closed[0].problem, StreamProblem::too_many_open_heads);
}

TEST(H2Limits, AnOriginsHeadsCountAgainstTheConnectionsBudget) {
  ClientOptions options;
  options.limits.connection_head_bytes = 10 * 1024;
  ClientPair pair(options);
  pair.auto_consume = false;
  pair.relay();
  std::vector<StreamId> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(*pair.codec.submit_request(
        RequestHead{"GET", "https", "origin.test", "/", {}, {}, {}}, true));
  }
  pair.relay();
  for (const StreamId id : ids) {
    // Bodies that do not end: the streams stay open, their heads held.
    pair.server().submit_headers(id, {{":status", "200"}, {"x-h", std::string(4000, 'h')}}, false);
  }
  pair.relay();
  EXPECT_EQ(pair.all<ResponseHeadEvent>().size(), 2U);
  ASSERT_NE(pair.closed(ids[2]), nullptr);
  EXPECT_EQ(pair.closed(ids[2])->problem, StreamProblem::too_many_open_heads);
  EXPECT_EQ(pair.server().streams[ids[2]].reset, NGHTTP2_CANCEL);
}

// An origin connection is shared by many clients' streams: the bytes one stream holds (its
// client not reading) hold its own window, never the connection's, or the other streams wait.
TEST(H2Limits, AnOriginsBytesHeldForAStreamDoNotHoldTheConnectionsWindow) {
  ClientOptions options;
  options.limits.stream_window = 64 * 1024;
  options.limits.connection_window = 64 * 1024;
  ClientPair pair(options);
  pair.auto_consume = false;
  pair.relay();
  const RequestHead get{"GET", "https", "origin.test", "/", {}, {}, {}};
  const StreamId held = *pair.codec.submit_request(get, true);
  const StreamId other = *pair.codec.submit_request(get, true);
  pair.relay();
  pair.server().submit_response(held, {{":status", "200"}}, std::string(64 * 1024 + 1, 'h'));
  pair.relay();
  EXPECT_EQ(pair.body(held).size(), 64U * 1024);  // its window's worth, never consumed
  pair.server().submit_response(other, {{":status", "200"}}, std::string(10 * 1024, 'o'));
  pair.relay();
  EXPECT_EQ(pair.body(other).size(), 10U * 1024);
  EXPECT_EQ(pair.closed(held), nullptr);
}

// What the gate holds for an origin connection's streams is bounded all together: past
// Limits::origin_held_bytes, the stream holding the most is reset (CANCEL) and the others go on.
TEST(H2Limits, PastWhatTheGateHoldsForAnOriginTheStreamHoldingTheMostIsReset) {
  ClientOptions options;
  options.limits.stream_window = 64 * 1024;
  options.limits.origin_held_bytes = 100 * 1024;
  ClientPair pair(options);
  pair.auto_consume = false;
  pair.relay();
  const RequestHead get{"GET", "https", "origin.test", "/", {}, {}, {}};
  const StreamId most = *pair.codec.submit_request(get, true);
  const StreamId less = *pair.codec.submit_request(get, true);
  pair.relay();
  pair.server().submit_response(most, {{":status", "200"}}, std::string(64 * 1024 + 1, 'm'));
  pair.relay();
  EXPECT_EQ(pair.closed(most), nullptr);  // 64 KiB held: under the bound
  pair.server().submit_response(less, {{":status", "200"}}, std::string(100 * 1024, 'l'));
  pair.relay();
  ASSERT_NE(pair.closed(most), nullptr);
  EXPECT_EQ(pair.closed(most)->problem, StreamProblem::held_too_much);
  EXPECT_EQ(pair.server().streams[most].reset, NGHTTP2_CANCEL);
  EXPECT_EQ(pair.closed(less), nullptr);
  EXPECT_EQ(pair.body(less).size(), 64U * 1024);  // its window's worth
  // Forwarded, the rest comes.
  pair.codec.consume(less, 64 * 1024);
  pair.relay();
  EXPECT_EQ(pair.body(less).size(), 100U * 1024);
  ASSERT_NE(pair.closed(less), nullptr);
  EXPECT_EQ(pair.closed(less)->by, Closer::finished);
}

TEST(H2Limits, TrailersOverTheListLimitResetTheStream) {
  RawClient raw;
  raw.send(raw.request(1, request_block("POST", "/"), false));
  FieldList trailers;
  for (int i = 0; i < 20; ++i) {
    trailers.push_back(Field{"x-t" + std::to_string(i), std::string(4000, 't')});
  }
  raw.send(split_block(1, raw.encoder.encode(trailers), true));
  const auto reset = RawClient::find(raw.frames(), testing::kRstStream, 1);
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->error_code(), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_TRUE(testing::only<TrailersEvent>(raw.events).empty());
  const auto closed = testing::only<StreamClosedEvent>(raw.events);
  ASSERT_EQ(closed.size(), 1U);
  EXPECT_EQ(closed[0].problem, StreamProblem::trailers_too_large);
}

TEST(H2Limits, AnOriginsResponseHeadOverTheListLimitCancelsItsStream) {
  ClientCodec codec;
  const auto id =
      codec.submit_request(RequestHead{"GET", "https", "origin.test", "/", {}, {}, {}}, true);
  ASSERT_TRUE(id);
  codec.consume_output(codec.pending_output().size());
  testing::HpackEncoder encoder;
  FieldList head{{":status", "200"}};
  for (int i = 0; i < 20; ++i) {
    head.push_back(Field{"x-h" + std::to_string(i), std::string(4000, 'h')});
  }
  codec.receive(testing::settings({}) +
                split_block(static_cast<std::uint32_t>(*id), encoder.encode(head), true));
  const auto frames = testing::read_frames(codec.pending_output());
  const auto reset = RawClient::find(frames, testing::kRstStream, static_cast<std::uint32_t>(*id));
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->error_code(), NGHTTP2_CANCEL);
  std::vector<ClientEvent> events;
  while (auto event = codec.next_event()) {
    events.push_back(std::move(*event));
  }
  EXPECT_TRUE(testing::only<ResponseHeadEvent>(events).empty());
  const auto closed = testing::only<StreamClosedEvent>(events);
  ASSERT_EQ(closed.size(), 1U);
  EXPECT_EQ(closed[0].problem, StreamProblem::head_too_large);
}

TEST(H2Limits, AnOriginsPingFloodEndsTheConnection) {
  ManualClock clock;
  ClientOptions options;
  options.clock = clock.clock();
  ClientCodec codec(options);
  codec.receive(testing::settings({}));
  for (std::uint32_t i = 1; i <= kControlFrameBurst; ++i) {
    codec.receive(testing::ping_frame());
  }
  EXPECT_EQ(codec.error(), ConnectionError::control_frame_flood);
}

}  // namespace
}  // namespace sandgate::session::exchange::h2
