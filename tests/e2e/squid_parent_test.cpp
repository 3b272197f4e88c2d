// The gate behind a real parent proxy: squid from Debian's package, its own process on loopback
// (tests/support/squid_process.hpp), and real curl as the client. Tunnels (curl -p sends
// CONNECT) and plain http (absolute form to squid) reach a loopback origin through squid;
// squid's refusal is relayed as parent-refused, squid down as parent-unreachable; exclusions go
// direct and blocked names are denied without asking squid; squid's basic authentication with
// the right and the wrong credentials file. Names reach squid unresolved and squid's hosts file
// maps them to 127.0.0.1; nothing queries a name server off the machine.
//
// Also the SOCKS side of the issue: `git clone` with ALL_PROXY=socks5h:// against a loopback git
// server (dumb http, python3's http.server).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "proxy/parent/parent_proxy.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/squid_process.hpp"

namespace sandgate::testing {
namespace {

using fakes::HttpOrigin;

const std::string kCleanEnv =
    "env -u ALL_PROXY -u all_proxy -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY "
    "-u NO_PROXY -u no_proxy ";

bool contains(const std::string& text, std::string_view piece) {
  return text.find(piece) != std::string::npos;
}

std::string port_text(std::uint16_t port) { return std::to_string(port); }

HttpOrigin::Handler hello_handler() {
  return [](const HttpOrigin::Request&) {
    return HttpOrigin::Reply::fixed(200, "hello through the parent\n");
  };
}

// curl through the gate as an HTTP proxy; `-p` makes it tunnel with CONNECT.
std::string curl(std::uint16_t gate_port, std::string_view options, std::string_view url) {
  return kCleanEnv +
         "curl -sS --max-time 20 --noproxy '' -x http://127.0.0.1:" + port_text(gate_port) + " " +
         std::string(options) + " " + std::string(url);
}

// The gate's settings for a parent at `url`: loopback origins allowed (squid connects to them;
// the gate itself dials only excluded destinations).
void use_parent(settings::Settings& s, const std::string& url) {
  s.policy.block_loopback = false;
  auto parent = parent::parse_parent_url(url);
  ASSERT_TRUE(parent) << parent.error();
  s.parent_proxy = *parent;
  s.parent_proxy_url = url;
}

// Waits until squid's access log satisfies `predicate` (it writes a line when a request ends).
bool wait_for_access_log(const SquidProcess& squid,
                         const std::function<bool(const std::string&)>& predicate) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate(squid.access_log())) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

class ParentProxy : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!SquidProcess::available() || run_shell("command -v curl").exit_code != 0) {
      FAIL() << "squid and curl are required (scripts/install-deps.sh installs them)";
    }
  }
};

TEST_F(ParentProxy, TunnelsAndPlainRequestsGoThroughSquid) {
  HttpOrigin origin(hello_handler());
  SquidProcess squid({.names = {"origin.test"}});
  TestProxy proxy("", [&](settings::Settings& s) { use_parent(s, squid.url()); });
  const std::string url = "http://origin.test:" + port_text(origin.port());

  auto tunnelled = run_shell(curl(proxy.port(), "-p", url + "/tunnel"));
  EXPECT_EQ(tunnelled.exit_code, 0) << tunnelled.output;
  EXPECT_EQ(tunnelled.output, "hello through the parent\n");
  auto plain = run_shell(curl(proxy.port(), "", url + "/plain"));
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output, "hello through the parent\n");

  // Squid saw both: the tunnel as CONNECT, the plain request in absolute form.
  const std::string authority = "origin.test:" + port_text(origin.port());
  EXPECT_TRUE(wait_for_access_log(squid, [&](const std::string& log) {
    return contains(log, "CONNECT " + authority) &&
           contains(log, "GET http://" + authority + "/plain");
  })) << squid.access_log();
  // The gate's allow line names the parent; it never resolved origin.test (its DNS has no
  // answer for it: a lookup would have failed the request).
  EXPECT_TRUE(proxy.wait_for_log([&](const std::string& log) {
    return contains(log, "through the parent proxy 127.0.0.1:" + port_text(squid.port()));
  })) << proxy.log_text();
}

TEST_F(ParentProxy, SquidRefusingIsParentRefused) {
  HttpOrigin origin(hello_handler());
  SquidProcess squid({.names = {"origin.test"}, .refused = {"refused.test"}});
  TestProxy proxy("", [&](settings::Settings& s) { use_parent(s, squid.url()); });

  auto refused = run_shell(
      curl(proxy.port(), "-p -v", "http://refused.test:" + port_text(origin.port()) + "/"));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_TRUE(contains(refused.output, "< HTTP/1.1 502 Bad Gateway")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "parent-refused")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "answered 403")) << refused.output;
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"host\":\"refused.test\"") &&
           contains(log, "\"reason\":\"parent-refused\"") && contains(log, "answered 403");
  })) << proxy.log_text();
  EXPECT_TRUE(wait_for_access_log(squid, [](const std::string& log) {
    return contains(log, "TCP_DENIED/403") && contains(log, "CONNECT refused.test");
  })) << squid.access_log();
}

TEST_F(ParentProxy, SquidDownIsParentUnreachable) {
  HttpOrigin origin(hello_handler());
  const std::uint16_t nobody = free_port();  // nothing listens there
  TestProxy proxy(
      "", [&](settings::Settings& s) { use_parent(s, "http://127.0.0.1:" + port_text(nobody)); });
  const std::string url = "http://origin.test:" + port_text(origin.port()) + "/";
  auto tunnel = run_shell(curl(proxy.port(), "-p -v", url));
  EXPECT_NE(tunnel.exit_code, 0) << tunnel.output;
  EXPECT_TRUE(contains(tunnel.output, "< HTTP/1.1 502")) << tunnel.output;
  EXPECT_TRUE(contains(tunnel.output, "parent-unreachable")) << tunnel.output;
  auto plain = run_shell(curl(proxy.port(), "-v", url));
  EXPECT_TRUE(contains(plain.output, "< HTTP/1.1 502")) << plain.output;
  EXPECT_TRUE(contains(plain.output, "parent-unreachable")) << plain.output;
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"method\":\"CONNECT\"") && contains(log, "\"method\":\"GET\"") &&
           contains(log, "\"reason\":\"parent-unreachable\"") && contains(log, "was refused");
  })) << proxy.log_text();
}

TEST_F(ParentProxy, ExclusionsGoDirectAndBlockedNamesNeverReachSquid) {
  HttpOrigin origin(hello_handler());
  SquidProcess squid({.names = {"origin.test"}});
  TestProxy proxy("blocked.test\n", [&](settings::Settings& s) {
    use_parent(s, squid.url());
    auto exclude = parent::ExcludeList::parse("direct.test, 10.0.0.0/8");
    ASSERT_TRUE(exclude);
    s.parent_exclude = *exclude;
    s.parent_exclude_text = "direct.test, 10.0.0.0/8";
  });
  proxy.dns().set("direct.test", {"127.0.0.1"});  // the gate resolves what it dials itself
  const std::string port = port_text(origin.port());

  auto direct = run_shell(curl(proxy.port(), "-p", "http://direct.test:" + port + "/"));
  EXPECT_EQ(direct.exit_code, 0) << direct.output;
  EXPECT_EQ(direct.output, "hello through the parent\n");
  // A name below an excluded one is excluded too: the gate looks it up itself, and its DNS has
  // no answer for it.
  auto direct_plain = run_shell(curl(proxy.port(), "-f", "http://sub.direct.test:" + port + "/"));
  EXPECT_NE(direct_plain.exit_code, 0) << direct_plain.output;
  auto blocked = run_shell(curl(proxy.port(), "-p -v", "http://blocked.test:" + port + "/"));
  EXPECT_TRUE(contains(blocked.output, "< HTTP/1.1 403")) << blocked.output;
  // Then one through squid, so that its log is known to be written past the ones above.
  auto through = run_shell(curl(proxy.port(), "", "http://origin.test:" + port + "/last"));
  EXPECT_EQ(through.exit_code, 0) << through.output;
  ASSERT_TRUE(wait_for_access_log(squid, [](const std::string& log) {
    return contains(log, "/last");
  })) << squid.access_log();
  EXPECT_FALSE(contains(squid.access_log(), "direct.test")) << squid.access_log();
  EXPECT_FALSE(contains(squid.access_log(), "blocked.test")) << squid.access_log();
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"host\":\"blocked.test\"") &&
           contains(log, "\"reason\":\"blocklist\"") &&
           contains(log, "\"host\":\"sub.direct.test\"") &&
           contains(log, "\"reason\":\"dns-not-found\"");
  })) << proxy.log_text();
}

TEST_F(ParentProxy, SquidBasicAuthenticationRightAndWrong) {
  HttpOrigin origin(hello_handler());
  SquidProcess squid({.names = {"origin.test"}, .users = {{"agent", "pa:ss-word"}}});
  const std::string url = "http://origin.test:" + port_text(origin.port()) + "/";
  const auto with_credentials = [&](const std::string& line) {
    return [&, line](settings::Settings& s) {
      use_parent(s, squid.url());
      s.parent_credentials = parent::parse_credentials(line).value();
    };
  };
  {
    TestProxy proxy("", with_credentials("agent:pa:ss-word"));
    auto tunnel = run_shell(curl(proxy.port(), "-p", url));
    EXPECT_EQ(tunnel.exit_code, 0) << tunnel.output;
    EXPECT_EQ(tunnel.output, "hello through the parent\n");
    auto plain = run_shell(curl(proxy.port(), "", url));
    EXPECT_EQ(plain.exit_code, 0) << plain.output;
    EXPECT_EQ(plain.output, "hello through the parent\n");
    EXPECT_FALSE(contains(proxy.log_text(), "pa:ss-word"));
  }
  {
    TestProxy proxy("", with_credentials("agent:wrong"));
    auto tunnel = run_shell(curl(proxy.port(), "-p -v", url));
    EXPECT_TRUE(contains(tunnel.output, "< HTTP/1.1 502")) << tunnel.output;
    EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
      return contains(log, "\"reason\":\"parent-refused\"") && contains(log, "answered 407");
    })) << proxy.log_text();
    EXPECT_FALSE(contains(proxy.log_text(), "wrong"));
  }
  EXPECT_TRUE(wait_for_access_log(squid, [](const std::string& log) {
    return contains(log, "TCP_DENIED/407") && contains(log, " agent ");
  })) << squid.access_log();
}

// A python3 http.server serving a folder (a dumb-http git repository), stopped on destruction.
class StaticServer {
 public:
  explicit StaticServer(const std::string& folder) : port_(free_port()) {
    pid_ = ::fork();
    if (pid_ == 0) {
#ifdef __linux__
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "w", stderr);
      const std::string port = std::to_string(port_);
      ::execlp("python3", "python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory",
               folder.c_str(), port.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !port_accepts(port_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  ~StaticServer() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  std::uint16_t port() const { return port_; }

 private:
  std::uint16_t port_;
  pid_t pid_ = -1;
};

TEST(SocksGit, CloneOverAllProxySocks5h) {
  if (run_shell("command -v git && command -v python3").exit_code != 0) {
    FAIL() << "git and python3 are required (scripts/install-deps.sh installs them)";
  }
  char pattern[] = "/tmp/sandgate-git-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string folder = pattern;
  const std::string git = "env -i PATH=/usr/bin:/bin HOME=" + folder +
                          " GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t "
                          "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t git ";
  auto made = run_shell("cd " + folder + " && mkdir work && cd work && " + git + "init -q && " +
                        "echo through-socks > file.txt && " + git + "add file.txt && " + git +
                        "commit -qm one && " + git + "clone -q --bare . ../serve/repo.git && " +
                        "cd ../serve/repo.git && " + git + "update-server-info");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  StaticServer server(folder + "/serve");
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("git.test", {"127.0.0.1"});

  // ALL_PROXY only: git's libcurl takes it for http:// too, and socks5h lets the gate resolve.
  auto cloned =
      run_shell("cd " + folder + " && env -i PATH=/usr/bin:/bin HOME=" + folder +
                " GIT_CONFIG_NOSYSTEM=1 ALL_PROXY=socks5h://127.0.0.1:" + port_text(proxy.port()) +
                " git clone -q http://git.test:" + port_text(server.port()) +
                "/repo.git cloned && cat cloned/file.txt");
  EXPECT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_TRUE(contains(cloned.output, "through-socks")) << cloned.output;
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"method\":\"SOCKS5\"") && contains(log, "\"host\":\"git.test\"") &&
           contains(log, "\"verdict\":\"allow\"");
  })) << proxy.log_text();
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
}

}  // namespace
}  // namespace sandgate::testing
