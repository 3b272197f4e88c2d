// Where sandgate-connect finds the proxy: the accepted URL forms, the refused ones with their
// reasons, and the order --proxy, SANDBOX_PROXY_PORT, HTTPS_PROXY, https_proxy, ALL_PROXY,
// all_proxy.
#include "connect-proxy/proxy_location.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <string>

namespace sandgate::connect_proxy {
namespace {

struct GoodCase {
  const char* text;
  const char* host;
  std::uint16_t port;
};

class ProxyAddressAccepted : public ::testing::TestWithParam<GoodCase> {};

TEST_P(ProxyAddressAccepted, Parses) {
  const auto& param = GetParam();
  auto parsed = parse_proxy_address(param.text, "HTTPS_PROXY");
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(parsed->host, param.host);
  EXPECT_EQ(parsed->port, param.port);
  EXPECT_EQ(parsed->source, "HTTPS_PROXY");
}

INSTANTIATE_TEST_SUITE_P(Forms, ProxyAddressAccepted,
                         ::testing::Values(GoodCase{"127.0.0.1:9877", "127.0.0.1", 9877},
                                           GoodCase{"http://127.0.0.1:9877", "127.0.0.1", 9877},
                                           GoodCase{"http://127.0.0.1:9877/", "127.0.0.1", 9877},
                                           GoodCase{"HTTP://proxy.corp.example:3128",
                                                    "proxy.corp.example", 3128},
                                           GoodCase{"localhost:1", "localhost", 1},
                                           GoodCase{"http://[::1]:9877", "::1", 9877},
                                           GoodCase{"[::1]:65535/", "::1", 65535},
                                           GoodCase{"  http://127.0.0.1:80  ", "127.0.0.1", 80}),
                         // Stable names (the default would print the struct's pointer bytes,
                         // which differ between the run that lists tests and the one that runs).
                         [](const auto& info) { return std::to_string(info.index); });

struct BadCase {
  const char* text;
  const char* why;  // a piece of the message
};

class ProxyAddressRefused : public ::testing::TestWithParam<BadCase> {};

TEST_P(ProxyAddressRefused, SaysWhy) {
  const auto& param = GetParam();
  auto parsed = parse_proxy_address(param.text, "https_proxy");
  ASSERT_FALSE(parsed) << param.text;
  EXPECT_NE(parsed.error().find(param.why), std::string::npos) << parsed.error();
  EXPECT_NE(parsed.error().find("https_proxy=\""), std::string::npos) << parsed.error();
}

INSTANTIATE_TEST_SUITE_P(
    Forms, ProxyAddressRefused,
    ::testing::Values(BadCase{"https://proxy:443", "TLS to the proxy"},
                      BadCase{"socks5://127.0.0.1:1080", "SOCKS"},
                      BadCase{"socks5h://127.0.0.1:1080", "SOCKS"},
                      BadCase{"ftp://x:1", "unknown scheme"},
                      BadCase{"http://user@proxy:8080", "need a password"},
                      BadCase{"http://user:@proxy:8080", "need a password"},
                      BadCase{"http://u:%zz@proxy:8080", "broken %-escape"},
                      BadCase{"http://u:%0a@proxy:8080", "control character"},
                      BadCase{"http://u%3ax:pw@proxy:8080", "':' in the user name"},
                      BadCase{"http://proxy:8080/path", "no path"},
                      BadCase{"http://proxy", "no port"}, BadCase{"proxy:", "not a number"},
                      BadCase{"proxy:0", "not a number"}, BadCase{"proxy:65536", "not a number"},
                      BadCase{"proxy:80x", "not a number"}, BadCase{"::1:8080", "brackets"},
                      BadCase{"[::1:8080", "closing"}, BadCase{"[nothex]:80", "not an IPv6"},
                      BadCase{"[::1]", "no port"}, BadCase{"pro xy:80", "not a host name"},
                      BadCase{"", "empty"}),
    [](const auto& info) { return std::to_string(info.index); });

// Credentials in the address: decoded for Proxy-Authorization, never shown in messages.
TEST(ProxyAddressCredentials, ParsedDecodedAndNeverShown) {
  struct Case {
    const char* text;
    const char* credentials;
    const char* host;
  };
  for (const Case& c : {
           Case{"http://agent:tok-0123456789abcdef@127.0.0.1:9877", "agent:tok-0123456789abcdef",
                "127.0.0.1"},
           Case{"http://:token@[::1]:9877/", ":token", "::1"},
           Case{"agent:token@localhost:9877", "agent:token", "localhost"},
           Case{"http://a%40b:p%40ss%3Aw%2Frd@proxy:1", "a@b:p@ss:w/rd", "proxy"},
           Case{"http://a:p@ss@proxy:1", "a:p@ss", "proxy"},  // the last '@' ends them
           Case{"http://127.0.0.1:9877", "", "127.0.0.1"},
       }) {
    SCOPED_TRACE(c.text);
    auto parsed = parse_proxy_address(c.text, "HTTPS_PROXY");
    ASSERT_TRUE(parsed) << parsed.error();
    EXPECT_EQ(parsed->credentials, c.credentials);
    EXPECT_EQ(parsed->host, c.host);
    EXPECT_EQ(parsed->display().find('@'), std::string::npos);
  }
  // A refused address with a password in it is quoted with the password masked.
  auto refused = parse_proxy_address("http://agent:sup3r-secret@proxy", "--proxy");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().find("sup3r-secret"), std::string::npos) << refused.error();
  EXPECT_NE(refused.error().find("--proxy \"http://agent:***@proxy\""), std::string::npos)
      << refused.error();
}

// A fake environment for find_proxy.
EnvLookup fake_env(std::map<std::string, std::string, std::less<>> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    auto found = values.find(name);
    if (found == values.end()) {
      return std::nullopt;
    }
    return found->second;
  };
}

TEST(FindProxy, FlagWinsOverEverything) {
  auto found = find_proxy(std::string("10.0.0.1:3128"),
                          fake_env({{"SANDBOX_PROXY_PORT", "9877"}, {"HTTPS_PROXY", "h:1"}}));
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(found->display(), "10.0.0.1:3128");
  EXPECT_EQ(found->source, "--proxy");
}

TEST(FindProxy, SandboxProxyPortIsOnLoopback) {
  auto found = find_proxy(
      std::nullopt, fake_env({{"SANDBOX_PROXY_PORT", " 9877 "}, {"HTTPS_PROXY", "http://h:1"}}));
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(found->display(), "127.0.0.1:9877");
  EXPECT_EQ(found->source, "SANDBOX_PROXY_PORT");
}

TEST(FindProxy, BadSandboxProxyPortIsAnErrorNotAFallThrough) {
  auto found =
      find_proxy(std::nullopt,
                 fake_env({{"SANDBOX_PROXY_PORT", "http://x:1"}, {"HTTPS_PROXY", "http://h:1"}}));
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().find("SANDBOX_PROXY_PORT=\"http://x:1\""), std::string::npos)
      << found.error();
}

TEST(FindProxy, UrlVariablesInOrderAndEmptyOnesSkipped) {
  auto env = fake_env({{"SANDBOX_PROXY_PORT", ""},
                       {"HTTPS_PROXY", "  "},
                       {"https_proxy", "http://[::1]:8080/"},
                       {"ALL_PROXY", "http://a:1"},
                       {"all_proxy", "http://b:2"}});
  auto found = find_proxy(std::nullopt, env);
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(found->display(), "[::1]:8080");
  EXPECT_EQ(found->source, "https_proxy");

  found = find_proxy(std::nullopt, fake_env({{"all_proxy", "b:2"}, {"ALL_PROXY", "a:1"}}));
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(found->source, "ALL_PROXY");
  found = find_proxy(std::nullopt, fake_env({{"all_proxy", "b:2"}}));
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(found->source, "all_proxy");
}

TEST(FindProxy, NothingConfiguredNamesEveryVariable) {
  auto found = find_proxy(std::nullopt, fake_env({}));
  ASSERT_FALSE(found);
  for (const char* name :
       {"--proxy", "SANDBOX_PROXY_PORT", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}) {
    EXPECT_NE(found.error().find(name), std::string::npos) << name << ": " << found.error();
  }
}

TEST(CredentialsFromEnvironment, TokenThenTokenFileThenNothing) {
  auto none = credentials_from_environment(fake_env({}));
  ASSERT_TRUE(none) << none.error();
  EXPECT_EQ(*none, "");
  auto token = credentials_from_environment(
      fake_env({{"SANDGATE_TOKEN", "tok-0123456789abcdef"}, {"SANDGATE_TOKEN_FILE", "/nowhere"}}));
  ASSERT_TRUE(token) << token.error();
  EXPECT_EQ(*token, "sandgate:tok-0123456789abcdef");

  char pattern[] = "/tmp/sandgate-connect-token-XXXXXX";
  const int fd = ::mkstemp(pattern);
  ASSERT_GE(fd, 0);
  const std::string text = "tok-from-the-file-0123\r\nignored\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  auto from_file = credentials_from_environment(fake_env({{"SANDGATE_TOKEN_FILE", pattern}}));
  ASSERT_TRUE(from_file) << from_file.error();
  EXPECT_EQ(*from_file, "sandgate:tok-from-the-file-0123");
  ::unlink(pattern);

  auto missing = credentials_from_environment(fake_env({{"SANDGATE_TOKEN_FILE", pattern}}));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("cannot read the token file SANDGATE_TOKEN_FILE="),
            std::string::npos)
      << missing.error();
  auto spaced = credentials_from_environment(fake_env({{"SANDGATE_TOKEN", "has a space"}}));
  ASSERT_FALSE(spaced);
  EXPECT_EQ(spaced.error().find("has a space"), std::string::npos) << spaced.error();
}

}  // namespace
}  // namespace sandgate::connect_proxy
