// SOCKS5 on the wire (proxy/socks/socks5_wire): each message read whole, byte by byte and with
// what follows it; every malformed shape refused with its reason; the replies' exact bytes.
#include "proxy/socks/socks5_wire.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandgate::socks {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes bytes(std::initializer_list<int> values) {
  Bytes out;
  for (int v : values) {
    out.push_back(static_cast<std::uint8_t>(v));
  }
  return out;
}

Bytes domain_request(std::string_view name, std::uint16_t port, std::uint8_t command = 0x01) {
  Bytes out{kVersion, command, 0x00, 0x03, static_cast<std::uint8_t>(name.size())};
  for (char c : name) {
    out.push_back(static_cast<std::uint8_t>(c));
  }
  out.push_back(static_cast<std::uint8_t>(port >> 8));
  out.push_back(static_cast<std::uint8_t>(port & 0xff));
  return out;
}

// Every proper prefix of a valid message needs more; the whole message is complete and uses
// exactly its own bytes, also when more bytes follow it.
template <typename Reader>
void expect_prefixes_need_more(const Bytes& message, Reader reader) {
  for (std::size_t n = 0; n < message.size(); ++n) {
    auto read = reader(std::span<const std::uint8_t>(message.data(), n));
    EXPECT_EQ(read.status, ReadStatus::need_more)
        << "prefix of " << n << " bytes: " << read.problem;
  }
  Bytes longer = message;
  longer.push_back(0x16);  // the first byte of a TLS ClientHello, say
  auto read = reader(longer);
  ASSERT_EQ(read.status, ReadStatus::complete) << read.problem;
  EXPECT_EQ(read.used, message.size());
}

TEST(Socks5Greeting, ReadsTheOfferedMethods) {
  const Bytes greeting = bytes({5, 2, 0x00, 0x02});
  expect_prefixes_need_more(greeting, [](auto b) { return read_greeting(b); });
  auto read = read_greeting(greeting);
  EXPECT_EQ(read.message.methods, bytes({0x00, 0x02}));
  // All 255 methods fit.
  Bytes many{5, 255};
  for (int i = 0; i < 255; ++i) many.push_back(static_cast<std::uint8_t>(i));
  read = read_greeting(many);
  ASSERT_EQ(read.status, ReadStatus::complete);
  EXPECT_EQ(read.message.methods.size(), 255u);
}

TEST(Socks5Greeting, RefusesNoMethodsAndOtherVersions) {
  EXPECT_EQ(read_greeting(bytes({5, 0})).status, ReadStatus::malformed);
  for (int version : {0, 4, 6, int{'C'}, int{'G'}}) {
    auto read = read_greeting(bytes({version}));
    EXPECT_EQ(read.status, ReadStatus::malformed) << version;
    EXPECT_NE(read.problem.find("version byte"), std::string::npos) << read.problem;
  }
}

TEST(Socks5Credentials, ReadsUserAndPassword) {
  Bytes message{1, 5, 'a', 'g', 'e', 'n', 't', 4, 't', 'o', 'k', '1'};
  expect_prefixes_need_more(message, [](auto b) { return read_credentials(b); });
  auto read = read_credentials(message);
  EXPECT_EQ(read.message.username, "agent");
  EXPECT_EQ(read.message.password, "tok1");
  // The longest: 255 and 255 bytes, which is the longest message of all.
  Bytes longest{1, 255};
  longest.insert(longest.end(), 255, 'u');
  longest.push_back(255);
  longest.insert(longest.end(), 255, 'p');
  EXPECT_EQ(longest.size(), kLongestMessage);
  read = read_credentials(longest);
  ASSERT_EQ(read.status, ReadStatus::complete);
  EXPECT_EQ(read.message.password, std::string(255, 'p'));
  // Bytes a password may hold are kept as they are (NUL included): the caller compares.
  read = read_credentials(bytes({1, 1, 'u', 3, 'a', 0, 'b'}));
  ASSERT_EQ(read.status, ReadStatus::complete);
  EXPECT_EQ(read.message.password, std::string("a\0b", 3));
}

TEST(Socks5Credentials, RefusesEmptyFieldsAndOtherVersions) {
  EXPECT_EQ(read_credentials(bytes({1, 0})).status, ReadStatus::malformed);
  EXPECT_EQ(read_credentials(bytes({1, 1, 'u', 0})).status, ReadStatus::malformed);
  EXPECT_EQ(read_credentials(bytes({5, 1, 'u', 1, 'p'})).status, ReadStatus::malformed);
  EXPECT_EQ(read_credentials(bytes({0})).status, ReadStatus::malformed);
}

TEST(Socks5Request, ReadsADomainName) {
  const Bytes request = domain_request("example.com", 443);
  expect_prefixes_need_more(request, [](auto b) { return read_request(b); });
  auto read = read_request(request);
  EXPECT_EQ(read.message.command, Command::connect);
  EXPECT_EQ(read.message.address_type, Request::AddressType::domain);
  EXPECT_EQ(read.message.domain, "example.com");
  EXPECT_EQ(read.message.port, 443);
  // 255 bytes, whatever they are: the host parser, not this one, judges the name.
  read = read_request(domain_request(std::string(255, 'a'), 1));
  ASSERT_EQ(read.status, ReadStatus::complete);
  EXPECT_EQ(read.message.domain.size(), 255u);
  read = read_request(domain_request(std::string("a\0b\r\n", 5), 80));
  ASSERT_EQ(read.status, ReadStatus::complete);
  EXPECT_EQ(read.message.domain, std::string("a\0b\r\n", 5));
}

TEST(Socks5Request, ReadsIpv4AndIpv6) {
  const Bytes v4 = bytes({5, 1, 0, 1, 203, 0, 113, 7, 0x01, 0xbb});
  expect_prefixes_need_more(v4, [](auto b) { return read_request(b); });
  auto read = read_request(v4);
  EXPECT_EQ(read.message.address_type, Request::AddressType::ipv4);
  EXPECT_EQ(read.message.address.to_string(), "203.0.113.7");
  EXPECT_EQ(read.message.port, 443);

  const Bytes v6 =
      bytes({5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x00, 0x50});
  expect_prefixes_need_more(v6, [](auto b) { return read_request(b); });
  read = read_request(v6);
  EXPECT_EQ(read.message.address_type, Request::AddressType::ipv6);
  EXPECT_EQ(read.message.address.to_string(), "2001:db8::1");
  EXPECT_EQ(read.message.port, 80);
}

TEST(Socks5Request, KeepsUnsupportedCommandsForTheirReply) {
  auto read = read_request(domain_request("example.com", 443, 0x02));
  ASSERT_EQ(read.status, ReadStatus::complete);
  EXPECT_EQ(read.message.command, Command::bind);
  read = read_request(domain_request("example.com", 443, 0x03));
  EXPECT_EQ(read.message.command, Command::udp_associate);
  read = read_request(domain_request("example.com", 443, 0x09));
  ASSERT_EQ(read.status, ReadStatus::complete);
  EXPECT_FALSE(read.message.command_known);
  EXPECT_EQ(read.message.command_byte, 0x09);
}

TEST(Socks5Request, RefusesMalformedShapes) {
  struct Case {
    const char* name;
    Bytes bytes;
    ReplyCode reply;
  };
  const std::vector<Case> cases = {
      {"reserved_byte", bytes({5, 1, 1, 1, 1, 2, 3, 4, 0, 80}), ReplyCode::general_failure},
      {"reserved_byte_early", bytes({5, 1, 7}), ReplyCode::general_failure},
      {"address_type_0", bytes({5, 1, 0, 0, 1, 2, 3, 4, 0, 80}),
       ReplyCode::address_type_not_supported},
      {"address_type_2", bytes({5, 1, 0, 2}), ReplyCode::address_type_not_supported},
      {"address_type_5", bytes({5, 1, 0, 5}), ReplyCode::address_type_not_supported},
      {"empty_domain", bytes({5, 1, 0, 3, 0, 0, 80}), ReplyCode::general_failure},
      {"port_0_ipv4", bytes({5, 1, 0, 1, 1, 2, 3, 4, 0, 0}), ReplyCode::general_failure},
      {"port_0_domain", domain_request("example.com", 0), ReplyCode::general_failure},
      {"version_4", bytes({4, 1, 0, 80}), ReplyCode::general_failure},
      {"http", bytes({'C', 'O', 'N'}), ReplyCode::general_failure},
  };
  for (const auto& c : cases) {
    auto read = read_request(c.bytes);
    EXPECT_EQ(read.status, ReadStatus::malformed) << c.name;
    EXPECT_EQ(read.reply, c.reply) << c.name;
    EXPECT_FALSE(read.problem.empty()) << c.name;
  }
}

TEST(Socks5Replies, HaveTheirExactBytes) {
  EXPECT_EQ(method_reply(Method::username_password), (std::array<std::uint8_t, 2>{5, 2}));
  EXPECT_EQ(method_reply(Method::none_acceptable), (std::array<std::uint8_t, 2>{5, 0xff}));
  EXPECT_EQ(credentials_reply(true), (std::array<std::uint8_t, 2>{1, 0}));
  EXPECT_EQ(credentials_reply(false), (std::array<std::uint8_t, 2>{1, 1}));
  EXPECT_EQ(request_reply(ReplyCode::not_allowed_by_ruleset),
            bytes({5, 2, 0, 1, 0, 0, 0, 0, 0, 0}));
  const auto v4 = rules::IpAddress::from_v4(0x7f000001);
  EXPECT_EQ(request_reply(ReplyCode::succeeded, &v4, 40000),
            bytes({5, 0, 0, 1, 127, 0, 0, 1, 0x9c, 0x40}));
  std::array<std::uint8_t, 16> raw{};
  raw[15] = 1;
  const auto v6 = rules::IpAddress::from_v6(raw);
  const auto reply = request_reply(ReplyCode::succeeded, &v6, 443);
  ASSERT_EQ(reply.size(), 4u + 16u + 2u);
  EXPECT_EQ(reply[3], 0x04);
  EXPECT_EQ(reply[19], 1);
  EXPECT_EQ(reply[20], 0x01);
  EXPECT_EQ(reply[21], 0xbb);
  EXPECT_EQ(socks4_refusal()[1], 91);
  EXPECT_EQ(to_string(ReplyCode::ttl_expired), "TTL expired");
}

}  // namespace
}  // namespace sandgate::socks
