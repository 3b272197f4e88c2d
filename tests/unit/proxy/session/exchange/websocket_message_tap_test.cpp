// The message tap (websocket_message_tap.hpp): each message's first 1 KiB for its log line, a
// client's unmasked, cleaned of a secret's real value wherever it is cut (across frames, across
// messages, at the edge of what is shown), the message's size whole, an unfinished one logged at
// the end.
#include "proxy/session/exchange/websocket_message_tap.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proxy/secrets/secret_spec.hpp"

namespace sandgate::session::exchange {
namespace {

constexpr const char* kToken = "ghp_realrealrealrealrealrealrealreal1234";
constexpr const char* kSentinel = "ghp_SENTINELsentinelSENTINELsentinel5678";

struct Logged {
  bool upward;
  bool text;
  std::uint64_t size;
  std::string shown;
  bool finished;
};

class Lines final : public MessageLog {
 public:
  void message(const LoggedMessage& m) override {
    lines.push_back({m.upward, m.text, m.size, std::string(m.shown), m.finished});
  }
  std::vector<Logged> lines;
};

class MessageTapTest : public ::testing::Test {
 protected:
  MessageTapTest()
      : secrets_(secrets::MaskedSecrets::with(
            {{*secrets::parse_secret_spec("GITHUB_TOKEN=api.github.com"), kToken, kSentinel}})) {}

  // One frame through the tap, its payload in pieces of `piece` bytes; masked when `mask`.
  static void frame(MessageTap& tap, bool upward, bool fin, Opcode opcode,
                    const std::string& payload, std::size_t piece = 7,
                    const std::array<std::uint8_t, 4>* mask = nullptr) {
    FrameHeader header;
    header.fin = fin;
    header.opcode = opcode;
    header.length = payload.size();
    std::string wire = payload;
    if (mask != nullptr) {
      header.masked = true;
      header.mask = *mask;
      for (std::size_t i = 0; i < wire.size(); ++i) {
        wire[i] = static_cast<char>(wire[i] ^ (*mask)[i % 4]);
      }
    }
    tap.frame_begins(upward, header);
    for (std::size_t at = 0; at < wire.size(); at += piece) {
      tap.payload(upward, std::string_view(wire).substr(at, piece));
    }
    tap.frame_ends(upward, fin);
  }

  std::shared_ptr<const secrets::MaskedSecrets> secrets_;
};

TEST_F(MessageTapTest, AClientsMaskedFramesAreLoggedUnmaskedAsOneMessage) {
  Lines lines;
  MessageTap tap(lines, nullptr);
  const std::array<std::uint8_t, 4> mask{0x12, 0x34, 0x56, 0x78};
  frame(tap, true, false, Opcode::text, "hello, ", 3, &mask);
  EXPECT_TRUE(lines.lines.empty());  // not before its last frame
  frame(tap, true, true, Opcode::continuation, "world", 2, &mask);
  frame(tap, false, true, Opcode::binary, std::string("\x00\x01\xff", 3));
  ASSERT_EQ(lines.lines.size(), 2u);
  EXPECT_TRUE(lines.lines[0].upward);
  EXPECT_TRUE(lines.lines[0].text);
  EXPECT_EQ(lines.lines[0].shown, "hello, world");
  EXPECT_EQ(lines.lines[0].size, 12u);
  EXPECT_TRUE(lines.lines[0].finished);
  EXPECT_FALSE(lines.lines[1].upward);
  EXPECT_FALSE(lines.lines[1].text);
  EXPECT_EQ(lines.lines[1].shown, std::string("\x00\x01\xff", 3));
}

TEST_F(MessageTapTest, ALongMessageShowsItsFirstKibibyteAndItsWholeSize) {
  Lines lines;
  MessageTap tap(lines, nullptr);
  const std::string payload(100000, 'x');
  frame(tap, false, true, Opcode::text, payload, 4096);
  ASSERT_EQ(lines.lines.size(), 1u);
  EXPECT_EQ(lines.lines[0].shown.size(), MessageTap::kShown);
  EXPECT_EQ(lines.lines[0].size, payload.size());
}

// A real value is cleaned whichever way it went and however it is cut: inside one frame, across
// frames, across the end of one message and the start of the next, and where the shown part ends.
TEST_F(MessageTapTest, ARealValueIsCleanedWhereverItIsCut) {
  Lines lines;
  MessageTap tap(lines, &secrets_->redactions());
  const std::string token = kToken;
  const std::string sentinel = kSentinel;
  frame(tap, false, true, Opcode::text, "whole " + token + " end");
  frame(tap, false, false, Opcode::text, "frames " + token.substr(0, 11));
  frame(tap, false, true, Opcode::continuation, token.substr(11) + " end");
  frame(tap, false, true, Opcode::text, "halves " + token.substr(0, 20));
  frame(tap, false, true, Opcode::text, token.substr(20) + " end");
  const std::array<std::uint8_t, 4> mask{1, 2, 3, 4};
  frame(tap, true, true, Opcode::text, "up " + token, 5, &mask);
  // Starting 10 bytes before the shown part ends, ending past it.
  frame(tap, false, true, Opcode::text,
        std::string(MessageTap::kShown - 10, '.') + token + std::string(50, '.'), 100);
  ASSERT_EQ(lines.lines.size(), 6u);
  for (const auto& line : lines.lines) {
    EXPECT_EQ(line.shown.find("realreal"), std::string::npos) << line.shown;
  }
  EXPECT_EQ(lines.lines[0].shown, "whole " + sentinel + " end");
  EXPECT_EQ(lines.lines[1].shown, "frames " + sentinel + " end");
  EXPECT_EQ(lines.lines[2].shown, "halves " + sentinel.substr(0, 20));
  EXPECT_EQ(lines.lines[3].shown, sentinel.substr(20) + " end");
  EXPECT_EQ(lines.lines[4].shown, "up " + sentinel);
  EXPECT_EQ(lines.lines[5].shown,
            std::string(MessageTap::kShown - 10, '.') + sentinel.substr(0, 10));
}

TEST_F(MessageTapTest, AMessageTheWebSocketEndsInTheMiddleOfIsLoggedUnfinished) {
  Lines lines;
  MessageTap tap(lines, nullptr);
  frame(tap, true, false, Opcode::text, "half a");
  tap.finish();
  ASSERT_EQ(lines.lines.size(), 1u);
  EXPECT_FALSE(lines.lines[0].finished);
  EXPECT_EQ(lines.lines[0].shown, "half a");
  tap.finish();  // once only
  EXPECT_EQ(lines.lines.size(), 1u);
}

}  // namespace
}  // namespace sandgate::session::exchange
