// sandgate-connect's command line.
#include "connect-proxy/command_line.hpp"

#include <gtest/gtest.h>

namespace sandgate::connect_proxy {
namespace {

using Args = std::vector<std::string>;

TEST(CommandLine, HostAndPort) {
  auto options = parse_command_line(Args{"github.com", "22"});
  ASSERT_TRUE(options) << options.error();
  EXPECT_EQ(options->host, "github.com");
  EXPECT_EQ(options->port, "22");
  EXPECT_FALSE(options->proxy);
  EXPECT_EQ(options->timeout, std::chrono::seconds(30));
}

TEST(CommandLine, ProxyAndTimeoutBothSpellings) {
  auto options = parse_command_line(Args{"--proxy", "127.0.0.1:1", "h", "--timeout=5", "22"});
  ASSERT_TRUE(options) << options.error();
  EXPECT_EQ(options->proxy, "127.0.0.1:1");
  EXPECT_EQ(options->timeout, std::chrono::seconds(5));
  options = parse_command_line(Args{"--proxy=[::1]:2", "--timeout", "7", "--", "-h", "22"});
  ASSERT_TRUE(options) << options.error();
  EXPECT_EQ(options->proxy, "[::1]:2");
  EXPECT_EQ(options->host, "-h");
}

TEST(CommandLine, Errors) {
  for (const Args& args : {Args{}, Args{"h"}, Args{"h", "22", "x"}, Args{"--bogus", "h", "22"},
                           Args{"h", "22", "--proxy"}, Args{"--timeout", "0", "h", "22"},
                           Args{"--timeout", "x", "h", "22"}}) {
    EXPECT_FALSE(parse_command_line(args)) << ::testing::PrintToString(args);
  }
}

TEST(CommandLine, Help) {
  auto options = parse_command_line(Args{"--help"});
  ASSERT_TRUE(options);
  EXPECT_TRUE(options->help);
  EXPECT_NE(usage().find("SANDBOX_PROXY_PORT"), std::string::npos);
}

}  // namespace
}  // namespace sandgate::connect_proxy
