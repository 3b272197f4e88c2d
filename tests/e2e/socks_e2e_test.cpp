// End to end through the gate's SOCKS5 with real clients from Debian's packages: curl with
// --socks5-hostname (the name goes to the gate) and --socks5 (an IP literal), allowed, blocked
// and with the token as SOCKS credentials; and ssh with `ProxyCommand nc -X 5 -x ...`
// (netcat-openbsd) to a real sshd on loopback, named as a git host and as a non-git host. A real
// in-process gate (TestProxy) with its fake DNS; nothing leaves the machine (curl is given IP
// literals or names only the gate resolves; nc sends names unresolved).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/fakes/http_origin.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/ssh_server.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;
using fakes::HttpOrigin;

// Every proxy variable of the machine removed, so that only the command line's proxy counts.
const std::string kCleanEnv =
    "env -u ALL_PROXY -u all_proxy -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY "
    "-u NO_PROXY -u no_proxy ";

bool contains(const std::string& text, std::string_view piece) {
  return text.find(piece) != std::string::npos;
}

std::string port_text(std::uint16_t port) { return std::to_string(port); }

HttpOrigin::Handler hello_handler() {
  return [](const HttpOrigin::Request&) {
    return HttpOrigin::Reply::fixed(200, "hello through socks\n");
  };
}

std::string curl(std::string_view socks_option, std::uint16_t proxy_port,
                 std::string_view extra = "") {
  return kCleanEnv + "curl -sS --max-time 20 --noproxy '' " + std::string(socks_option) +
         " 127.0.0.1:" + port_text(proxy_port) + " " + std::string(extra) + " ";
}

TEST(SocksCurl, HostnameAllowedAndBlocked) {
  if (run_shell("command -v curl").exit_code != 0) {
    FAIL() << "curl is required (scripts/install-deps.sh installs it)";
  }
  HttpOrigin origin(hello_handler());
  TestProxy proxy("blocked.test\n", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  proxy.dns().set("blocked.test", {"127.0.0.1"});

  auto allowed = run_shell(curl("--socks5-hostname", proxy.port()) +
                           "http://origin.test:" + port_text(origin.port()) + "/");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_EQ(allowed.output, "hello through socks\n");

  auto blocked = run_shell(curl("--socks5-hostname", proxy.port()) +
                           "http://blocked.test:" + port_text(origin.port()) + "/");
  EXPECT_EQ(blocked.exit_code, 97) << blocked.output;              // CURLE_PROXY
  EXPECT_TRUE(contains(blocked.output, "(2)")) << blocked.output;  // not allowed by ruleset

  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"method\":\"SOCKS5\"") && contains(log, "\"host\":\"origin.test\"") &&
           contains(log, "\"reason\":\"blocklist\"") && contains(log, "blocked.txt:1");
  })) << proxy.log_text();
}

// --socks5 resolves on the client and sends an address: an IP literal to the policy.
TEST(SocksCurl, AddressesAreIpLiterals) {
  HttpOrigin origin(hello_handler());
  const std::string url = "http://127.0.0.1:" + port_text(origin.port()) + "/";
  {
    TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
    auto denied = run_shell(curl("--socks5", proxy.port()) + url);
    EXPECT_EQ(denied.exit_code, 97) << denied.output;
    EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
      return contains(log, "\"method\":\"SOCKS5\"") && contains(log, "\"reason\":\"ip-address\"");
    })) << proxy.log_text();
  }
  {
    TestProxy proxy("", [](settings::Settings& s) {
      s.policy.block_loopback = false;
      s.policy.allow_ip = true;
    });
    auto allowed = run_shell(curl("--socks5", proxy.port()) + url);
    EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
    EXPECT_EQ(allowed.output, "hello through socks\n");
  }
}

TEST(SocksCurl, TheTokenAsSocksCredentials) {
  HttpOrigin origin(hello_handler());
  const std::string token = "socks-e2e-token-0123456789";
  TestProxy proxy("", [&token](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.token = token;
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string url = "http://origin.test:" + port_text(origin.port()) + "/";
  const std::string base = kCleanEnv + "curl -sS --max-time 20 --noproxy '' -x socks5h://";
  const std::string at = "127.0.0.1:" + port_text(proxy.port()) + " ";

  auto missing = run_shell(base + at + url);
  EXPECT_EQ(missing.exit_code, 97) << missing.output;
  auto wrong = run_shell(base + "agent:wrong-token@" + at + url);
  EXPECT_EQ(wrong.exit_code, 97) << wrong.output;
  auto right = run_shell(base + "agent:" + token + "@" + at + url);
  EXPECT_EQ(right.exit_code, 0) << right.output;
  EXPECT_EQ(right.output, "hello through socks\n");

  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"reason\":\"auth-required\"") &&
           contains(log, "\"reason\":\"auth-failed\"") && contains(log, "\"verdict\":\"allow\"");
  })) << proxy.log_text();
  EXPECT_FALSE(contains(proxy.log_text(), "wrong-token"));
}

// ---- ssh with ProxyCommand nc -X 5 ----

// ssh to `host` on this server's port through the gate's SOCKS5 with netcat-openbsd.
std::string ssh_via_nc(const SshServer& sshd, std::uint16_t proxy_port, const std::string& host) {
  const passwd* entry = ::getpwuid(::geteuid());
  const std::string user = entry != nullptr ? entry->pw_name : "root";
  return kCleanEnv +
         "ssh -F /dev/null -o ProxyCommand='nc -X 5 -x 127.0.0.1:" + port_text(proxy_port) +
         " %h %p' -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
         " -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=20 -i " +
         sshd.client_key() + " -p " + port_text(sshd.port()) + " " + user + "@" + host +
         " echo hello </dev/null";
}

TEST(SocksSsh, NcDashX5ReachesAGitHostAndNotAnother) {
  if (run_shell("command -v ssh && command -v ssh-keygen && test -x /usr/sbin/sshd && "
                "nc -h 2>&1 | grep -q -- -X")
          .exit_code != 0) {
    FAIL() << "ssh, sshd and netcat-openbsd's nc are required (scripts/install-deps.sh "
              "installs openssh-client, openssh-server, netcat-openbsd)";
  }
  SshServer sshd;
  TestProxy proxy("", [&sshd](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.policy.git_hosts = {"gitlocal.test"};
    s.policy.ssh_ports = {sshd.port()};
  });
  proxy.dns().set("gitlocal.test", {"127.0.0.1"});
  proxy.dns().set("other.test", {"127.0.0.1"});

  auto git_host = run_shell(ssh_via_nc(sshd, proxy.port(), "gitlocal.test"));
  EXPECT_EQ(git_host.exit_code, 0) << git_host.output << "\n--- sshd\n" << sshd.log();
  EXPECT_EQ(git_host.output, "hello\n");

  auto other = run_shell(ssh_via_nc(sshd, proxy.port(), "other.test"));
  EXPECT_EQ(other.exit_code, 255) << other.output;
  EXPECT_FALSE(contains(other.output, "hello")) << other.output;
  const std::string sshd_log = sshd.log();
  std::size_t accepted = 0;
  for (auto at = sshd_log.find("Accepted publickey"); at != std::string::npos;
       at = sshd_log.find("Accepted publickey", at + 1)) {
    ++accepted;
  }
  EXPECT_EQ(accepted, 1u) << "only the git host's login reached sshd\n" << sshd_log;

  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return contains(log, "\"method\":\"SOCKS5\"") && contains(log, "\"host\":\"gitlocal.test\"") &&
           contains(log, "\"reason\":\"ssh-non-git-host\"") &&
           contains(log, "\"host\":\"other.test\"");
  })) << proxy.log_text();
}

}  // namespace
}  // namespace sandgate::testing
