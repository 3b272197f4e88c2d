// RFC 6455 frames (proxy/session/exchange/websocket_frame.hpp): every header form, each refusal
// with its close code, the order of fragments, each limit exceeded, close payloads, and the
// upgrade's checks (websocket_handshake.hpp).
#include "proxy/session/exchange/websocket_frame.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http/message.hpp>
#include <string>

#include "proxy/session/exchange/websocket_handshake.hpp"

namespace sandgate::session::exchange {
namespace {

namespace http = boost::beast::http;

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) {
    out.push_back(static_cast<char>(v));
  }
  return out;
}

constexpr std::array<std::uint8_t, 4> kMask{1, 2, 3, 4};

TEST(WebSocketFrame, EveryLengthFormReadsBackAsWritten) {
  for (const std::uint64_t length : {0ULL, 1ULL, 125ULL, 126ULL, 65535ULL, 65536ULL, 1ULL << 40}) {
    for (const bool masked : {false, true}) {
      const std::string header =
          encode_frame_header(true, Opcode::binary, length, masked ? &kMask : nullptr);
      const HeaderRead read = read_frame_header(header, masked ? Sender::client : Sender::server);
      ASSERT_EQ(read.status, HeaderRead::Status::ok) << length;
      EXPECT_EQ(read.header.length, length);
      EXPECT_EQ(read.header.header_size, header.size());
      EXPECT_EQ(read.header.masked, masked);
      if (masked) {
        EXPECT_EQ(read.header.mask, kMask);
      }
      // Every proper prefix asks for more.
      for (std::size_t cut = 0; cut < header.size(); ++cut) {
        EXPECT_EQ(read_frame_header(header.substr(0, cut), masked ? Sender::client : Sender::server)
                      .status,
                  HeaderRead::Status::need_more)
            << length << " cut at " << cut;
      }
    }
  }
  EXPECT_EQ(encode_frame_header(true, Opcode::text, 125).size(), 2U);
  EXPECT_EQ(encode_frame_header(true, Opcode::text, 126).size(), 4U);
  EXPECT_EQ(encode_frame_header(true, Opcode::text, 65536).size(), 10U);
}

struct Refused {
  const char* what;
  std::string header;
  Sender sender;
  FrameError error;
};

TEST(WebSocketFrame, MalformedHeadersAreRefusedWithTheirReason) {
  const std::vector<Refused> cases = {
      {"RSV1 (permessage-deflate's bit) with no extension", bytes({0xc1, 0x00}), Sender::server,
       FrameError::reserved_bits},
      {"RSV2", bytes({0xa1, 0x00}), Sender::server, FrameError::reserved_bits},
      {"RSV3", bytes({0x91, 0x00}), Sender::server, FrameError::reserved_bits},
      {"opcode 3", bytes({0x83, 0x00}), Sender::server, FrameError::unknown_opcode},
      {"opcode 7", bytes({0x87, 0x00}), Sender::server, FrameError::unknown_opcode},
      {"opcode 11", bytes({0x8b, 0x00}), Sender::server, FrameError::unknown_opcode},
      {"opcode 15", bytes({0x8f, 0x00}), Sender::server, FrameError::unknown_opcode},
      {"a client frame unmasked", bytes({0x81, 0x00}), Sender::client,
       FrameError::client_frame_unmasked},
      {"a server frame masked", bytes({0x81, 0x80, 1, 2, 3, 4}), Sender::server,
       FrameError::server_frame_masked},
      {"16-bit length for 125", bytes({0x82, 126, 0x00, 125}), Sender::server,
       FrameError::length_not_minimal},
      {"64-bit length for 65535", bytes({0x82, 127, 0, 0, 0, 0, 0, 0, 0xff, 0xff}), Sender::server,
       FrameError::length_not_minimal},
      {"64-bit length for 10", bytes({0x82, 127, 0, 0, 0, 0, 0, 0, 0, 10}), Sender::server,
       FrameError::length_not_minimal},
      {"64-bit length with its top bit", bytes({0x82, 127, 0x80, 0, 0, 0, 0, 1, 0, 0}),
       Sender::server, FrameError::length_too_long},
      {"a ping of 126 bytes", bytes({0x89, 126, 0, 126}), Sender::server,
       FrameError::control_frame_too_long},
      {"a close without FIN", bytes({0x08, 0x00}), Sender::server,
       FrameError::control_frame_fragmented},
      {"a pong without FIN", bytes({0x0a, 0x80, 1, 2, 3, 4}), Sender::client,
       FrameError::control_frame_fragmented},
  };
  for (const auto& c : cases) {
    const HeaderRead read = read_frame_header(c.header, c.sender);
    EXPECT_EQ(read.status, HeaderRead::Status::refused) << c.what;
    EXPECT_EQ(read.error, c.error) << c.what << ": " << describe(read.error);
    EXPECT_EQ(close_code_for(read.error), kCloseProtocolError) << c.what;
  }
  // A bit an extension gives a meaning passes when it was negotiated (none is, by the gate).
  EXPECT_EQ(read_frame_header(bytes({0xc1, 0x00}), Sender::server, 0x40).status,
            HeaderRead::Status::ok);
}

FrameHeader frame(Opcode opcode, bool fin, std::uint64_t length) {
  FrameHeader h;
  h.opcode = opcode;
  h.fin = fin;
  h.length = length;
  return h;
}

TEST(WebSocketFrame, FragmentsFollowTheirMessageAndControlFramesMayComeBetween) {
  MessageSequence sequence;
  EXPECT_EQ(sequence.accept(frame(Opcode::text, false, 3)), FrameError::none);
  EXPECT_TRUE(sequence.in_message());
  EXPECT_EQ(sequence.accept(frame(Opcode::ping, true, 0)), FrameError::none);
  EXPECT_EQ(sequence.accept(frame(Opcode::continuation, false, 3)), FrameError::none);
  EXPECT_EQ(sequence.accept(frame(Opcode::continuation, true, 3)), FrameError::none);
  EXPECT_TRUE(sequence.message_ended());
  EXPECT_EQ(sequence.accept(frame(Opcode::binary, true, 0)), FrameError::none);
  EXPECT_EQ(sequence.messages(), 2U);

  MessageSequence orphan;
  EXPECT_EQ(orphan.accept(frame(Opcode::continuation, true, 1)),
            FrameError::continuation_unexpected);
  MessageSequence interleaved;
  EXPECT_EQ(interleaved.accept(frame(Opcode::binary, false, 1)), FrameError::none);
  EXPECT_EQ(interleaved.accept(frame(Opcode::text, true, 1)), FrameError::message_unfinished);
}

TEST(WebSocketFrame, AFrameOverTheFrameLimitIsRefusedWith1009) {
  MessageSequence sequence(FrameLimits{.max_frame = 1000, .max_message = 1'000'000});
  EXPECT_EQ(sequence.accept(frame(Opcode::binary, true, 1000)), FrameError::none);
  const FrameError error = sequence.accept(frame(Opcode::binary, true, 1001));
  EXPECT_EQ(error, FrameError::frame_too_large);
  EXPECT_EQ(close_code_for(error), kCloseMessageTooBig);
}

TEST(WebSocketFrame, AMessageOverTheMessageLimitIsRefusedWith1009EvenInSmallFragments) {
  MessageSequence sequence(FrameLimits{.max_frame = 100, .max_message = 250});
  EXPECT_EQ(sequence.accept(frame(Opcode::binary, false, 100)), FrameError::none);
  EXPECT_EQ(sequence.accept(frame(Opcode::continuation, false, 100)), FrameError::none);
  EXPECT_EQ(sequence.accept(frame(Opcode::continuation, false, 50)), FrameError::none);
  const FrameError error = sequence.accept(frame(Opcode::continuation, true, 1));
  EXPECT_EQ(error, FrameError::message_too_large);
  EXPECT_EQ(close_code_for(error), kCloseMessageTooBig);
  // A new message starts counting again.
  MessageSequence next(FrameLimits{.max_frame = 100, .max_message = 250});
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(next.accept(frame(Opcode::text, true, 100)), FrameError::none);
  }
}

TEST(WebSocketFrame, ClosePayloadsAndCodes) {
  ClosePayload close;
  EXPECT_EQ(read_close_payload("", close), FrameError::none);
  EXPECT_FALSE(close.code);
  EXPECT_EQ(read_close_payload(bytes({0x03}), close), FrameError::close_payload_malformed);
  for (const int code : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1014, 3000, 4999}) {
    EXPECT_EQ(read_close_payload(bytes({code >> 8, code & 0xff}) + "why", close), FrameError::none)
        << code;
    EXPECT_EQ(close.code, code);
    EXPECT_EQ(close.reason, "why");
  }
  for (const int code : {0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535}) {
    EXPECT_EQ(read_close_payload(bytes({code >> 8, code & 0xff}), close),
              FrameError::close_code_invalid)
        << code;
  }
}

TEST(WebSocketFrame, TheGatesCloseFrameIsAValidFrameMaskedOnlyTowardsAServer) {
  const std::string to_client = encode_close_frame(kClosePolicyViolation, "budget spent");
  HeaderRead read = read_frame_header(to_client, Sender::server);
  ASSERT_EQ(read.status, HeaderRead::Status::ok);
  EXPECT_EQ(read.header.opcode, Opcode::close);
  ClosePayload close;
  ASSERT_EQ(read_close_payload(to_client.substr(read.header.header_size), close), FrameError::none);
  EXPECT_EQ(close.code, kClosePolicyViolation);
  EXPECT_EQ(close.reason, "budget spent");

  const std::string to_server = encode_close_frame(kCloseProtocolError, "bad", &kMask);
  read = read_frame_header(to_server, Sender::client);
  ASSERT_EQ(read.status, HeaderRead::Status::ok);
  std::string payload = to_server.substr(read.header.header_size);
  apply_mask(payload.data(), payload.size(), read.header.mask, 0);
  ASSERT_EQ(read_close_payload(payload, close), FrameError::none);
  EXPECT_EQ(close.code, kCloseProtocolError);
  // A reason that would not fit is cut to the 125 bytes a control frame holds.
  const std::string long_close = encode_close_frame(kCloseNormal, std::string(300, 'x'));
  EXPECT_EQ(read_frame_header(long_close, Sender::server).header.length, 125U);
}

TEST(WebSocketFrame, MaskingAtAnOffsetMatchesMaskingWhole) {
  std::string whole = "the quick brown fox";
  std::string pieces = whole;
  apply_mask(whole.data(), whole.size(), kMask, 0);
  apply_mask(pieces.data(), 5, kMask, 0);
  apply_mask(pieces.data() + 5, pieces.size() - 5, kMask, 5);
  EXPECT_EQ(whole, pieces);
}

http::request_header<> upgrade_request() {
  http::request_header<> request;
  request.set(http::field::upgrade, "websocket");
  request.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  request.set(http::field::sec_websocket_extensions, "permessage-deflate; client_max_window_bits");
  request.set(http::field::sec_websocket_protocol, "chat, superchat");
  return request;
}

TEST(WebSocketHandshake, NoExtensionIsOfferedAndTheOriginMustAnswerTheKey) {
  http::request_header<> request = upgrade_request();
  offer_no_extensions(request);
  EXPECT_EQ(request.count(http::field::sec_websocket_extensions), 0U);
  // RFC 6455 section 1.3's own example.
  EXPECT_EQ(accept_for("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");

  http::response_header<> response;
  response.result(http::status::switching_protocols);
  response.set(http::field::sec_websocket_accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_FALSE(upgrade_problem(request, response));
  response.set(http::field::sec_websocket_protocol, "chat");
  EXPECT_FALSE(upgrade_problem(request, response));

  http::response_header<> wrong_key = response;
  wrong_key.set(http::field::sec_websocket_accept, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  EXPECT_TRUE(upgrade_problem(request, wrong_key));
  http::response_header<> no_key = response;
  no_key.erase(http::field::sec_websocket_accept);
  EXPECT_TRUE(upgrade_problem(request, no_key));
  // The origin chose permessage-deflate, which the gate took out of the offer.
  http::response_header<> deflate = response;
  deflate.set(http::field::sec_websocket_extensions, "permessage-deflate");
  const auto problem = upgrade_problem(request, deflate);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("permessage-deflate"), std::string::npos);
  http::response_header<> other_protocol = response;
  other_protocol.set(http::field::sec_websocket_protocol, "mqtt");
  EXPECT_TRUE(upgrade_problem(request, other_protocol));
}

// Over HTTP/2 (RFC 8441 section 5) no key and no accept are exchanged: only the choices are
// checked, as after the key on HTTP/1.1.
TEST(WebSocketHandshake, OverHttp2OnlyTheChoicesAreChecked) {
  http::request_header<> request;
  request.set(http::field::sec_websocket_protocol, "chat, superchat");
  request.set(http::field::sec_websocket_extensions, "permessage-deflate");
  offer_no_extensions(request);
  http::response_header<> response;
  EXPECT_FALSE(choice_problem(request, response));
  response.set(http::field::sec_websocket_protocol, "superchat");
  EXPECT_FALSE(choice_problem(request, response));
  http::response_header<> deflate = response;
  deflate.set(http::field::sec_websocket_extensions, "permessage-deflate; server_no_context");
  EXPECT_TRUE(choice_problem(request, deflate));
  http::response_header<> two = response;
  two.insert(http::field::sec_websocket_protocol, "chat");
  EXPECT_TRUE(choice_problem(request, two));
  http::response_header<> other = response;
  other.set(http::field::sec_websocket_protocol, "mqtt");
  EXPECT_TRUE(choice_problem(request, other));
}

}  // namespace
}  // namespace sandgate::session::exchange
