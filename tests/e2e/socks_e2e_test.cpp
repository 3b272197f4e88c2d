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

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
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

std::string make_temp_folder() {
  char pattern[] = "/tmp/sandgate-socks-ssh-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  return pattern;
}

// A real sshd in the foreground on 127.0.0.1 with its own host key, accepting one key the test
// made (as tests/e2e/ssh_test.cpp sets one up).
class SshServer {
 public:
  SshServer() : folder_(make_temp_folder()) {
    ::mkdir("/run/sshd", 0755);  // sshd insists on its privilege separation directory
    auto keys = run_shell("ssh-keygen -q -t ed25519 -N '' -f " + folder_ +
                          "/host_key && ssh-keygen -q -t ed25519 -N '' -f " + folder_ +
                          "/client_key && cp " + folder_ + "/client_key.pub " + folder_ +
                          "/authorized_keys");
    if (keys.exit_code != 0) {
      throw std::runtime_error("ssh-keygen failed: " + keys.output);
    }
    port_ = free_port();
    {
      std::ofstream config(folder_ + "/sshd_config");
      config << "ListenAddress 127.0.0.1:" << port_ << "\nHostKey " << folder_
             << "/host_key\nAuthorizedKeysFile " << folder_
             << "/authorized_keys\nPidFile none\nStrictModes no\nUsePAM no\n"
                "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n"
                "PrintMotd no\nLogLevel INFO\n";
    }
    const std::string config = folder_ + "/sshd_config";
    const std::string log = folder_ + "/sshd.log";
    [[maybe_unused]] const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
#ifdef __linux__
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a crashed test takes its sshd with it
      if (::getppid() != parent) {
        ::_exit(127);
      }
#endif
      const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int null_fd = ::open("/dev/null", O_RDWR);
      ::dup2(null_fd, 0);
      ::dup2(null_fd, 1);
      ::dup2(log_fd, 2);
      ::execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", config.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      if (contains(read_file(log), "Server listening on")) {
        return;
      }
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("sshd did not start: " + read_file(log));
  }
  ~SshServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::string log() const { return read_file(folder_ + "/sshd.log"); }

  // ssh to `host` on this server's port through the gate's SOCKS5 with netcat-openbsd.
  std::string ssh_via_nc(std::uint16_t proxy_port, const std::string& host) const {
    const passwd* entry = ::getpwuid(::geteuid());
    const std::string user = entry != nullptr ? entry->pw_name : "root";
    return kCleanEnv +
           "ssh -F /dev/null -o ProxyCommand='nc -X 5 -x 127.0.0.1:" + port_text(proxy_port) +
           " %h %p' -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
           " -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=20 -i " +
           folder_ + "/client_key -p " + port_text(port_) + " " + user + "@" + host +
           " echo hello </dev/null";
  }

 private:
  std::string folder_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

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

  auto git_host = run_shell(sshd.ssh_via_nc(proxy.port(), "gitlocal.test"));
  EXPECT_EQ(git_host.exit_code, 0) << git_host.output << "\n--- sshd\n" << sshd.log();
  EXPECT_EQ(git_host.output, "hello\n");

  auto other = run_shell(sshd.ssh_via_nc(proxy.port(), "other.test"));
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
