// The capture's name <-> address book (proxy/capture/synthetic_addresses): stable addresses per
// name, lookups both ways, the ranges, and the bound: past capacity the least recently used
// name gives its addresses up and the others keep theirs.
#include "proxy/capture/synthetic_addresses.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace sandgate::capture {
namespace {

constexpr std::array<std::uint8_t, 8> kPrefix{0xfd, 0x12, 0x34, 0x56, 0x78, 0x9a, 0, 0};

rules::IpAddress ip(const char* text) {
  rules::IpAddress address;
  if (rules::parse_ipv4(text, address) == rules::Ipv4Parse::ok) return address;
  return *rules::parse_ipv6(text);
}

TEST(SyntheticAddresses, OnePairPerNameBothWays) {
  SyntheticAddresses book(kPrefix, 100);
  const auto a = book.assign("api.example.com");
  EXPECT_EQ(a.v4.to_string(), "198.18.0.1");
  EXPECT_EQ(a.v6.to_string(), "fd12:3456:789a::1");
  const auto b = book.assign("b.example.com");
  EXPECT_EQ(b.v4.to_string(), "198.18.0.2");
  EXPECT_EQ(book.assign("api.example.com").v4, a.v4);
  EXPECT_EQ(book.name_of(a.v4), "api.example.com");
  EXPECT_EQ(book.name_of(a.v6), "api.example.com");
  EXPECT_EQ(book.name_of(b.v6), "b.example.com");
  EXPECT_EQ(book.name_of(ip("198.18.0.3")), std::nullopt);  // in range, not assigned
  EXPECT_EQ(book.name_of(ip("93.184.216.34")), std::nullopt);
  EXPECT_EQ(book.name_of(ip("fd12:3456:789a:0:1::1")), std::nullopt);  // not our host part
  EXPECT_EQ(book.size(), 2u);
}

TEST(SyntheticAddresses, RangesAreRecognised) {
  SyntheticAddresses book(kPrefix, 10);
  EXPECT_TRUE(book.is_synthetic(ip("198.18.0.0")));
  EXPECT_TRUE(book.is_synthetic(ip("198.19.255.255")));
  EXPECT_FALSE(book.is_synthetic(ip("198.20.0.1")));
  EXPECT_FALSE(book.is_synthetic(ip("198.17.255.255")));
  EXPECT_TRUE(book.is_synthetic(ip("fd12:3456:789a::ffff")));
  EXPECT_FALSE(book.is_synthetic(ip("fd12:3456:789b::1")));
}

TEST(SyntheticAddresses, PastCapacityTheLeastRecentlyUsedGivesWay) {
  SyntheticAddresses book(kPrefix, 3);
  const auto a = book.assign("a.test");
  book.assign("b.test");
  book.assign("c.test");
  book.name_of(a.v4);  // a is used again: b is now the oldest
  const auto d = book.assign("d.test");
  EXPECT_EQ(book.size(), 3u);
  EXPECT_EQ(d.v4.to_string(), "198.18.0.2");  // b's address, recycled
  EXPECT_EQ(book.name_of(d.v4), "d.test");
  EXPECT_EQ(book.name_of(a.v4), "a.test");
  EXPECT_EQ(book.assign("c.test").v4.to_string(), "198.18.0.3");
  // Used since, newest first: c, a, d. b comes back and takes the oldest's (d's) address.
  const auto b_again = book.assign("b.test");
  EXPECT_EQ(book.size(), 3u);
  EXPECT_EQ(book.name_of(b_again.v4), "b.test");
  EXPECT_EQ(book.name_of(d.v4), "b.test");  // d gave way
}

TEST(SyntheticAddresses, FillsTheWholeRange) {
  SyntheticAddresses book(kPrefix, SyntheticAddresses::kMaxCapacity);
  rules::IpAddress last;
  for (std::size_t i = 0; i < SyntheticAddresses::kMaxCapacity; ++i) {
    last = book.assign("n" + std::to_string(i)).v4;
  }
  EXPECT_EQ(last.to_string(), "198.19.255.254");
  EXPECT_EQ(book.assign("one-more").v4.to_string(), "198.18.0.1");  // n0's, the oldest
}

TEST(SyntheticAddresses, RefusesABadPrefixOrCapacity) {
  EXPECT_THROW(SyntheticAddresses({0x20, 1, 0, 0, 0, 0, 0, 0}, 10), std::invalid_argument);
  EXPECT_THROW(SyntheticAddresses(kPrefix, 0), std::invalid_argument);
  EXPECT_THROW(SyntheticAddresses(kPrefix, SyntheticAddresses::kMaxCapacity + 1),
               std::invalid_argument);
}

}  // namespace
}  // namespace sandgate::capture
