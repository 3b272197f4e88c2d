// Table-driven tests for rules/host: the normal form of every host spelling, the error for every
// refused one (userinfo, paths, NULs, escapes, bad IDN, ...), and CONNECT authorities.
#include "rules/host.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// Counts operator new calls, to hold parse_host() to one allocation (the normal form) for an
// ASCII name. libidn2 allocates with malloc() and is not counted; it is off that path anyway.
namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// GCC pairs the free() below with the operator new it sees at call sites and warns, although
// both replacements here use malloc()/free() consistently.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace sandgate::rules {
namespace {

std::string_view kind_name(HostKind kind) {
  switch (kind) {
    case HostKind::dns_name:
      return "dns_name";
    case HostKind::ipv4:
      return "ipv4";
    case HostKind::ipv6:
      return "ipv6";
  }
  return "?";
}

// A printable rendering of test input, for SCOPED_TRACE: NULs and control bytes as \xNN.
std::string printable(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return "'" + out + "'";
}

std::string repeat(char c, std::size_t n) { return std::string(n, c); }

// A name of exactly `length` octets made of 63-octet labels.
std::string name_of_length(std::size_t length) {
  std::string name;
  while (name.size() < length) {
    if (!name.empty()) {
      name += '.';
    }
    name += repeat('a', std::min<std::size_t>(63, length - name.size()));
  }
  if (name.back() == '.') {
    name.back() = 'b';
  }
  return name;
}

// ---------------------------------------------------------------------------------------------
// parse_host: accepted spellings and their normal form

struct GoodHost {
  std::string_view input;
  HostKind kind;
  std::string_view name;
};

const GoodHost kGoodHosts[] = {
    // DNS names: lower case, one trailing dot dropped.
    {"example.com", HostKind::dns_name, "example.com"},
    {"EXAMPLE.COM.", HostKind::dns_name, "example.com"},
    {"Example.Com", HostKind::dns_name, "example.com"},
    {"localhost", HostKind::dns_name, "localhost"},
    {"LOCALHOST.", HostKind::dns_name, "localhost"},
    {"a", HostKind::dns_name, "a"},
    {"a.b.c.d.e.f", HostKind::dns_name, "a.b.c.d.e.f"},
    {"a-b.c-d", HostKind::dns_name, "a-b.c-d"},
    {"1a.com", HostKind::dns_name, "1a.com"},
    {"123.com", HostKind::dns_name, "123.com"},
    {"1.2.3.4.com", HostKind::dns_name, "1.2.3.4.com"},
    {"0x.com", HostKind::dns_name, "0x.com"},
    {"com.0x1g", HostKind::dns_name, "com.0x1g"},
    {"123abc", HostKind::dns_name, "123abc"},
    {"_dmarc.example.com", HostKind::dns_name, "_dmarc.example.com"},
    {"foo_bar.Example.com", HostKind::dns_name, "foo_bar.example.com"},
    {"_._.com", HostKind::dns_name, "_._.com"},
    {"r3---sn-abc.googlevideo.com", HostKind::dns_name, "r3---sn-abc.googlevideo.com"},
    {"metadata.google.internal", HostKind::dns_name, "metadata.google.internal"},
    // IDN: UTS #46 mapping and punycode; `xn--` labels are kept when valid.
    {"ÉVIL.com.", HostKind::dns_name, "xn--vil-9la.com"},
    {"évil.com", HostKind::dns_name, "xn--vil-9la.com"},
    {"xn--vil-9la.com", HostKind::dns_name, "xn--vil-9la.com"},
    {"XN--VIL-9LA.COM.", HostKind::dns_name, "xn--vil-9la.com"},
    {"xn--vil-bma.com", HostKind::dns_name, "xn--vil-bma.com"},   // "véil", not "évil"
    {"e\xcc\x81vil.com", HostKind::dns_name, "xn--vil-9la.com"},  // NFC of e + U+0301
    {"bücher.example", HostKind::dns_name, "xn--bcher-kva.example"},
    {"ß.de", HostKind::dns_name, "xn--zca.de"},  // nontransitional: ß stays
    {"faß.de", HostKind::dns_name, "xn--fa-hia.de"},
    {"公司.cn", HostKind::dns_name, "xn--55qx5d.cn"},
    {"xn--55qx5d.cn", HostKind::dns_name, "xn--55qx5d.cn"},
    {"xn--e-ufa.xn--zca.de", HostKind::dns_name, "xn--e-ufa.xn--zca.de"},
    {"evil。com", HostKind::dns_name, "evil.com"},  // U+3002 ideographic full stop
    {"evil．com", HostKind::dns_name, "evil.com"},  // U+FF0E full-width full stop
    {"evil｡com", HostKind::dns_name, "evil.com"},   // U+FF61 half-width full stop
    {"ÉVIL。com。", HostKind::dns_name, "xn--vil-9la.com"},
    {"ｅｘａｍｐｌｅ.com", HostKind::dns_name, "example.com"},  // full-width letters
    {"ev\xc2\xadil.com", HostKind::dns_name, "evil.com"},       // soft hyphen is deleted
    {"Ⅻ.com", HostKind::dns_name, "xii.com"},
    {"foo_bar.évil.com", HostKind::dns_name, "foo_bar.xn--vil-9la.com"},
    // IPv4 in every spelling parse_ipv4() takes, as a dotted quad.
    {"127.0.0.1", HostKind::ipv4, "127.0.0.1"},
    {"127.1", HostKind::ipv4, "127.0.0.1"},
    {"127.0.0.1.", HostKind::ipv4, "127.0.0.1"},
    {"2130706433", HostKind::ipv4, "127.0.0.1"},
    {"0x7f000001", HostKind::ipv4, "127.0.0.1"},
    {"0X7F.1", HostKind::ipv4, "127.0.0.1"},
    {"0177.0.0.1", HostKind::ipv4, "127.0.0.1"},
    {"0", HostKind::ipv4, "0.0.0.0"},
    {"0.0.0.0", HostKind::ipv4, "0.0.0.0"},
    {"0x", HostKind::ipv4, "0.0.0.0"},
    {"169.254.169.254", HostKind::ipv4, "169.254.169.254"},
    {"0xa9fea9fe", HostKind::ipv4, "169.254.169.254"},
    {"１２７.０.０.１", HostKind::ipv4, "127.0.0.1"},  // full-width digits become IPv4
    {"127。0。0。1", HostKind::ipv4, "127.0.0.1"},
    {"０ｘ７ｆ.１", HostKind::ipv4, "127.0.0.1"},
    // IPv6, bracketed or not, in RFC 5952 form.
    {"[::1]", HostKind::ipv6, "::1"},
    {"::1", HostKind::ipv6, "::1"},
    {"[0:0:0:0:0:0:0:1]", HostKind::ipv6, "::1"},
    {"[::]", HostKind::ipv6, "::"},
    {"::", HostKind::ipv6, "::"},
    {"[::ffff:127.0.0.1]", HostKind::ipv6, "::ffff:127.0.0.1"},
    {"[::FFFF:7F00:1]", HostKind::ipv6, "::ffff:127.0.0.1"},
    {"::ffff:127.0.0.1", HostKind::ipv6, "::ffff:127.0.0.1"},
    {"[2001:DB8::1]", HostKind::ipv6, "2001:db8::1"},
    {"[64:ff9b::127.0.0.1]", HostKind::ipv6, "64:ff9b::7f00:1"},
    {"[fe80::1%eth0]", HostKind::ipv6, "fe80::1%eth0"},
    {"[fe80::1%25eth0]", HostKind::ipv6, "fe80::1%eth0"},
    {"[fe80::1%25]", HostKind::ipv6, "fe80::1%25"},
};

TEST(HostParse, Accepted) {
  for (const GoodHost& c : kGoodHosts) {
    SCOPED_TRACE(printable(c.input));
    const Expected<Host, HostError> host = parse_host(c.input);
    ASSERT_TRUE(host.has_value()) << to_string(host.error());
    EXPECT_EQ(kind_name(host->kind), kind_name(c.kind));
    EXPECT_EQ(host->name, c.name);
    EXPECT_EQ(host->is_ip(), c.kind != HostKind::dns_name);
    if (c.kind == HostKind::dns_name) {
      EXPECT_EQ(host->address, IpAddress{});
    } else {
      EXPECT_EQ(host->address.is_v4(), c.kind == HostKind::ipv4);
      EXPECT_EQ(host->address.to_string(), c.name);
    }
    // The normal form is a fixed point.
    const std::string display = host->display();
    const Expected<Host, HostError> again = parse_host(display);
    ASSERT_TRUE(again.has_value()) << display;
    EXPECT_EQ(*again, *host);
  }
}

TEST(HostParse, LengthLimits) {
  const std::string label63 = repeat('a', 63);
  EXPECT_EQ(parse_host(label63 + ".com")->name, label63 + ".com");
  EXPECT_EQ(parse_host(label63 + ".com.")->name, label63 + ".com");
  EXPECT_EQ(parse_host(repeat('A', 63))->name, label63);
  EXPECT_EQ(parse_host(label63 + "a.com").error(), HostError::label_too_long);
  EXPECT_EQ(parse_host("com." + label63 + "a").error(), HostError::label_too_long);

  const std::string name253 = name_of_length(253);
  ASSERT_EQ(name253.size(), 253u);
  EXPECT_EQ(parse_host(name253)->name, name253);
  EXPECT_EQ(parse_host(name253 + ".")->name, name253);  // the root dot does not count
  const std::string name254 = name_of_length(254);
  ASSERT_EQ(name254.size(), 254u);
  EXPECT_EQ(parse_host(name254).error(), HostError::too_long);
  EXPECT_EQ(parse_host(name254 + ".").error(), HostError::too_long);
  EXPECT_EQ(parse_host(name_of_length(100000)).error(), HostError::too_long);

  // Through IDN: a Unicode label whose punycode is over 63 octets, a name over 253.
  EXPECT_EQ(parse_host("é" + repeat('a', 62) + ".com").error(), HostError::label_too_long);
  EXPECT_TRUE(parse_host("é" + repeat('a', 55) + ".com").has_value());
  std::string long_idn;
  for (int i = 0; i < 5; ++i) {
    long_idn += "é" + repeat('a', 50) + ".";
  }
  EXPECT_EQ(parse_host(long_idn + "com").error(), HostError::too_long);
  EXPECT_EQ(parse_host("é." + repeat('a', 2000)).error(), HostError::too_long);
  EXPECT_EQ(parse_host("é." + repeat('a', 5000)).error(), HostError::too_long);
  // 4095 bytes of soft hyphens around a short name: within the input limit, and fine.
  std::string padded = "évil.com";
  while (padded.size() + 2 <= 4096) {
    padded.insert(2, "\xc2\xad");  // after the two bytes of "é"
  }
  EXPECT_EQ(parse_host(padded)->name, "xn--vil-9la.com");
}

// ---------------------------------------------------------------------------------------------
// parse_host: refused spellings

struct BadHost {
  std::string_view input;
  HostError error;
};

using namespace std::string_view_literals;

const BadHost kBadHosts[] = {
    {"", HostError::empty},
    // Empty labels and dots.
    {".", HostError::empty_label},
    {"..", HostError::empty_label},
    {"a..b", HostError::empty_label},
    {".a", HostError::empty_label},
    {".a.", HostError::empty_label},
    {"a..", HostError::empty_label},
    {"example.com..", HostError::empty_label},
    {"1.2.3.4..", HostError::empty_label},
    {"evil．．com", HostError::empty_label},
    {"évil.com..", HostError::empty_label},
    {"。", HostError::empty_label},
    // Userinfo: what is before '@' would be checked and what is after dialled, or the reverse.
    {"evil.com@github.com", HostError::userinfo},
    {"@github.com", HostError::userinfo},
    {"github.com@", HostError::userinfo},
    {"user:pass@github.com", HostError::userinfo},
    {"[::1]@evil.com", HostError::userinfo},
    {"evil.com＠github.com", HostError::userinfo},  // full-width '@' maps to '@'
    // Paths, queries, fragments.
    {"github.com/.attacker.example", HostError::path},
    {"github.com/", HostError::path},
    {"evil.com\\github.com", HostError::path},
    {"evil.com?github.com", HostError::path},
    {"evil.com#github.com", HostError::path},
    {"evil.com#@github.com", HostError::path},
    {"evil.com/@github.com", HostError::path},
    {"evil.com／github.com", HostError::path},  // full-width solidus maps to '/'
    {"evil.com＼github.com", HostError::path},
    {"evil.com？x", HostError::path},
    {"[::1/128]", HostError::path},
    // Percent escapes, anywhere but an IPv6 zone in brackets.
    {"a%2ecom", HostError::percent_escape},
    {"%65vil.com", HostError::percent_escape},
    {"evil.com%00", HostError::percent_escape},
    {"127.0.0.1%2e", HostError::percent_escape},
    {"fe80::1%eth0", HostError::percent_escape},  // a zone needs brackets
    {"évil.com％41", HostError::percent_escape},  // full-width '%' maps to '%'
    // NUL bytes.
    {"\0"sv, HostError::nul},
    {"a\0b"sv, HostError::nul},
    {"example.com\0.evil.com"sv, HostError::nul},
    {"example.com\0"sv, HostError::nul},
    {"127.0.0.1\0"sv, HostError::nul},
    {"[::1\0]"sv, HostError::nul},
    {"évil\0.com"sv, HostError::nul},
    // Whitespace and control characters; nothing is trimmed.
    {" example.com", HostError::whitespace},
    {"example.com ", HostError::whitespace},
    {"exa mple.com", HostError::whitespace},
    {"example.com\t", HostError::whitespace},
    {"example.com\r\nHost: evil", HostError::whitespace},
    {"example.com\n", HostError::whitespace},
    {"a\x01.com", HostError::whitespace},
    {"a\x1f.com", HostError::whitespace},
    {"a\x7f.com", HostError::whitespace},
    {"\vexample.com", HostError::whitespace},
    {"[::1 ]", HostError::whitespace},
    {"1.2.3.4 ", HostError::whitespace},
    // Other characters a DNS name cannot hold.
    {"*.example.com", HostError::bad_character},
    {"a!b.com", HostError::bad_character},
    {"a$b.com", HostError::bad_character},
    {"a&b.com", HostError::bad_character},
    {"a'b.com", HostError::bad_character},
    {"a(b).com", HostError::bad_character},
    {"a+b.com", HostError::bad_character},
    {"a,b.com", HostError::bad_character},
    {"a;b.com", HostError::bad_character},
    {"a=b.com", HostError::bad_character},
    {"a~b.com", HostError::bad_character},
    {"a\"b.com", HostError::bad_character},
    {"a<b>.com", HostError::bad_character},
    {"a^b.com", HostError::bad_character},
    {"a`b.com", HostError::bad_character},
    {"a{b}.com", HostError::bad_character},
    {"a|b.com", HostError::bad_character},
    {"example.com:443", HostError::bad_character},
    {"a:b", HostError::bad_character},
    {"::1:", HostError::bad_character},
    {":::1", HostError::bad_character},
    {"1:2:3:4:5:6:7:8:9", HostError::bad_character},
    {"évil.com:443", HostError::bad_character},
    {"évil.com：443", HostError::bad_character},  // full-width colon maps to ':'
    {"[::1]x", HostError::bad_character},
    {"[::1]:443", HostError::bad_character},
    // Hyphens.
    {"-a.com", HostError::bad_hyphen},
    {"a-.com", HostError::bad_hyphen},
    {"a.-com", HostError::bad_hyphen},
    {"a.com-", HostError::bad_hyphen},
    {"-", HostError::bad_hyphen},
    {"--.com", HostError::bad_hyphen},
    {"-évil.com", HostError::bad_hyphen},
    {"évil-.com", HostError::bad_hyphen},
    // Underscores in the last label.
    {"a.b_c", HostError::bad_underscore},
    {"example.co_m", HostError::bad_underscore},
    {"_com", HostError::bad_underscore},
    {"a_", HostError::bad_underscore},
    {"_dmarc.example.com_.", HostError::bad_underscore},
    {"é.c_m", HostError::bad_underscore},
    // Ends in a number, but no valid IPv4.
    {"1.2.3.256", HostError::bad_ipv4},
    {"256.0.0.1", HostError::bad_ipv4},
    {"1.2.3.4.5", HostError::bad_ipv4},
    {"1.16777216", HostError::bad_ipv4},
    {"4294967296", HostError::bad_ipv4},
    {"09.1.1.1", HostError::bad_ipv4},
    {"example.123", HostError::bad_ipv4},
    {"EXAMPLE.0x1", HostError::bad_ipv4},
    {"a.0x", HostError::bad_ipv4},
    {"example.123.", HostError::bad_ipv4},
    {"1..1", HostError::bad_ipv4},
    {"..1", HostError::bad_ipv4},
    {"-1.2.3.4", HostError::bad_ipv4},
    {"１.２.３.２５６", HostError::bad_ipv4},  // full-width digits, then out of range
    {"évil.123", HostError::bad_ipv4},
    // Brackets.
    {"[::1", HostError::unbalanced_bracket},
    {"[", HostError::unbalanced_bracket},
    {"::1]", HostError::unbalanced_bracket},
    {"]", HostError::unbalanced_bracket},
    {"a]", HostError::unbalanced_bracket},
    {"a[b", HostError::unbalanced_bracket},
    {"a[::1]", HostError::unbalanced_bracket},
    {"[[::1]]", HostError::unbalanced_bracket},
    {"[::1]]", HostError::unbalanced_bracket},
    {"[::1][::2]", HostError::unbalanced_bracket},
    {"[fe80::1%eth0", HostError::unbalanced_bracket},
    // Inside brackets but no IPv6.
    {"[]", HostError::bad_ipv6},
    {"[1.2.3.4]", HostError::bad_ipv6},
    {"[127.1]", HostError::bad_ipv6},
    {"[example.com]", HostError::bad_ipv6},
    {"[::1%]", HostError::bad_ipv6},
    {"[fe80::1%eth0%]", HostError::bad_ipv6},
    {"[fe80::1%25%65]", HostError::bad_ipv6},
    {"[::ffff:01.2.3.4]", HostError::bad_ipv6},
    {"[1::2::3]", HostError::bad_ipv6},
    {"[12345::]", HostError::bad_ipv6},
    {"[::1:]", HostError::bad_ipv6},
    {"[ｆｅ８０::1]", HostError::bad_ipv6},  // no IDN mapping inside brackets
    {"[%eth0]", HostError::bad_ipv6},
    // Bad IDN: punycode that does not decode, or decodes to something UTS #46 would not
    // produce, and non-ASCII that UTS #46 refuses.
    {"xn--zz.com", HostError::bad_idn},
    {"xn--.com", HostError::bad_hyphen},  // refused as any label ending in '-'
    {"xn--abc-.com", HostError::bad_hyphen},
    {"xn--a.com", HostError::bad_idn},  // decodes to nothing
    {"xn--abc-d.com", HostError::bad_idn},
    {"xn--abc-9la9la.com", HostError::bad_idn},  // decodes to upper case: not UTS #46 output
    {"xn--evil-.com.xn--a", HostError::bad_hyphen},
    {"xn--55qx5d-.com", HostError::bad_hyphen},
    {"xn--e-ufa.xn--9ca.xn--zz", HostError::bad_idn},
    {"xn--evil-vvc.com", HostError::bad_idn},  // "évil" decomposed (NFD): not normalised
    {"xn--vil-mia.com", HostError::bad_idn},   // "Évil": upper case survives punycode
    {"xn--vil-4m4a.com", HostError::bad_idn},  // "ⓔvil": a character UTS #46 maps to 'e'
    {"xn--evil.com", HostError::bad_idn},      // decodes to math symbols IDNA 2008 disallows
    {"xn--9a.com", HostError::bad_idn},        // U+00A3 POUND SIGN: disallowed
    {"xn--a-ecp.com", HostError::bad_idn},     // decodes to a mapped character (U+2488)
    {"xn--VIL-9LA.xn--zz", HostError::bad_idn},
    {"www.xn--zz", HostError::bad_idn},
    {"\xff.com", HostError::bad_idn},           // not UTF-8
    {"\xc3.com", HostError::bad_idn},           // truncated UTF-8
    {"\xc0\xae.com", HostError::bad_idn},       // overlong '.'
    {"a\xe2\x80\x8d.com", HostError::bad_idn},  // ZERO WIDTH JOINER out of context
    {"\u3000evil.com", HostError::whitespace},  // ideographic space maps to ' '
    {"evil\xe3\x80\x80.com", HostError::whitespace},
    {"\u202emoc.evil", HostError::bad_idn},  // RIGHT-TO-LEFT OVERRIDE
    {"é::1", HostError::bad_character},
};

TEST(HostParse, Refused) {
  for (const BadHost& c : kBadHosts) {
    SCOPED_TRACE(printable(c.input));
    const Expected<Host, HostError> host = parse_host(c.input);
    ASSERT_FALSE(host.has_value()) << host->name;
    EXPECT_EQ(to_string(host.error()), to_string(c.error));
  }
}

// Spellings of one destination must all come out as one Host, or the policy and the dialler
// would disagree on what a rule covers.
TEST(HostParse, EquivalentSpellings) {
  const std::vector<std::vector<std::string_view>> groups = {
      {"example.com", "EXAMPLE.COM", "Example.Com.", "ｅｘａｍｐｌｅ.com", "example。com"},
      {"ÉVIL.com.", "évil.com", "xn--vil-9la.com", "XN--VIL-9LA.COM.", "ÉVIL。com",
       "e\xcc\x81vil.com"},
      {"127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.0.0.1.",
       "0x7f.0.0.1", "１２７.０.０.１", "017700000001"},
      {"169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518",
       "0xa9.0xfe.0xa9.0xfe"},
      {"[::1]", "::1", "[0:0:0:0:0:0:0:1]", "[::0.0.0.1]", "[0000::0001]"},
      {"[::ffff:127.0.0.1]", "::ffff:7f00:1", "[0:0:0:0:0:ffff:127.0.0.1]"},
      {"0.0.0.0", "0", "0x0", "0.0", "00000"},
  };
  for (const auto& group : groups) {
    const Expected<Host, HostError> first = parse_host(group.front());
    ASSERT_TRUE(first.has_value()) << group.front();
    for (const std::string_view spelling : group) {
      SCOPED_TRACE(printable(spelling));
      const Expected<Host, HostError> host = parse_host(spelling);
      ASSERT_TRUE(host.has_value()) << to_string(host.error());
      EXPECT_EQ(*host, *first);
    }
  }
  // And different destinations stay different.
  EXPECT_NE(parse_host("xn--vil-bma.com")->name, parse_host("évil.com")->name);
  EXPECT_NE(parse_host("[::1]")->name, parse_host("127.0.0.1")->name);
  EXPECT_NE(parse_host("[fe80::1%eth0]").value(), parse_host("[fe80::1]").value());
}

TEST(HostParse, AddressIsFilled) {
  const Expected<Host, HostError> v4 = parse_host("0x7f.1");
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->address, IpAddress::from_v4(0x7f000001));
  EXPECT_EQ(classify(v4->address), AddressClass::loopback);

  const Expected<Host, HostError> v6 = parse_host("[fe80::1%25eth0]");
  ASSERT_TRUE(v6.has_value());
  EXPECT_FALSE(v6->address.is_v4());
  EXPECT_EQ(v6->address.zone, "eth0");
  EXPECT_EQ(v6->address.bytes[0], 0xfe);
  EXPECT_EQ(v6->address.bytes[15], 1);
}

TEST(HostParse, OneAllocationForAsciiNames) {
  // Longer than any small-string buffer, so the result itself allocates exactly once.
  const std::string input = "Some-Quite-Long-Subdomain.xn--vil-9la.Example.COM.";
  const std::string ascii = "some-quite-long-subdomain.with_underscore.example.com.";
  long before = g_allocations.load();
  {
    const Expected<Host, HostError> host = parse_host(ascii);
    EXPECT_EQ(g_allocations.load() - before, 1);
    ASSERT_TRUE(host.has_value());
  }
  before = g_allocations.load();
  {
    const Expected<Host, HostError> host = parse_host("127.0.0.1");
    EXPECT_EQ(g_allocations.load() - before, 0);  // the dotted quad fits the string itself
    ASSERT_TRUE(host.has_value());
  }
  before = g_allocations.load();
  {
    const Expected<Host, HostError> host = parse_host("some-quite-long-name.example..com");
    EXPECT_EQ(g_allocations.load() - before, 0);  // refused before anything is built
    ASSERT_FALSE(host.has_value());
  }
  before = g_allocations.load();
  {
    const Expected<Authority, HostError> authority =
        parse_authority("some-quite-long-subdomain.example.com:443");
    EXPECT_EQ(g_allocations.load() - before, 1);
    ASSERT_TRUE(authority.has_value());
  }
  EXPECT_TRUE(parse_host(input).has_value());
}

// Generated near-miss inputs: whatever parse_host() accepts must be a fixed point of its own
// normal form and hold only the characters that form allows; nothing may crash (ASan/UBSan).
TEST(HostParse, GeneratedInputsKeepInvariants) {
  const std::string_view tokens[] = {"a",
                                     "Z",
                                     "0",
                                     "9",
                                     "x",
                                     "xn--",
                                     "vil-9la",
                                     "-",
                                     "_",
                                     ".",
                                     "..",
                                     ":",
                                     "::",
                                     "[",
                                     "]",
                                     "%",
                                     "%25",
                                     "@",
                                     "/",
                                     "\\",
                                     "#",
                                     "?",
                                     " ",
                                     std::string_view("\0", 1),
                                     "0x",
                                     "1.2.3.4",
                                     "127",
                                     "256",
                                     "\xc3\xa9",
                                     "\xe3\x80\x82",
                                     "\xef\xbc\x8e",
                                     "\xef\xbc\x91",
                                     "\xff",
                                     "\xc3",
                                     "\xe2\x80\x8d",
                                     "eth0",
                                     "ffff",
                                     "com"};
  std::mt19937 random(7);  // fixed seed: failures must reproduce
  std::uniform_int_distribution<std::size_t> pick(0, std::size(tokens) - 1);
  std::uniform_int_distribution<int> length(0, 10);
  int accepted = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string input;
    for (int n = length(random); n > 0; --n) {
      input += tokens[pick(random)];
    }
    SCOPED_TRACE(printable(input));
    const Expected<Host, HostError> host = parse_host(input);
    const Expected<Authority, HostError> authority = parse_authority(input + ":443");
    if (!host) {
      continue;
    }
    ++accepted;
    // The same host with a port is the same authority, unless it is unbracketed IPv6.
    if (host->kind == HostKind::ipv6 && input.front() != '[') {
      ASSERT_FALSE(authority.has_value());
    } else {
      ASSERT_TRUE(authority.has_value());
      ASSERT_EQ(authority->host, *host);
      ASSERT_EQ(authority->port, 443);
    }
    if (host->kind == HostKind::dns_name) {
      ASSERT_FALSE(host->name.empty());
      ASSERT_LE(host->name.size(), 253u);
      for (const char c : host->name) {
        ASSERT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                    c == '.');
      }
      ASSERT_NE(host->name.front(), '.');
      ASSERT_NE(host->name.back(), '.');
    }
    const Expected<Host, HostError> again = parse_host(host->display());
    ASSERT_TRUE(again.has_value());
    ASSERT_EQ(*again, *host);
  }
  EXPECT_GT(accepted, 500);
}

// ---------------------------------------------------------------------------------------------
// display() and error text

TEST(HostDisplay, Forms) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"Example.COM.", "example.com"},
      {"127.1", "127.0.0.1"},
      {"::1", "[::1]"},
      {"[::ffff:127.0.0.1]", "[::ffff:127.0.0.1]"},
      {"[fe80::1%25eth0]", "[fe80::1%eth0]"},
      {"évil.com", "xn--vil-9la.com"},
  };
  for (const auto& [input, display] : cases) {
    SCOPED_TRACE(std::string(input));
    const Expected<Host, HostError> host = parse_host(input);
    ASSERT_TRUE(host.has_value());
    EXPECT_EQ(host->display(), display);
  }
  EXPECT_EQ(Host{}.display(), "");
}

TEST(HostErrorText, AllDistinct) {
  const HostError all[] = {
      HostError::empty,          HostError::too_long,     HostError::label_too_long,
      HostError::empty_label,    HostError::userinfo,     HostError::path,
      HostError::percent_escape, HostError::nul,          HostError::whitespace,
      HostError::bad_character,  HostError::bad_hyphen,   HostError::bad_underscore,
      HostError::bad_ipv4,       HostError::bad_ipv6,     HostError::unbalanced_bracket,
      HostError::bad_idn,        HostError::missing_port, HostError::bad_port,
  };
  std::set<std::string_view> seen;
  for (const HostError error : all) {
    const std::string_view text = to_string(error);
    EXPECT_FALSE(text.empty());
    EXPECT_LE(text.size(), 80u) << text;
    EXPECT_NE(text.back(), '.') << text;  // a fragment for log lines, not a full stop
    EXPECT_TRUE(seen.insert(text).second) << "duplicate: " << text;
  }
  EXPECT_EQ(to_string(HostError::userinfo), "user information ('@') in host");
}

// ---------------------------------------------------------------------------------------------
// parse_authority

struct GoodAuthority {
  std::string_view input;
  HostKind kind;
  std::string_view name;
  std::uint16_t port;
};

const GoodAuthority kGoodAuthorities[] = {
    {"example.com:443", HostKind::dns_name, "example.com", 443},
    {"EXAMPLE.COM.:443", HostKind::dns_name, "example.com", 443},
    {"github.com:22", HostKind::dns_name, "github.com", 22},
    {"a:1", HostKind::dns_name, "a", 1},
    {"a:65535", HostKind::dns_name, "a", 65535},
    {"a:10", HostKind::dns_name, "a", 10},
    {"évil.com:443", HostKind::dns_name, "xn--vil-9la.com", 443},
    {"evil。com:443", HostKind::dns_name, "evil.com", 443},
    {"127.1:80", HostKind::ipv4, "127.0.0.1", 80},
    {"0x7f000001:8080", HostKind::ipv4, "127.0.0.1", 8080},
    {"1.2.3.4.:443", HostKind::ipv4, "1.2.3.4", 443},
    {"[::1]:443", HostKind::ipv6, "::1", 443},
    {"[::ffff:127.0.0.1]:443", HostKind::ipv6, "::ffff:127.0.0.1", 443},
    {"[2001:DB8::1]:8443", HostKind::ipv6, "2001:db8::1", 8443},
    {"[fe80::1%25eth0]:22", HostKind::ipv6, "fe80::1%eth0", 22},
    {"[fe80::1%eth0]:22", HostKind::ipv6, "fe80::1%eth0", 22},
};

TEST(HostAuthority, Accepted) {
  for (const GoodAuthority& c : kGoodAuthorities) {
    SCOPED_TRACE(printable(c.input));
    const Expected<Authority, HostError> authority = parse_authority(c.input);
    ASSERT_TRUE(authority.has_value()) << to_string(authority.error());
    EXPECT_EQ(kind_name(authority->host.kind), kind_name(c.kind));
    EXPECT_EQ(authority->host.name, c.name);
    EXPECT_EQ(authority->port, c.port);
    // display() plus the port reads back as the same authority.
    const std::string again_text = authority->host.display() + ":" + std::to_string(c.port);
    const Expected<Authority, HostError> again = parse_authority(again_text);
    ASSERT_TRUE(again.has_value()) << again_text;
    EXPECT_EQ(again->host, authority->host);
    EXPECT_EQ(again->port, authority->port);
  }
}

struct BadAuthority {
  std::string_view input;
  HostError error;
};

const BadAuthority kBadAuthorities[] = {
    {"", HostError::empty},
    {":443", HostError::empty},
    // No port.
    {"example.com", HostError::missing_port},
    {"example.com:", HostError::missing_port},
    {"[::1]", HostError::missing_port},
    {"[::1]:", HostError::missing_port},
    {"127.0.0.1", HostError::missing_port},
    // Host errors come first and keep their meaning.
    {"example.com/", HostError::path},
    {"evil.com@github.com:443", HostError::userinfo},
    {"user:pass@github.com:443", HostError::userinfo},
    {"github.com:443@evil.com:443", HostError::userinfo},
    {"github.com/x:443", HostError::path},
    {"evil.com#:443", HostError::path},
    {"a%2ecom:443", HostError::percent_escape},
    {"a b:443", HostError::whitespace},
    {"example.com\0:443"sv, HostError::nul},
    {"a..b:443", HostError::empty_label},
    {"1.2.3.256:443", HostError::bad_ipv4},
    {"xn--zz.com:443", HostError::bad_idn},
    {"[::1:443", HostError::unbalanced_bracket},
    {"::1]:443", HostError::unbalanced_bracket},
    {"[1.2.3.4]:443", HostError::bad_ipv6},
    {"[::1%]:443", HostError::bad_ipv6},
    // Unbracketed IPv6: `::1:443` could be [::1]:443 or [::1:443], so it is refused.
    {"::1:443", HostError::bad_character},
    {"::1", HostError::bad_character},
    {"::ffff:127.0.0.1:443", HostError::bad_character},
    {"1:2:3:4:5:6:7:8:443", HostError::bad_character},
    {"fe80::1:443", HostError::bad_character},
    {"example.com:443:443", HostError::bad_character},
    {"[::1]443", HostError::bad_character},
    {"[::1]x:443", HostError::bad_character},
    // Ports.
    {"example.com:0", HostError::bad_port},
    {"example.com:00", HostError::bad_port},
    {"example.com:0443", HostError::bad_port},
    {"example.com:00443", HostError::bad_port},
    {"example.com:65536", HostError::bad_port},
    {"example.com:99999", HostError::bad_port},
    {"example.com:100000", HostError::bad_port},
    {"example.com:4294967739", HostError::bad_port},  // 443 + 2^32
    {"example.com:18446744073709551616", HostError::bad_port},
    {"example.com:+443", HostError::bad_port},
    {"example.com:-443", HostError::bad_port},
    {"example.com: 443", HostError::bad_port},
    {"example.com:443 ", HostError::bad_port},
    {"example.com:4 43", HostError::bad_port},
    {"example.com:443\r\n", HostError::bad_port},
    {"example.com:443\0"sv, HostError::bad_port},
    {"example.com:443x", HostError::bad_port},
    {"example.com:0x1bb", HostError::bad_port},
    {"example.com:443/", HostError::bad_port},
    {"example.com:４４３", HostError::bad_port},  // full-width digits are not decimal here
    {"example.com:https", HostError::bad_port},
    {"[::1]:0443", HostError::bad_port},
    {"[::1]:443]", HostError::bad_port},
    {"[::1]:-1", HostError::bad_port},
};

TEST(HostAuthority, Refused) {
  for (const BadAuthority& c : kBadAuthorities) {
    SCOPED_TRACE(printable(c.input));
    const Expected<Authority, HostError> authority = parse_authority(c.input);
    ASSERT_FALSE(authority.has_value()) << authority->host.name << ":" << authority->port;
    EXPECT_EQ(to_string(authority.error()), to_string(c.error));
  }
}

// Bytes that are never valid anywhere in a host, dropped into each position of a good
// authority: nothing may be accepted, whatever the position.
TEST(HostAuthority, NoByteSlipsThrough) {
  const std::string base = "example.com:443";
  const char bad[] = {'\0', ' ', '\t', '\r', '\n', '@', '/', '\\', '?', '#', '%', '[', ']', '*'};
  for (std::size_t position = 0; position <= base.size(); ++position) {
    for (const char c : bad) {
      std::string input = base;
      input.insert(position, 1, c);
      SCOPED_TRACE(printable(input));
      EXPECT_FALSE(parse_authority(input).has_value());
      EXPECT_FALSE(parse_host(input).has_value());
    }
  }
}

}  // namespace
}  // namespace sandgate::rules
