// Client authentication (SANDGATE_TOKEN) with the real curl, the real sandgate-connect and the
// real executable, against an in-process gate on loopback: curl through a tunnel and plain HTTP
// with no, a wrong and the right token; sandgate-connect sending the token; the token never
// echoed by the executable's messages or by `check`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/fakes/http_origin.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/shell_command.hpp"

namespace sandgate::testing {
namespace {

using fakes::HttpOrigin;
using fakes::TcpOrigin;

const std::string kToken = "tok-5f1e2d3c4b5a69788796a5b4";
const std::string kConnect = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate-connect";
const std::string kSandgate = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate";

void with_token(settings::Settings& s) {
  s.policy.block_loopback = false;  // the test origins are on loopback
  s.token = kToken;
}

bool have_curl() { return std::system("command -v curl >/dev/null 2>&1") == 0; }

TEST(ProxyAuthCurl, CurlWithAndWithoutTheToken) {
  if (!have_curl()) {
    FAIL() << "curl is required (scripts/install-deps.sh installs it)";
  }
  HttpOrigin origin([](const HttpOrigin::Request& r) {
    return HttpOrigin::Reply::fixed(200, "curl saw " + r.target);
  });
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string port = std::to_string(proxy.port());
  const std::string url = "http://origin.test:" + std::to_string(origin.port()) + "/p";
  const std::string curl = "curl -sS --max-time 10 --noproxy '' ";

  // Through a CONNECT tunnel (-p): no token, a wrong one, the right one.
  auto none = run_shell(curl + "-p -x http://127.0.0.1:" + port + " " + url);
  EXPECT_EQ(none.exit_code, 56) << none.output;  // CONNECT tunnel failed
  EXPECT_NE(none.output.find("407"), std::string::npos) << none.output;
  auto wrong =
      run_shell(curl + "-p -x http://agent:wrong-token-0123456789@127.0.0.1:" + port + " " + url);
  EXPECT_EQ(wrong.exit_code, 56) << wrong.output;
  EXPECT_NE(wrong.output.find("407"), std::string::npos) << wrong.output;
  auto right = run_shell(curl + "-p -x http://agent:" + kToken + "@127.0.0.1:" + port + " " + url);
  EXPECT_EQ(right.exit_code, 0) << right.output;
  EXPECT_EQ(right.output, "curl saw /p");

  // Plain HTTP forwarding: without the token curl shows the 407 page; with it the origin
  // answers and never sees the header.
  auto plain_none =
      run_shell(curl + "-x http://127.0.0.1:" + port + " -w ' status=%{http_code}' " + url);
  EXPECT_NE(plain_none.output.find("refused (auth-required)"), std::string::npos)
      << plain_none.output;
  EXPECT_NE(plain_none.output.find("status=407"), std::string::npos) << plain_none.output;
  const std::size_t before = origin.requests().size();
  auto plain = run_shell(curl + "-x http://agent:" + kToken + "@127.0.0.1:" + port + " " + url);
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output, "curl saw /p");
  ASSERT_TRUE(origin.wait_for_requests(before + 1));
  for (const auto& request : origin.requests()) {
    EXPECT_FALSE(request.has_field("Proxy-Authorization")) << request.head;
  }
  EXPECT_EQ(proxy.log_text().find(kToken), std::string::npos);
}

TEST(ProxyAuthConnectHelper, SandgateConnectSendsTheToken) {
  ASSERT_TRUE(std::filesystem::exists(kConnect)) << kConnect;
  TcpOrigin origin;
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string port = std::to_string(proxy.port());
  const std::string helper =
      "printf hello | env -u SANDGATE_TOKEN -u SANDGATE_TOKEN_FILE " + kConnect + " --timeout 10 ";
  const std::string destination = " origin.test " + std::to_string(origin.port());

  // In the proxy address.
  auto in_url =
      run_shell(helper + "--proxy http://agent:" + kToken + "@127.0.0.1:" + port + destination);
  EXPECT_EQ(in_url.exit_code, 0) << in_url.output;
  EXPECT_EQ(in_url.output, "hello");

  // From SANDGATE_TOKEN, and from a file.
  auto from_env = run_shell(helper + "--proxy 127.0.0.1:" + port + destination + "");
  EXPECT_EQ(from_env.exit_code, 255) << from_env.output;  // not yet: no token anywhere
  EXPECT_NE(from_env.output.find("sandgate-connect: the proxy at 127.0.0.1:" + port +
                                 " requires a token for CONNECT origin.test:"),
            std::string::npos)
      << from_env.output;
  EXPECT_NE(from_env.output.find("407 Proxy Authentication Required (auth-required)"),
            std::string::npos)
      << from_env.output;
  EXPECT_NE(from_env.output.find("SANDGATE_TOKEN"), std::string::npos) << from_env.output;

  from_env = run_shell("printf hello | SANDGATE_TOKEN=" + kToken + " " + kConnect +
                       " --timeout 10 --proxy 127.0.0.1:" + port + destination);
  EXPECT_EQ(from_env.exit_code, 0) << from_env.output;
  EXPECT_EQ(from_env.output, "hello");

  const std::string file = proxy.folder() + "/token";
  std::ofstream(file) << kToken << "\n";
  auto from_file =
      run_shell("printf hello | env -u SANDGATE_TOKEN SANDGATE_TOKEN_FILE=" + file + " " +
                kConnect + " --timeout 10 --proxy http://127.0.0.1:" + port + "/" + destination);
  EXPECT_EQ(from_file.exit_code, 0) << from_file.output;
  EXPECT_EQ(from_file.output, "hello");

  // A wrong token: a clear message, exit 255, and the token it sent is not shown.
  auto wrong = run_shell("printf hello | SANDGATE_TOKEN=wrong-token-0123456789 " + kConnect +
                         " --timeout 10 --proxy 127.0.0.1:" + port + destination);
  EXPECT_EQ(wrong.exit_code, 255) << wrong.output;
  EXPECT_NE(wrong.output.find("did not accept the token sent for CONNECT origin.test:"),
            std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("(auth-failed)"), std::string::npos) << wrong.output;
  EXPECT_EQ(wrong.output.find("wrong-token-0123456789"), std::string::npos) << wrong.output;
  auto wrong_url = run_shell(
      helper + "--proxy http://agent:wrong-token-0123456789@127.0.0.1:" + port + destination);
  EXPECT_EQ(wrong_url.exit_code, 255) << wrong_url.output;
  EXPECT_EQ(wrong_url.output.find("wrong-token-0123456789"), std::string::npos) << wrong_url.output;
  EXPECT_EQ(origin.connections(), 3u);
}

// The executable: a token that is too short stops it with a message that does not repeat it,
// and `check` prints nothing of it.
TEST(ProxyAuthCli, TheTokenIsNeverEchoed) {
  ASSERT_TRUE(std::filesystem::exists(kSandgate)) << kSandgate;
  TestProxy scratch;  // for its temporary folder and blocklist
  const std::string env = "env -i HOME=" + scratch.folder() + " PATH=/usr/bin:/bin ";
  const std::string blocklist = " --blocklist " + scratch.folder() + "/blocked.txt";
  auto short_token = run_shell(env + "SANDGATE_TOKEN=tiny-secret-9 " + kSandgate + blocklist);
  EXPECT_EQ(short_token.exit_code, 2) << short_token.output;
  EXPECT_NE(short_token.output.find("SANDGATE_TOKEN: the token is shorter than 16 characters"),
            std::string::npos)
      << short_token.output;
  EXPECT_EQ(short_token.output.find("tiny-secret"), std::string::npos) << short_token.output;

  auto check = run_shell(env + "SANDGATE_TOKEN=" + kToken + " " + kSandgate + " check example.com" +
                         blocklist);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output.find(kToken), std::string::npos) << check.output;
}

}  // namespace
}  // namespace sandgate::testing
