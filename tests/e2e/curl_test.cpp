// End to end with the real curl from Debian: HTTPS through a CONNECT tunnel of a running
// sandgate to a real TLS server (openssl s_server) holding a certificate from a test CA that the
// test makes; and a blocked host, which curl reports as a failed CONNECT with status 403.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"

namespace sandgate::testing {
namespace {

// A throw-away CA and a server certificate for origin.test signed by it
// (make_test_certificates), plus `openssl s_server -www` serving HTTPS with it on loopback.
class TlsOrigin {
 public:
  explicit TlsOrigin(const std::string& folder) : folder_(folder) {
    make_test_certificates(folder_, {"DNS:origin.test", "DNS:blocked.test"});
    port_ = free_port();
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string accept = "127.0.0.1:" + std::to_string(port_);
      const std::string cert = folder_ + "/server.pem";
      const std::string key = folder_ + "/server.key";
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "r", stdin);
      ::execlp("openssl", "openssl", "s_server", "-quiet", "-www", "-accept", accept.c_str(),
               "-cert", cert.c_str(), "-key", key.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !port_accepts(port_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~TlsOrigin() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::uint16_t port() const { return port_; }
  std::string ca() const { return folder_ + "/ca.pem"; }

 private:
  std::string folder_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

TEST(CurlEndToEnd, HttpsThroughTheTunnelAndABlockedHost) {
  if (std::system("command -v curl >/dev/null && command -v openssl >/dev/null") != 0) {
    FAIL() << "curl and openssl are required (scripts/install-deps.sh installs them)";
  }
  TestProxy proxy("blocked.test\n", [](settings::Settings& s) {
    s.policy.block_loopback = false;  // the test origin is on loopback
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  proxy.dns().set("blocked.test", {"127.0.0.1"});
  TlsOrigin origin(proxy.folder());
  ASSERT_TRUE(port_accepts(origin.port())) << "openssl s_server did not start";

  const std::string curl = "curl -sS --max-time 20 --noproxy '' --cacert " + origin.ca() +
                           " -x http://127.0.0.1:" + std::to_string(proxy.port()) + " ";
  auto allowed = run_shell(curl + "https://origin.test:" + std::to_string(origin.port()) + "/");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("s_server"), std::string::npos) << allowed.output;

  auto blocked = run_shell(curl + "https://blocked.test:" + std::to_string(origin.port()) + "/");
  EXPECT_EQ(blocked.exit_code, 56) << blocked.output;  // CURLE_RECV_ERROR: CONNECT failed
  EXPECT_NE(blocked.output.find("403"), std::string::npos) << blocked.output;

  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"host\":\"origin.test\"") != std::string::npos &&
           log.find("\"reason\":\"blocklist\"") != std::string::npos;
  })) << proxy.log_text();

  // With the origin's port declared a TLS port, curl's real ClientHello is inspected: its server
  // name matches, so it passes.
  TestProxy checking("", [&origin](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.tls_ports = {origin.port()};
  });
  checking.dns().set("origin.test", {"127.0.0.1"});
  const std::string curl_checked = "curl -sS --max-time 20 --noproxy '' --cacert " + origin.ca() +
                                   " -x http://127.0.0.1:" + std::to_string(checking.port()) + " ";
  auto inspected =
      run_shell(curl_checked + "https://origin.test:" + std::to_string(origin.port()) + "/");
  EXPECT_EQ(inspected.exit_code, 0) << inspected.output;
  EXPECT_NE(inspected.output.find("s_server"), std::string::npos) << inspected.output;
}

}  // namespace
}  // namespace sandgate::testing
