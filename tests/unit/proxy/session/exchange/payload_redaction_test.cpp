// The stage that cleans an origin's WebSocket payloads (payload_redaction.hpp): a secret's echo
// split anywhere across frames and messages comes out as the sentinel, every frame keeps its
// header and its length, and what is held goes when the stream pauses or a control frame comes.
#include "proxy/session/exchange/payload_redaction.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "proxy/secrets/secret_spec.hpp"
#include "proxy/session/exchange/websocket_frame.hpp"

namespace sandgate::session::exchange {
namespace {

constexpr const char* kToken = "ghp_realrealrealrealrealrealrealreal1234";
constexpr const char* kSentinel = "ghp_SENTINELsentinelSENTINELsentinel5678";

class PayloadRedactionTest : public ::testing::Test {
 protected:
  PayloadRedactionTest()
      : secrets_(secrets::MaskedSecrets::with(
            {{*secrets::parse_secret_spec("GITHUB_TOKEN=api.github.com"), kToken, kSentinel}})) {}

  // Runs `payloads` (one frame each; `fins` says which end a message) through the stage in
  // pieces of `piece` bytes, then flushes; returns what it wrote.
  std::string run(const std::vector<std::string>& payloads, const std::vector<bool>& fins,
                  std::size_t piece) {
    PayloadRedaction stage(secrets_->redactions());
    std::string out;
    bool in_message = false;
    for (std::size_t i = 0; i < payloads.size(); ++i) {
      const Opcode opcode = in_message ? Opcode::continuation : Opcode::text;
      in_message = !fins[i];
      stage.frame_begins(encode_frame_header(fins[i], opcode, payloads[i].size()),
                         payloads[i].size());
      if (payloads[i].empty()) {
        stage.pass(0, out);
      }
      for (std::size_t at = 0; at < payloads[i].size(); at += piece) {
        const std::size_t n = std::min(piece, payloads[i].size() - at);
        std::memcpy(stage.fresh_space(), payloads[i].data() + at, n);
        stage.pass(n, out);
      }
    }
    stage.flush(out);
    EXPECT_TRUE(stage.between_frames());
    EXPECT_EQ(stage.held(), 0U);
    return out;
  }

  // Reads `wire` back as frames: each payload, in order.
  static std::vector<std::string> frames_of(const std::string& wire) {
    std::vector<std::string> payloads;
    std::string_view rest = wire;
    while (!rest.empty()) {
      const HeaderRead read = read_frame_header(rest, Sender::server);
      EXPECT_EQ(read.status, HeaderRead::Status::ok);
      if (read.status != HeaderRead::Status::ok) {
        break;
      }
      payloads.emplace_back(rest.substr(read.header.header_size, read.header.length));
      rest.remove_prefix(read.header.header_size + read.header.length);
    }
    return payloads;
  }

  std::shared_ptr<const secrets::MaskedSecrets> secrets_;
};

TEST_F(PayloadRedactionTest,
       AnEchoSplitAcrossFramesAndMessagesIsCleanedAndEveryFrameKeepsItsLength) {
  const std::string text = std::string("{\"token\":\"") + kToken + "\"} and again " + kToken + ".";
  const std::string cleaned =
      std::string("{\"token\":\"") + kSentinel + "\"} and again " + kSentinel + ".";
  // Every cut of the text into three frames: the first two one message, the third another.
  for (std::size_t a = 0; a <= text.size(); a += 3) {
    for (std::size_t b = a; b <= text.size(); b += 5) {
      const std::vector<std::string> payloads = {text.substr(0, a), text.substr(a, b - a),
                                                 text.substr(b)};
      for (const std::size_t piece : {1UL, 7UL, 64UL * 1024}) {
        const std::vector<std::string> out = frames_of(run(payloads, {false, true, true}, piece));
        ASSERT_EQ(out.size(), 3U) << a << " " << b;
        EXPECT_EQ(out[0].size(), payloads[0].size());
        EXPECT_EQ(out[1].size(), payloads[1].size());
        EXPECT_EQ(out[2].size(), payloads[2].size());
        EXPECT_EQ(out[0] + out[1] + out[2], cleaned) << a << " " << b << " piece " << piece;
      }
    }
  }
}

TEST_F(PayloadRedactionTest, EmptyFramesKeepTheirPlace) {
  const std::vector<std::string> out =
      frames_of(run({"", std::string("a ") + kToken, "", "end"}, {false, true, true, true}, 5));
  ASSERT_EQ(out.size(), 4U);
  EXPECT_EQ(out[0], "");
  EXPECT_EQ(out[1], std::string("a ") + kSentinel);
  EXPECT_EQ(out[2], "");
  EXPECT_EQ(out[3], "end");
}

TEST_F(PayloadRedactionTest, AHeldTailWaitsForTheNextBytesOrAFlushNeverPassesInsideAFrame) {
  PayloadRedaction stage(secrets_->redactions());
  const std::string first = std::string("x ") + std::string(kToken).substr(0, 20);
  stage.frame_begins(encode_frame_header(true, Opcode::text, first.size()), first.size());
  std::memcpy(stage.fresh_space(), first.data(), first.size());
  std::string out;
  stage.pass(first.size(), out);
  // The beginning of the secret (more than 40 bits of it) is held: the frame is not whole yet.
  EXPECT_GT(stage.held(), 0U);
  EXPECT_FALSE(stage.between_frames());
  EXPECT_EQ(out.find(std::string(kToken).substr(4, 16)), std::string::npos);
  // A pause does not let a strong hold go; a flush (a control frame next) does, cleaned.
  stage.on_pause(out);
  EXPECT_FALSE(stage.between_frames());
  stage.flush(out);
  EXPECT_TRUE(stage.between_frames());
  const std::vector<std::string> frames = frames_of(out);
  ASSERT_EQ(frames.size(), 1U);
  EXPECT_EQ(frames[0].size(), first.size());
  EXPECT_EQ(frames[0].find(std::string(kToken).substr(4, 16)), std::string::npos) << frames[0];
}

}  // namespace
}  // namespace sandgate::session::exchange
