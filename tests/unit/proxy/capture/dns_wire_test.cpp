// The capture DNS server's wire format (proxy/capture/dns_wire): queries built by c-ares (an
// independent encoder) are read; responses are read back by c-ares' own parsers; every
// malformed shape is refused with its reason and, where the header was readable, its ID.
#include "proxy/capture/dns_wire.hpp"

#include <ares.h>
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <gtest/gtest.h>
#include <netdb.h>

#include <string>
#include <vector>

namespace sandgate::capture {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes ares_query(const char* name, int type, unsigned short id, int max_udp = 0) {
  unsigned char* buffer = nullptr;
  int length = 0;
  EXPECT_EQ(ares_create_query(name, ns_c_in, type, id, 1, &buffer, &length, max_udp), ARES_SUCCESS)
      << name;
  Bytes out(buffer, buffer + length);
  ares_free_string(buffer);
  return out;
}

rules::IpAddress ip(const char* text) {
  rules::IpAddress address;
  if (rules::parse_ipv4(text, address) == rules::Ipv4Parse::ok) return address;
  return *rules::parse_ipv6(text);
}

TEST(DnsWire, ReadsQueriesAsCAresWritesThem) {
  for (int max_udp : {0, 1232}) {
    const Bytes query = ares_query("API.Example.com.", ns_t_aaaa, 0x1234, max_udp);
    auto parsed = parse_query(query);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().problem;
    EXPECT_EQ(parsed->id, 0x1234);
    EXPECT_EQ(parsed->name, "api.example.com");
    EXPECT_EQ(parsed->type, 28);
    EXPECT_TRUE(parsed->recursion_desired);
    EXPECT_EQ(parsed->edns, max_udp != 0);
  }
  auto txt = parse_query(ares_query("_dmarc.example.com", ns_t_txt, 7));
  ASSERT_TRUE(txt.has_value()) << txt.error().problem;
  EXPECT_EQ(txt->type, static_cast<std::uint16_t>(QueryType::txt));
}

TEST(DnsWire, AnswersThatCAresReadsBack) {
  const Bytes query = ares_query("api.example.com", ns_t_a, 99);
  auto parsed = parse_query(query);
  ASSERT_TRUE(parsed.has_value());
  const std::vector<rules::IpAddress> addresses{ip("198.18.0.7"), ip("fd12:3456:789a::7")};
  const Bytes response = build_response(query, *parsed, ResponseCode::no_error, addresses, 30);
  struct ares_addrttl a[4];
  int count = 4;
  ASSERT_EQ(
      ares_parse_a_reply(response.data(), static_cast<int>(response.size()), nullptr, a, &count),
      ARES_SUCCESS);
  ASSERT_EQ(count, 1);  // only the record of the asked type
  char text[INET6_ADDRSTRLEN];
  EXPECT_STREQ(inet_ntop(AF_INET, &a[0].ipaddr, text, sizeof text), "198.18.0.7");
  EXPECT_EQ(a[0].ttl, 30);

  const Bytes query6 = ares_query("api.example.com", ns_t_aaaa, 100);
  auto parsed6 = parse_query(query6);
  ASSERT_TRUE(parsed6.has_value());
  const Bytes response6 = build_response(query6, *parsed6, ResponseCode::no_error, addresses, 30);
  struct ares_addr6ttl a6[4];
  count = 4;
  ASSERT_EQ(ares_parse_aaaa_reply(response6.data(), static_cast<int>(response6.size()), nullptr, a6,
                                  &count),
            ARES_SUCCESS);
  ASSERT_EQ(count, 1);
  EXPECT_STREQ(inet_ntop(AF_INET6, &a6[0].ip6addr, text, sizeof text), "fd12:3456:789a::7");
}

TEST(DnsWire, RefusalsAndEmptyAnswersCarryTheirCode) {
  const Bytes query = ares_query("blocked.example", ns_t_a, 5);
  auto parsed = parse_query(query);
  ASSERT_TRUE(parsed.has_value());
  for (auto code : {ResponseCode::refused, ResponseCode::name_error}) {
    const Bytes response = build_response(query, *parsed, code);
    ASSERT_GE(response.size(), 12u);
    EXPECT_EQ(response[0], 0);
    EXPECT_EQ(response[1], 5);
    EXPECT_EQ(response[3] & 0x0f, static_cast<int>(code));
    EXPECT_EQ(response[7], 0);  // no answers
    struct hostent* host = nullptr;
    const int status = ares_parse_a_reply(response.data(), static_cast<int>(response.size()), &host,
                                          nullptr, nullptr);
    EXPECT_NE(status, ARES_SUCCESS);
  }
  // NOERROR with no records (HTTPS/SVCB): c-ares sees "no data".
  const Bytes https = ares_query("api.example.com", 65, 6);
  auto parsed_https = parse_query(https);
  ASSERT_TRUE(parsed_https.has_value());
  const Bytes empty = build_response(https, *parsed_https, ResponseCode::no_error,
                                     std::vector<rules::IpAddress>{ip("198.18.0.9")}, 30);
  EXPECT_EQ(empty[7], 0);
  EXPECT_EQ(empty[3] & 0x0f, 0);
}

TEST(DnsWire, AnAnswerStaysWithinTheClassicUdpLimit) {
  const std::string name =
      std::string(60, 'a') + "." + std::string(60, 'b') + "." + std::string(60, 'c') + ".example";
  const Bytes query = ares_query(name.c_str(), ns_t_aaaa, 1);
  auto parsed = parse_query(query);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().problem;
  std::vector<rules::IpAddress> many(40, ip("fd00::1"));
  const Bytes response = build_response(query, *parsed, ResponseCode::no_error, many, 30);
  EXPECT_LE(response.size(), kClassicUdpLimit);
  EXPECT_GT(response[7], 0);
}

TEST(DnsWire, RefusesMalformedQueries) {
  const Bytes good = ares_query("example.com", ns_t_a, 0x4242);
  struct Case {
    const char* name;
    Bytes bytes;
    const char* says;
    bool has_id;
  };
  auto with = [&good](std::size_t at, std::uint8_t value) {
    Bytes b = good;
    b[at] = value;
    return b;
  };
  Bytes trailing = good;
  trailing.push_back(0);
  Bytes compressed = good;
  compressed.resize(12);
  for (int v : {0xc0, 0x0c, 0, 1, 0, 1}) compressed.push_back(static_cast<std::uint8_t>(v));
  Bytes binary = good;
  binary[13] = 0x01;  // a control byte inside the first label
  const std::vector<Case> cases = {
      {"short", Bytes(good.begin(), good.begin() + 11), "header", false},
      {"response", with(2, good[2] | 0x80), "response", false},  // never answered
      {"opcode", with(2, good[2] | 0x10), "opcode", true},
      {"truncated_bit", with(2, good[2] | 0x02), "truncation", true},
      {"two_questions", with(5, 2), "one question", true},
      {"answers", with(7, 1), "answer or authority", true},
      {"additional", with(11, 2), "additional", true},
      {"opt_missing", with(11, 1), "OPT", true},
      {"class_chaos", with(good.size() - 1, 3), "class", true},
      {"trailing", trailing, "after the last record", true},
      {"cut", Bytes(good.begin(), good.end() - 2), "past the message", true},
      {"compressed", compressed, "compressed", true},
      {"binary_label", binary, "name byte", true},
  };
  for (const auto& c : cases) {
    auto parsed = parse_query(c.bytes);
    ASSERT_FALSE(parsed.has_value()) << c.name;
    EXPECT_NE(parsed.error().problem.find(c.says), std::string::npos)
        << c.name << ": " << parsed.error().problem;
    EXPECT_EQ(parsed.error().id.has_value(), c.has_id) << c.name;
    if (c.has_id) {
      EXPECT_EQ(*parsed.error().id, 0x4242);
      const Bytes formerr = format_error(*parsed.error().id);
      EXPECT_EQ(formerr.size(), 12u);
      EXPECT_EQ(formerr[3] & 0x0f, 1);
    }
  }
}

TEST(DnsNameBudget, HostNamesPassEncodedDataDoesNot) {
  for (const char* ok :
       {"api.example.com", "registry.npmjs.org", "objects.githubusercontent.com",
        "d1a2b3c4d5e6f7.cloudfront.net",
        "0123456789abcdef0123456789abcdef.r2.cloudflarestorage.com",  // a 32-hex-digit account
        "my-team-service-name-production-eu.example.com",
        "ec2-54-123-45-67.eu-west-1.compute.amazonaws.com"}) {
    EXPECT_EQ(name_over_budget(ok), std::nullopt) << ok;
  }
  // base32 of "the secret key is hunter2, send" and friends, as an exfiltrating tool writes it.
  for (const char* data : {"orugkidtmvrxezlueblwk3tfmeqgs4zanb2w45dfoiza.attacker.example",
                           "kz4dw1qv8n2m5x7c9b3h6j0lp4r8t2y6u1i9o3a7s5df.attacker.example",
                           "aGVsbG8gd29ybGQgdGhpcyBpcyBleGZpbA.attacker.example"}) {
    auto why = name_over_budget(data);
    ASSERT_TRUE(why.has_value()) << data;
    EXPECT_NE(why->find("encoded data"), std::string::npos) << *why;
  }
  EXPECT_NE(name_over_budget(std::string(49, 'a') + ".example")->find("label of 49"),
            std::string::npos);
  std::string long_name;
  for (int i = 0; i < 20; ++i) long_name += "abcdefghi.";
  long_name += "example";
  EXPECT_NE(name_over_budget(long_name)->find("characters long"), std::string::npos);
}

}  // namespace
}  // namespace sandgate::capture
