// Reading the server name from a ClientHello, strictly and without reading past the bytes given.
#include "rules/tls_client_hello.hpp"

#include <gtest/gtest.h>

#include "tests/support/client_hello.hpp"

namespace sandgate::rules {
namespace {

using Status = ClientHello::Status;
using testing::client_hello_records;

TEST(ClientHelloTest, ReadsTheServerName) {
  auto hello = read_client_hello(client_hello_records("Example.COM"));
  EXPECT_EQ(hello.status, Status::tls);
  EXPECT_EQ(hello.server_name, "Example.COM");  // normalising is the caller's job
}

TEST(ClientHelloTest, ReadsWhetherAlpnOffersHttp2) {
  const auto read = [](const std::string& alpn) {
    const std::string message = testing::client_hello_message("example.com", true, alpn);
    std::string record = "\x16\x03\x01";
    record += static_cast<char>(message.size() >> 8);
    record += static_cast<char>(message.size() & 0xff);
    return read_client_hello(record + message);
  };
  EXPECT_TRUE(read(std::string("\x02h2\x08http/1.1", 12)).offers_h2);
  EXPECT_TRUE(read(std::string("\x08http/1.1\x02h2", 12)).offers_h2);
  EXPECT_FALSE(read(std::string("\x08http/1.1", 9)).offers_h2);
  EXPECT_FALSE(read(std::string("\x03h2c", 4)).offers_h2);  // h2 over cleartext is not h2
  EXPECT_FALSE(read("").offers_h2);
  EXPECT_EQ(read(std::string("\x02h2", 3)).status, Status::tls);
  // A name of length 0, or a length past the list, is malformed.
  EXPECT_EQ(read(std::string("\x02h2\x00", 4)).status, Status::malformed);
  EXPECT_EQ(read(std::string("\x05h2", 3)).status, Status::malformed);
}

TEST(ClientHelloTest, NoServerName) {
  auto hello = read_client_hello(client_hello_records("", /*with_sni=*/false));
  EXPECT_EQ(hello.status, Status::tls);
  EXPECT_EQ(hello.server_name, "");
}

TEST(ClientHelloTest, EveryPrefixAsksForMore) {
  const std::string full = client_hello_records("origin.test");
  for (std::size_t n = 1; n < full.size(); ++n) {
    EXPECT_EQ(read_client_hello(full.substr(0, n)).status, Status::need_more) << n;
  }
}

TEST(ClientHelloTest, SplitAcrossRecords) {
  for (std::size_t record : {1u, 7u, 50u}) {
    auto hello = read_client_hello(client_hello_records("split.test", true, record));
    EXPECT_EQ(hello.status, Status::tls) << record;
    EXPECT_EQ(hello.server_name, "split.test") << record;
  }
}

TEST(ClientHelloTest, RecognisesSshAndOtherProtocols) {
  EXPECT_EQ(read_client_hello("SSH-2.0-OpenSSH_9.2\r\n").status, Status::ssh);
  EXPECT_EQ(read_client_hello("SS").status, Status::need_more);
  EXPECT_EQ(read_client_hello("GET / HTTP/1.1\r\n").status, Status::other);
  EXPECT_EQ(read_client_hello("SSX").status, Status::other);
}

TEST(ClientHelloTest, MalformedShapes) {
  std::string hello = client_hello_records("a.test");
  // Not a ClientHello handshake type.
  std::string server_hello = hello;
  server_hello[5] = 2;
  EXPECT_EQ(read_client_hello(server_hello).status, Status::malformed);
  // A record that is not a handshake after the first one.
  std::string alert = client_hello_records("a.test", true, 10);
  alert[5 + 10] = 21;
  EXPECT_EQ(read_client_hello(alert).status, Status::malformed);
  // Bad record version and a zero-length record.
  std::string version = hello;
  version[1] = 2;
  EXPECT_EQ(read_client_hello(version).status, Status::malformed);
  std::string empty_record = std::string("\x16\x03\x01\x00\x00", 5);
  EXPECT_EQ(read_client_hello(empty_record).status, Status::malformed);
  // A handshake length beyond the limit.
  std::string huge = std::string("\x16\x03\x01\x00\x04\x01\xff\xff\xff", 9);
  EXPECT_EQ(read_client_hello(huge).status, Status::malformed);
}

TEST(ClientHelloTest, TruncatedInnerLengthsAreMalformed) {
  // Shrink the handshake length by one: the body is then too short for its extensions.
  const std::string message = testing::client_hello_message("b.test");
  for (std::size_t cut = 1; cut < 40; ++cut) {
    std::string body = message.substr(4, message.size() - 4 - cut);
    std::string shorter;
    shorter += '\x01';
    testing::put24(shorter, body.size());
    shorter += body;
    std::string record;
    record += '\x16';
    testing::put16(record, 0x0301);
    testing::put16(record, shorter.size());
    record += shorter;
    // Cutting the whole extensions block leaves a valid hello without extensions.
    const std::size_t extensions_block = message.size() - 4 - (2 + 32 + 1 + 2 + 4 + 1 + 1);
    EXPECT_EQ(read_client_hello(record).status,
              cut == extensions_block ? Status::tls : Status::malformed)
        << cut;
  }
}

}  // namespace
}  // namespace sandgate::rules
