// The parent proxy's pure pieces (proxy/parent/parent_proxy): its URL, the credentials file, the
// NO_PROXY-style exclusion list, the CONNECT request sent to it and the strict reply reader.
#include "proxy/parent/parent_proxy.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sandgate::parent {
namespace {

rules::Host host(std::string_view text) {
  auto parsed = rules::parse_host(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed ? *parsed : rules::Host{};
}

ReplyHead read(std::string_view text) { return read_reply_head({text.data(), text.size()}); }

TEST(ParentUrl, ReadsHttpHostAndPort) {
  auto a = parse_parent_url("http://proxy.corp.example:3128");
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->display(), "proxy.corp.example:3128");
  a = parse_parent_url("HTTP://10.1.2.3:8080/");
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->display(), "10.1.2.3:8080");
  a = parse_parent_url("http://[2001:db8::5]:3128");
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->display(), "[2001:db8::5]:3128");
}

TEST(ParentUrl, RefusesWhatItCannotHonourWithAReason) {
  struct Case {
    const char* url;
    const char* says;
  };
  for (const Case& c :
       {Case{"https://proxy:3128", "https:// parent proxy"},
        Case{"socks5://proxy:1080", "must be http://"}, Case{"proxy:3128", "not a URL"},
        Case{"http://user:pw@proxy:3128", "credentials file"}, Case{"http://proxy", "needs a port"},
        Case{"http://proxy:0", "port"}, Case{"http://proxy:3128/path", "no path"},
        Case{"http://proxy:3128?x", "no path"}, Case{"http://pro xy:3128", "proxy"}}) {
    auto a = parse_parent_url(c.url);
    ASSERT_FALSE(a.has_value()) << c.url;
    EXPECT_NE(a.error().find(c.says), std::string::npos) << c.url << ": " << a.error();
  }
}

// User information is refused before any message that quotes the URL back.
TEST(ParentUrl, NeverQuotesAPasswordBack) {
  for (const char* url : {"user:s3cret@proxy:3128", "ftp://user:s3cret@proxy:3128",
                          "http://user:s3cret@pro xy", "http://proxy:3128/@s3cret"}) {
    auto a = parse_parent_url(url);
    ASSERT_FALSE(a.has_value()) << url;
    EXPECT_NE(a.error().find("credentials file"), std::string::npos) << url << ": " << a.error();
    EXPECT_EQ(a.error().find("s3cret"), std::string::npos) << url << ": " << a.error();
  }
}

TEST(ParentCredentials, FirstLineUserColonPassword) {
  auto c = parse_credentials("agent:s3cr:et\r\nignored\n");
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_EQ(c->user, "agent");
  EXPECT_EQ(c->password, "s3cr:et");
  c = parse_credentials("agent:\n");  // an empty password is the parent's business
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->password, "");
  for (std::string_view bad : std::initializer_list<std::string_view>{
           "", "\n", "nocolon\n", ":pw\n", std::string_view("a:b\0c", 5), "a:b\tc"}) {
    EXPECT_FALSE(parse_credentials(bad).has_value()) << bad;
  }
}

TEST(ParentExclusions, NamesMatchThemselvesAndBelow) {
  auto list =
      ExcludeList::parse(" internal.example , .corp.example,*.dev.example, localhost:8080,,");
  ASSERT_TRUE(list.has_value()) << list.error();
  EXPECT_EQ(list->size(), 4u);
  EXPECT_TRUE(list->excludes(host("internal.example"), 443));
  EXPECT_TRUE(list->excludes(host("a.b.internal.example"), 443));
  EXPECT_TRUE(list->excludes(host("INTERNAL.example."), 443));
  EXPECT_FALSE(list->excludes(host("notinternal.example"), 443));
  EXPECT_TRUE(list->excludes(host("corp.example"), 80));
  EXPECT_TRUE(list->excludes(host("x.corp.example"), 80));
  EXPECT_TRUE(list->excludes(host("x.dev.example"), 80));
  EXPECT_TRUE(list->excludes(host("localhost"), 8080));
  EXPECT_FALSE(list->excludes(host("localhost"), 8081));
  EXPECT_FALSE(list->excludes(host("example.com"), 443));
}

TEST(ParentExclusions, AddressesAndBlocksMatchOnlyIpLiterals) {
  auto list = ExcludeList::parse("10.0.0.0/8,192.168.1.7,fd00::/8,[2001:db8::1]:443");
  ASSERT_TRUE(list.has_value()) << list.error();
  EXPECT_TRUE(list->excludes(host("10.200.3.4"), 80));
  EXPECT_FALSE(list->excludes(host("11.0.0.1"), 80));
  EXPECT_TRUE(list->excludes(host("192.168.1.7"), 80));
  EXPECT_FALSE(list->excludes(host("192.168.1.8"), 80));
  EXPECT_TRUE(list->excludes(host("fd12::1"), 80));
  EXPECT_FALSE(list->excludes(host("fe80::1"), 80));
  EXPECT_TRUE(list->excludes(host("2001:db8::1"), 443));
  EXPECT_FALSE(list->excludes(host("2001:db8::1"), 80));
  EXPECT_FALSE(list->excludes(host("ten.example"), 80));  // names are not resolved to decide
}

// An IPv4-mapped IPv6 literal is the IPv4 address it carries, on either side, as in the
// blocklist; other IPv6 forms that embed IPv4 (NAT64, 6to4) are other hosts.
TEST(ParentExclusions, MappedIpv6IsTheIpv4ItCarries) {
  auto list = ExcludeList::parse("10.0.0.0/8,::ffff:192.168.0.0/112,::ffff:172.16.0.9");
  ASSERT_TRUE(list.has_value()) << list.error();
  EXPECT_TRUE(list->excludes(host("::ffff:10.1.2.3"), 443));
  EXPECT_TRUE(list->excludes(host("[::FFFF:a01:203]"), 443));
  EXPECT_TRUE(list->excludes(host("192.168.4.5"), 443));
  EXPECT_FALSE(list->excludes(host("192.169.4.5"), 443));
  EXPECT_TRUE(list->excludes(host("172.16.0.9"), 443));
  EXPECT_FALSE(list->excludes(host("172.16.0.10"), 443));
  EXPECT_FALSE(list->excludes(host("64:ff9b::10.1.2.3"), 443));
  EXPECT_FALSE(list->excludes(host("11.1.2.3"), 443));
  // A block wider than the mapped range stays an IPv6 block.
  list = ExcludeList::parse("::ffff:0:0/95");
  ASSERT_TRUE(list.has_value()) << list.error();
  EXPECT_TRUE(list->excludes(host("::ffff:10.1.2.3"), 443));
  EXPECT_FALSE(list->excludes(host("10.1.2.3"), 443));
}

TEST(ParentExclusions, StarExcludesEverythingAndEmptyNothing) {
  auto all = ExcludeList::parse("*");
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(all->excludes(host("example.com"), 443));
  auto none = ExcludeList::parse("");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(none->excludes(host("example.com"), 443));
}

TEST(ParentExclusions, RefusesBadEntriesNamingThem) {
  for (std::string_view bad : {"exa mple.com", "10.0.0.0/33", "10.0.0.0/", "fd00::/129",
                               "name.example/8", "host:0", "host:99999", "[::1", "a..b"}) {
    auto list = ExcludeList::parse(bad);
    ASSERT_FALSE(list.has_value()) << bad;
    EXPECT_NE(list.error().find("parent proxy exclusion"), std::string::npos) << list.error();
  }
}

TEST(ParentConnect, RequestCarriesOnlyWhatTheParentNeeds) {
  EXPECT_EQ(connect_request(host("example.com"), 443, nullptr),
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  const Credentials credentials{"agent", "pw:1"};
  EXPECT_EQ(connect_request(host("2001:db8::1"), 22, &credentials),
            "CONNECT [2001:db8::1]:22 HTTP/1.1\r\nHost: [2001:db8::1]:22\r\n"
            "Proxy-Authorization: Basic YWdlbnQ6cHc6MQ==\r\n\r\n");
}

TEST(ParentReply, ReadsTheStatusAndWhereTheTunnelStarts) {
  const std::string reply = "HTTP/1.1 200 Connection established\r\nVia: corp\r\n\r\nSSH-2.0-x";
  for (std::size_t n = 0; n < reply.size() - 9; ++n) {
    EXPECT_EQ(read(std::string_view(reply).substr(0, n)).status, ReplyHead::Status::need_more) << n;
  }
  auto head = read(reply);
  ASSERT_EQ(head.status, ReplyHead::Status::complete) << head.problem;
  EXPECT_EQ(head.code, 200);
  EXPECT_EQ(head.reason_phrase, "Connection established");
  EXPECT_EQ(reply.substr(head.head_length), "SSH-2.0-x");
  // Issue 27: the one line rule of every head the gate reads (rules/http_lines.hpp) holds for a
  // parent's reply too; a bare LF, which the gate once took for a line end here, is refused.
  head = read("HTTP/1.0 407 \nProxy-Authenticate: Basic\n\n");
  EXPECT_EQ(head.status, ReplyHead::Status::malformed);
  EXPECT_NE(head.problem.find("bare LF"), std::string::npos) << head.problem;
  EXPECT_EQ(read("HTTP/1.1 403\r\n\r\n").code, 403);
}

// The reason phrase is a hostile parent's text that the log quotes: no quote or backslash
// survives to end the quoted field early, and its length is bounded.
TEST(ParentReply, TheReasonPhraseIsSafeToQuoteAndBounded) {
  auto head = read("HTTP/1.1 403 No\" \\ \"verdict\":\"allow\"\x01\r\n\r\n");
  ASSERT_EQ(head.status, ReplyHead::Status::complete) << head.problem;
  EXPECT_EQ(head.reason_phrase, "No? ? ?verdict?:?allow??");
  head = read("HTTP/1.1 403 " + std::string(10000, 'R') + "\r\n\r\n");
  ASSERT_EQ(head.status, ReplyHead::Status::complete) << head.problem;
  EXPECT_EQ(head.reason_phrase, std::string(kReasonPhraseLimit, 'R') + "...");
}

TEST(ParentReply, RefusesWhatIsNotAProxyReply) {
  for (std::string_view bad :
       {"SSH-2.0-OpenSSH\r\n", "HTTP/2 200\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 200OK\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 600 x\r\n\r\n",
        "HTTP/1.1 200 OK\r\n folded\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n", "HTTP/1.1 200 O\rK\r\n\r\n", "x"}) {
    EXPECT_EQ(read(bad).status, ReplyHead::Status::malformed) << bad;
  }
  std::string huge = "HTTP/1.1 200 OK\r\n";
  while (huge.size() <= kReplyHeadLimit + 100) huge += "X-Pad: " + std::string(100, 'a') + "\r\n";
  auto head = read(huge);
  EXPECT_EQ(head.status, ReplyHead::Status::malformed);
  EXPECT_NE(head.problem.find("over"), std::string::npos) << head.problem;
  // One endless line is refused too, not waited on.
  EXPECT_EQ(read("HTTP/1.1 200 " + std::string(kReplyHeadLimit + 10, 'a')).status,
            ReplyHead::Status::malformed);
}

}  // namespace
}  // namespace sandgate::parent
