// The SSH disconnect sandgate-connect writes to ssh on a refusal (connect-proxy/ssh_disconnect):
// RFC 4253's binary packet framing for every description length (padding of 4 or more bytes to
// a multiple of 8), the description made one printable line and cut at OpenSSH's 400
// characters without splitting UTF-8, and the reason code per HTTP status. ssh itself reading
// it is tests/e2e/ssh_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "connect-proxy/ssh_disconnect.hpp"

namespace sandgate::connect_proxy {
namespace {

constexpr std::string_view kBanner = "SSH-2.0-sandgate-connect\r\n";

std::uint32_t u32(const std::string& bytes, std::size_t at) {
  return (std::uint32_t(std::uint8_t(bytes[at])) << 24) |
         (std::uint32_t(std::uint8_t(bytes[at + 1])) << 16) |
         (std::uint32_t(std::uint8_t(bytes[at + 2])) << 8) | std::uint8_t(bytes[at + 3]);
}

struct Parsed {
  std::uint32_t reason = 0;
  std::string description;
  std::string language;
  std::size_t padding = 0;
};

// Parses the stream as ssh would, checking the framing on the way.
Parsed parse(const std::string& stream) {
  Parsed parsed;
  EXPECT_EQ(stream.substr(0, kBanner.size()), kBanner);
  const std::string packet = stream.substr(kBanner.size());
  const std::uint32_t length = u32(packet, 0);
  EXPECT_EQ(packet.size(), 4u + length);
  EXPECT_EQ(packet.size() % 8, 0u);
  parsed.padding = std::uint8_t(packet[4]);
  EXPECT_GE(parsed.padding, 4u);
  EXPECT_LT(parsed.padding, 4u + 8u);
  EXPECT_EQ(packet[5], 1);  // SSH_MSG_DISCONNECT
  parsed.reason = u32(packet, 6);
  const std::uint32_t text = u32(packet, 10);
  parsed.description = packet.substr(14, text);
  const std::uint32_t language = u32(packet, 14 + text);
  parsed.language = packet.substr(18 + text, language);
  EXPECT_EQ(18 + text + language + parsed.padding, packet.size());
  EXPECT_EQ(packet.substr(packet.size() - parsed.padding), std::string(parsed.padding, '\0'));
  return parsed;
}

TEST(SshDisconnect, EveryLengthIsFramedAndPadded) {
  for (std::size_t n = 0; n <= 40; ++n) {
    const std::string text(n, 'x');
    const Parsed parsed =
        parse(ssh_disconnect_stream(text, DisconnectReason::host_not_allowed_to_connect));
    EXPECT_EQ(parsed.description, text);
    EXPECT_EQ(parsed.reason, 1u);
    EXPECT_EQ(parsed.language, "");
  }
}

TEST(SshDisconnect, DescriptionIsOnePrintableLineCutAtOpenSshsLimit) {
  Parsed parsed = parse(ssh_disconnect_stream("refused\r\nfake: line\x1b[31m",
                                              DisconnectReason::service_not_available));
  EXPECT_EQ(parsed.description, "refused??fake: line?[31m");
  EXPECT_EQ(parsed.reason, 7u);

  parsed = parse(
      ssh_disconnect_stream(std::string(1000, 'a'), DisconnectReason::host_not_allowed_to_connect));
  EXPECT_EQ(parsed.description, std::string(kMaxDisconnectDescription, 'a'));

  // "é" is two bytes; 399 'a' then "é" would be cut inside it: the cut goes before it.
  parsed = parse(ssh_disconnect_stream(std::string(399, 'a') + "\xc3\xa9" + "tail",
                                       DisconnectReason::host_not_allowed_to_connect));
  EXPECT_EQ(parsed.description, std::string(399, 'a'));
}

TEST(SshDisconnect, ReasonFollowsTheProxysStatus) {
  EXPECT_EQ(disconnect_reason_for(403), DisconnectReason::host_not_allowed_to_connect);
  EXPECT_EQ(disconnect_reason_for(407), DisconnectReason::host_not_allowed_to_connect);
  EXPECT_EQ(disconnect_reason_for(502), DisconnectReason::service_not_available);
  EXPECT_EQ(disconnect_reason_for(504), DisconnectReason::service_not_available);
}

}  // namespace
}  // namespace sandgate::connect_proxy
