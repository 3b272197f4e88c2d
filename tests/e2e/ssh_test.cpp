// End to end with sandgate-connect as ssh's ProxyCommand, against real programs from Debian's
// packages that the tests start themselves: openssh-server's sshd on a loopback port with its
// own host key and an authorized key made by the test, the ssh client, and git (clone and push
// of a repository served over that sshd). A real in-process sandgate (TestProxy) sits in the
// middle with its fake DNS; the SSH port is made an SSH port and `gitlocal.test` a git host.
//
// Also sandgate-connect alone: the banner that arrives in the same read as the proxy's 200
// (goose's helper lost it), half-close through the proxy, where the proxy is found in the
// environment, and each failure's exit status and message.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/ssh_server.hpp"

extern char** environ;

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;
using fakes::TcpOrigin;

const std::string kConnect = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate-connect";

// ---------------------------------------------------------------------------------------------
// Running programs.

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal or by the timeout
  std::string out;
  std::string err;
  bool timed_out = false;
};

// Changes to the environment of a child: a value sets the variable, nullopt removes it.
using EnvChanges = std::map<std::string, std::optional<std::string>>;

// The variables that tell sandgate-connect (or ssh, or git) where a proxy is: removed from every
// child unless a test sets them, so the machine's own settings cannot change an outcome.
const EnvChanges& clean_proxy_env() {
  static const EnvChanges changes = {
      {"SANDBOX_PROXY_PORT", std::nullopt},
      {"HTTPS_PROXY", std::nullopt},
      {"https_proxy", std::nullopt},
      {"ALL_PROXY", std::nullopt},
      {"all_proxy", std::nullopt},
      {"HTTP_PROXY", std::nullopt},
      {"http_proxy", std::nullopt},
      {"GIT_SSH_COMMAND", std::nullopt},
      {"GIT_SSH", std::nullopt},
      {"GIT_CONFIG_GLOBAL", "/dev/null"},
      {"GIT_CONFIG_NOSYSTEM", "1"},
      {"GIT_TERMINAL_PROMPT", "0"},
      {"GIT_AUTHOR_NAME", "sandgate test"},
      {"GIT_AUTHOR_EMAIL", "test@sandgate.invalid"},
      {"GIT_COMMITTER_NAME", "sandgate test"},
      {"GIT_COMMITTER_EMAIL", "test@sandgate.invalid"},
  };
  return changes;
}

std::vector<std::string> child_environment(const EnvChanges& changes) {
  EnvChanges merged = clean_proxy_env();
  for (const auto& [name, value] : changes) {
    merged[name] = value;
  }
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (merged.find(name) == merged.end()) {
      env.push_back(text);
    }
  }
  for (const auto& [name, value] : merged) {
    if (value) {
      env.push_back(name + "=" + *value);
    }
  }
  return env;
}

// Runs `command` with /bin/sh, feeding it `input` and collecting stdout and stderr apart. Its
// stdin is closed after `input`, or with `hold_stdin` kept open until its outputs close. The
// child gets its own process group, killed whole when `timeout` passes. Everything the child
// needs is prepared before fork(): the test process has threads (the proxy, the fakes).
Outcome run(const std::string& command, const std::string& input = "",
            const EnvChanges& env_changes = {}, std::chrono::seconds timeout = 60s,
            bool hold_stdin = false) {
  ::signal(SIGPIPE, SIG_IGN);  // a child that stops reading its input is no reason to die
  const std::vector<std::string> env = child_environment(env_changes);
  std::vector<char*> envp;
  for (const auto& entry : env) {
    envp.push_back(const_cast<char*>(entry.c_str()));
  }
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};

  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(argv[0], const_cast<char* const*>(argv), envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);

  Outcome outcome;
  std::size_t written = 0;
  int in_fd = in[1];
  if (input.empty() && !hold_stdin) {
    ::close(in_fd);
    in_fd = -1;
  } else {
    ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  int out_fd = out[0];
  int err_fd = err[0];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left <= 0ms) {
      outcome.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    const bool input_left = in_fd >= 0 && written < input.size();
    pollfd fds[3] = {
        {input_left ? in_fd : -1, POLLOUT, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    if (::poll(fds, 3, static_cast<int>(left.count())) < 0) {
      continue;
    }
    if (input_left && fds[0].revents != 0) {
      const ssize_t n = ::write(in_fd, input.data() + written, input.size() - written);
      if (n > 0) {
        written += static_cast<std::size_t>(n);
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        written = input.size();  // the child stopped reading
      }
      if (written == input.size() && !hold_stdin) {
        ::close(in_fd);
        in_fd = -1;
      }
    }
    for (auto [index, fd, sink] :
         {std::tuple{1, &out_fd, &outcome.out}, std::tuple{2, &err_fd, &outcome.err}}) {
      if (*fd >= 0 && fds[index].revents != 0) {
        const ssize_t n = ::read(*fd, buffer, sizeof buffer);
        if (n > 0) {
          sink->append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          ::close(*fd);
          *fd = -1;
        }
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

std::string describe(const Outcome& outcome) {
  std::ostringstream text;
  text << "exit " << outcome.exit_code << (outcome.timed_out ? " (timed out)" : "")
       << "\n--- stdout (" << outcome.out.size() << " bytes)\n"
       << outcome.out.substr(0, 2000) << "\n--- stderr\n"
       << outcome.err.substr(0, 4000);
  return text.str();
}

bool contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string current_user() {
  const passwd* entry = ::getpwuid(::geteuid());
  return entry != nullptr ? entry->pw_name : "root";
}

using sandgate::testing::SshServer;

// The ssh command line (for the shell) that reaches this server through sandgate-connect:
// with --proxy, or without a proxy port in goose's form (`sandgate-connect %h %p`, the proxy
// then found in SANDBOX_PROXY_PORT).
std::string ssh_command(const SshServer& sshd, std::optional<std::uint16_t> proxy_port) {
  const std::string proxy_flag =
      proxy_port ? " --proxy 127.0.0.1:" + std::to_string(*proxy_port) : "";
  return "ssh -F /dev/null -o ProxyCommand='" + kConnect + proxy_flag +
         " %h %p' -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
         " -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=20 -i " +
         sshd.client_key() + " -p " + std::to_string(sshd.port());
}

bool have_programs() {
  return run("command -v ssh && command -v ssh-keygen && command -v git && test -x "
             "/usr/sbin/sshd")
             .exit_code == 0;
}

// The proxy for the SSH tests: loopback reachable, `gitlocal.test` a git host, sshd's port an
// SSH port; `gitlocal.test` and `other.test` both resolve to 127.0.0.1.
std::function<void(settings::Settings&)> ssh_policy(std::uint16_t ssh_port) {
  return [ssh_port](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.policy.git_hosts = {"gitlocal.test"};
    s.policy.ssh_ports = {ssh_port};
  };
}

class SshThroughSandgate : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_programs()) {
      FAIL() << "ssh, ssh-keygen, git and /usr/sbin/sshd are required "
                "(scripts/install-deps.sh installs openssh-client, openssh-server, git)";
    }
    sshd_ = std::make_unique<SshServer>();
    proxy_ = std::make_unique<TestProxy>("", ssh_policy(sshd_->port()));
    proxy_->dns().set("gitlocal.test", {"127.0.0.1"});
    proxy_->dns().set("other.test", {"127.0.0.1"});
  }
  void TearDown() override {
    proxy_.reset();
    sshd_.reset();
  }

  std::string ssh() const { return ssh_command(*sshd_, proxy_->port()); }
  std::string user_at(const std::string& host) const { return current_user() + "@" + host; }

  std::unique_ptr<SshServer> sshd_;
  std::unique_ptr<TestProxy> proxy_;
};

TEST_F(SshThroughSandgate, RunsACommandOnAGitHost) {
  auto result = run(ssh() + " " + user_at("gitlocal.test") + " echo hello");
  EXPECT_EQ(result.exit_code, 0) << describe(result) << "\n--- sshd\n" << sshd_->log();
  EXPECT_EQ(result.out, "hello\n") << describe(result);
  EXPECT_TRUE(proxy_->wait_for_log([&](const std::string& log) {
    return contains(log, "\"verdict\":\"allow\"") && contains(log, "gitlocal.test");
  })) << proxy_->log_text();
}

TEST_F(SshThroughSandgate, NonGitHostIsRefusedWithTheReason) {
  auto result = run(ssh() + " " + user_at("other.test") + " echo hello");
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_EQ(result.out, "");
  const std::string expected =
      "sandgate-connect: the proxy at 127.0.0.1:" + std::to_string(proxy_->port()) +
      " refused other.test:" + std::to_string(sshd_->port()) +
      " with 403 Forbidden (ssh-non-git-host): ";
  EXPECT_TRUE(contains(result.err, expected)) << describe(result);
  EXPECT_TRUE(contains(result.err, "other.test is not a git host")) << describe(result);
  // ssh itself says it too: sandgate-connect's in-band SSH disconnect, as OpenSSH prints one
  // (reason 1, host not allowed to connect; ProxyCommand peers are "UNKNOWN port 65535").
  EXPECT_TRUE(contains(result.err,
                       "Received disconnect from UNKNOWN port 65535:1: sandgate: "
                       "the proxy at 127.0.0.1:" +
                           std::to_string(proxy_->port()) +
                           " refused other.test:" + std::to_string(sshd_->port()) +
                           " with 403 Forbidden (ssh-non-git-host): "))
      << describe(result);
  EXPECT_FALSE(contains(sshd_->log(), "Accepted publickey")) << sshd_->log();
}

// A blocklist entry's `#!` message reaches the person running ssh through ssh's own output.
TEST_F(SshThroughSandgate, TheRulesMessageArrivesAsAnSshDisconnect) {
  TestProxy proxy("gitlocal.test:" + std::to_string(sshd_->port()) +
                      "  #! SSH pushes are blocked here; use an https:// remote\n",
                  ssh_policy(sshd_->port()));
  proxy.dns().set("gitlocal.test", {"127.0.0.1"});
  auto result =
      run(ssh_command(*sshd_, proxy.port()) + " " + user_at("gitlocal.test") + " echo hello");
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_EQ(result.out, "");
  const auto at = result.err.find("Received disconnect from UNKNOWN port 65535:1: sandgate: ");
  ASSERT_NE(at, std::string::npos) << describe(result);
  const std::string line = result.err.substr(at, result.err.find('\n', at) - at);
  EXPECT_TRUE(contains(line, "(blocklist): ")) << line;
  EXPECT_TRUE(contains(line, "SSH pushes are blocked here; use an https:// remote.")) << line;
  EXPECT_FALSE(contains(sshd_->log(), "Accepted publickey")) << sshd_->log();
}

// Makes a repository with a few commits and a 3 MiB file of random bytes, pushed to a bare
// repository in `folder`; returns the bare repository's path.
std::string make_served_repository(const std::string& folder) {
  const std::string script =
      "set -e; cd " + folder +
      "; git init -q --bare -b main served.git"
      "; git init -q -b main worktree; cd worktree"
      "; echo one > README; git add README; git commit -q -m one"
      "; head -c 3145728 /dev/urandom > blob.bin; git add blob.bin; git commit -q -m blob"
      "; echo three >> README; git commit -q -am three"
      "; git push -q ../served.git main";
  auto made = run(script);
  if (made.exit_code != 0) {
    throw std::runtime_error("could not make the repository: " + describe(made));
  }
  return folder + "/served.git";
}

TEST_F(SshThroughSandgate, GitCloneAndPushOverSsh) {
  const std::string folder = sshd_->folder();
  const std::string served = make_served_repository(folder);
  // Wired as goose wired its agent: GIT_SSH_COMMAND with the helper, SANDBOX_PROXY_PORT set.
  const EnvChanges git_env = {{"GIT_SSH_COMMAND", ssh_command(*sshd_, std::nullopt)},
                              {"SANDBOX_PROXY_PORT", std::to_string(proxy_->port())}};

  auto clone =
      run("git clone -q " + user_at("gitlocal.test") + ":" + served + " " + folder + "/clone", "",
          git_env);
  ASSERT_EQ(clone.exit_code, 0) << describe(clone) << "\n--- sshd\n" << sshd_->log();
  EXPECT_EQ(read_file(folder + "/clone/blob.bin"), read_file(folder + "/worktree/blob.bin"));
  EXPECT_EQ(read_file(folder + "/clone/README"), "one\nthree\n");
  auto history = run("git -C " + folder + "/clone log --format=%s");
  EXPECT_EQ(history.out, "three\nblob\none\n") << describe(history);

  // A commit pushed back through the same tunnel lands in the served repository.
  auto push = run("set -e; cd " + folder +
                      "/clone; echo pushed > PUSHED; git add PUSHED; git commit -q -m pushed"
                      "; git push -q origin main; git rev-parse HEAD",
                  "", git_env);
  ASSERT_EQ(push.exit_code, 0) << describe(push) << "\n--- sshd\n" << sshd_->log();
  auto served_head = run("git --git-dir=" + served + " rev-parse main");
  EXPECT_EQ(served_head.out, push.out) << describe(served_head);
  auto served_file = run("git --git-dir=" + served + " show main:PUSHED");
  EXPECT_EQ(served_file.out, "pushed\n") << describe(served_file);
}

// ---------------------------------------------------------------------------------------------
// sandgate-connect on its own.

// A fake proxy: one listening socket on 127.0.0.1; each connection's CONNECT head is recorded,
// then `reply` pieces are written one write each (with a pause between them), then the fake
// reads until the client's EOF and closes. An empty reply list means: answer nothing.
class FakeProxy {
 public:
  explicit FakeProxy(std::vector<std::string> reply) : reply_(std::move(reply)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 8) != 0) {
      throw std::runtime_error("fake proxy: bind/listen failed");
    }
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeProxy() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }

  std::uint16_t port() const { return port_; }
  std::string request() const {
    std::lock_guard lock(mutex_);
    return request_;
  }
  std::string after_tunnel() const {  // what the client sent after its CONNECT head
    std::lock_guard lock(mutex_);
    return after_;
  }

 private:
  void serve() {
    const int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) {
      return;
    }
    std::string received;
    char buffer[4096];
    while (received.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) {
        break;
      }
      received.append(buffer, static_cast<std::size_t>(n));
    }
    for (std::size_t i = 0; i < reply_.size(); ++i) {
      if (i > 0) {
        std::this_thread::sleep_for(50ms);
      }
      ::send(fd, reply_[i].data(), reply_[i].size(), MSG_NOSIGNAL);
    }
    // Read until the client's EOF (or the fake is stopped), then close.
    for (;;) {
      pollfd entry{fd, POLLIN, 0};
      if (::poll(&entry, 1, 100) == 0) {
        if (stopping_) {
          break;
        }
        continue;
      }
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) {
        break;
      }
      received.append(buffer, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard lock(mutex_);
      const auto end = received.find("\r\n\r\n");
      request_ = received.substr(0, end == std::string::npos ? received.size() : end + 4);
      after_ = end == std::string::npos ? "" : received.substr(end + 4);
    }
    ::close(fd);
  }

  std::vector<std::string> reply_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::string request_;
  std::string after_;
};

std::string connect_command(std::uint16_t proxy_port, const std::string& host, std::uint16_t port,
                            const std::string& extra = "") {
  return kConnect + " --proxy 127.0.0.1:" + std::to_string(proxy_port) + " " + extra + host + " " +
         std::to_string(port);
}

TEST(SandgateConnect, BannerInTheSameWriteAsThe200IsDelivered) {
  FakeProxy fake({"HTTP/1.1 200 Connection Established\r\n\r\nSSH-2.0-Fake\r\n"});
  auto result = run(connect_command(fake.port(), "fake.test", 22), "client bytes");
  EXPECT_EQ(result.exit_code, 0) << describe(result);
  EXPECT_EQ(result.out, "SSH-2.0-Fake\r\n") << describe(result);
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(fake.request(), "CONNECT fake.test:22 HTTP/1.1\r\nHost: fake.test:22\r\n\r\n");
  EXPECT_EQ(fake.after_tunnel(), "client bytes");
}

TEST(SandgateConnect, HeadSplitAcrossWritesAndIpv6Target) {
  FakeProxy fake({"HTTP/1.1 200 Connection", " Established\r\n\r", "\nSSH-2.0-", "Fake\r\n"});
  auto result = run(connect_command(fake.port(), "2001:db8::7", 2222));
  EXPECT_EQ(result.exit_code, 0) << describe(result);
  EXPECT_EQ(result.out, "SSH-2.0-Fake\r\n") << describe(result);
  EXPECT_EQ(fake.request(),
            "CONNECT [2001:db8::7]:2222 HTTP/1.1\r\nHost: [2001:db8::7]:2222\r\n\r\n");
}

TEST(SandgateConnect, ProxyDownNamesTheAddress) {
  const std::uint16_t closed = free_port();
  auto result = run(connect_command(closed, "gitlocal.test", 22));
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_EQ(result.err,
            "sandgate-connect: cannot reach the proxy at 127.0.0.1:" + std::to_string(closed) +
                " (from --proxy): Connection refused; is the proxy running?\n");

  // The same through goose's variable: the message names where the setting came from.
  result = run(std::string(kConnect) + " gitlocal.test 22", "",
               {{"SANDBOX_PROXY_PORT", std::to_string(closed)}});
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_TRUE(
      contains(result.err, "127.0.0.1:" + std::to_string(closed) + " (from SANDBOX_PROXY_PORT)"))
      << describe(result);
}

TEST(SandgateConnect, ProxyDenialShowsReasonCodeAndSentence) {
  TcpOrigin origin;
  TestProxy proxy("evil.test\n", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("evil.test", {"127.0.0.1"});
  auto result = run(connect_command(proxy.port(), "evil.test", origin.port()));
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_TRUE(contains(result.err,
                       "sandgate-connect: the proxy at 127.0.0.1:" + std::to_string(proxy.port()) +
                           " refused evil.test:" + std::to_string(origin.port()) +
                           " with 403 Forbidden (blocklist): evil.test is blocked"))
      << describe(result);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << describe(result);
  EXPECT_EQ(origin.connections(), 0u);
}

// What ssh reads on a refusal: an identification line, then one well-formed unencrypted
// SSH_MSG_DISCONNECT packet (RFC 4253 section 6) carrying the refusal; nothing when the proxy
// could not even be reached (no proxy answered: ssh's own error says enough).
TEST(SandgateConnect, ARefusalIsAlsoWrittenInBandAsAnSshDisconnect) {
  TestProxy proxy("evil.test\n", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("evil.test", {"127.0.0.1"});
  auto result = run(connect_command(proxy.port(), "evil.test", 22));
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  const std::string banner = "SSH-2.0-sandgate-connect\r\n";
  ASSERT_TRUE(result.out.starts_with(banner)) << describe(result);
  const std::string packet = result.out.substr(banner.size());
  ASSERT_GE(packet.size(), 16u);
  const auto u32 = [&packet](std::size_t at) {
    return (std::uint32_t(std::uint8_t(packet[at])) << 24) |
           (std::uint32_t(std::uint8_t(packet[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(packet[at + 2])) << 8) | std::uint8_t(packet[at + 3]);
  };
  const std::uint32_t length = u32(0);
  ASSERT_EQ(packet.size(), 4 + length);
  EXPECT_EQ(packet.size() % 8, 0u);
  const std::size_t padding = std::uint8_t(packet[4]);
  EXPECT_GE(padding, 4u);
  EXPECT_EQ(packet[5], 1);  // SSH_MSG_DISCONNECT
  EXPECT_EQ(u32(6), 1u);    // SSH_DISCONNECT_HOST_NOT_ALLOWED_TO_CONNECT
  const std::uint32_t text_length = u32(10);
  const std::string text = packet.substr(14, text_length);
  EXPECT_TRUE(contains(text, "sandgate: the proxy at 127.0.0.1:" + std::to_string(proxy.port()) +
                                 " refused evil.test:22 with 403 Forbidden (blocklist)"))
      << text;
  EXPECT_EQ(u32(14 + text_length), 0u);  // empty language tag
  EXPECT_EQ(14 + text_length + 4 + padding, packet.size());

  const std::uint16_t closed = free_port();
  result = run(connect_command(closed, "evil.test", 22));
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_EQ(result.out, "");
}

TEST(SandgateConnect, UpstreamRefusalIsConnectionRefused) {
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::uint16_t closed = free_port();
  auto result = run(connect_command(proxy.port(), "origin.test", closed));
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_TRUE(contains(result.err, "could not connect to origin.test:" + std::to_string(closed) +
                                       ": 502 Bad Gateway (connection-refused)"))
      << describe(result);
}

TEST(SandgateConnect, OtherStatusesAndSilence) {
  {
    FakeProxy fake({"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"});
    auto result = run(connect_command(fake.port(), "a.test", 22));
    EXPECT_EQ(result.exit_code, 255) << describe(result);
    EXPECT_TRUE(contains(result.err,
                         "answered CONNECT a.test:22 with 407 Proxy Authentication "
                         "Required\n"))
        << describe(result);
  }
  {
    FakeProxy fake({"SSH-2.0-OpenSSH_9.2p1\r\n\r\n"});
    auto result = run(connect_command(fake.port(), "a.test", 22));
    EXPECT_EQ(result.exit_code, 255) << describe(result);
    EXPECT_TRUE(contains(result.err, "is not an HTTP proxy")) << describe(result);
  }
  {
    FakeProxy fake({});  // accepts, never answers
    auto result = run(connect_command(fake.port(), "a.test", 22, "--timeout 1 "));
    EXPECT_EQ(result.exit_code, 255) << describe(result);
    EXPECT_TRUE(contains(result.err, "did not answer CONNECT a.test:22 within 1 s"))
        << describe(result);
  }
}

TEST(SandgateConnect, NoProxyConfiguredIsAClearError) {
  auto result = run(std::string(kConnect) + " gitlocal.test 22");
  EXPECT_EQ(result.exit_code, 2) << describe(result);
  for (const char* name :
       {"--proxy", "SANDBOX_PROXY_PORT", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}) {
    EXPECT_TRUE(contains(result.err, name)) << name << "\n" << describe(result);
  }
  result = run(std::string(kConnect) + " gitlocal.test 22", "",
               {{"HTTPS_PROXY", "socks5://127.0.0.1:1080"}});
  EXPECT_EQ(result.exit_code, 2) << describe(result);
  EXPECT_TRUE(contains(result.err, "SOCKS")) << describe(result);
  result = run(std::string(kConnect) + " gitlocal.test");
  EXPECT_EQ(result.exit_code, 2) << describe(result);
  EXPECT_TRUE(contains(result.err, "usage:")) << describe(result);
}

TEST(SandgateConnect, HalfCloseThroughTheProxyEchoes) {
  TcpOrigin origin(TcpOrigin::Mode::echo);
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("echo-origin.test", {"127.0.0.1"});

  // stdin ends at once: its EOF must reach the origin as a half-close, and the echo still come.
  auto result =
      run("printf data | " + connect_command(proxy.port(), "echo-origin.test", origin.port()));
  EXPECT_EQ(result.exit_code, 0) << describe(result);
  EXPECT_EQ(result.out, "data");

  // A payload larger than every buffer on the way, checked byte for byte.
  std::string payload(4 * 1024 * 1024, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<char>((i * 7919) >> 5);
  }
  result = run(connect_command(proxy.port(), "echo-origin.test", origin.port()), payload);
  EXPECT_EQ(result.exit_code, 0) << describe(result);
  EXPECT_TRUE(result.out == payload) << result.out.size() << " bytes came back";
}

TEST(SandgateConnect, ProxyFoundInTheEnvironment) {
  TcpOrigin origin(TcpOrigin::Mode::echo);
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("echo-origin.test", {"127.0.0.1"});
  const std::string port = std::to_string(proxy.port());
  const std::string command =
      "printf data | " + kConnect + " echo-origin.test " + std::to_string(origin.port());

  for (const EnvChanges& env : std::vector<EnvChanges>{
           {{"SANDBOX_PROXY_PORT", port}},
           {{"HTTPS_PROXY", "http://127.0.0.1:" + port}},
           {{"https_proxy", "http://127.0.0.1:" + port + "/"}},
           {{"ALL_PROXY", "127.0.0.1:" + port}},
           // localhost has ::1 and 127.0.0.1; the proxy listens on the latter only.
           {{"all_proxy", "http://localhost:" + port}},
           // Order: an empty SANDBOX_PROXY_PORT is unset, HTTPS_PROXY comes before all_proxy.
           {{"SANDBOX_PROXY_PORT", ""},
            {"HTTPS_PROXY", "http://127.0.0.1:" + port},
            {"all_proxy", "http://127.0.0.1:1"}},
       }) {
    auto result = run(command, "", env);
    EXPECT_EQ(result.exit_code, 0) << env.begin()->first << "\n" << describe(result);
    EXPECT_EQ(result.out, "data") << env.begin()->first;
  }
}

TEST(SandgateConnect, UpstreamResetMidTunnelIsAnError) {
  TcpOrigin origin(TcpOrigin::Mode::reset);
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("reset-origin.test", {"127.0.0.1"});
  // stdin stays open: the reset (not an EOF of ours) must end the tunnel, and the program.
  auto result = run(connect_command(proxy.port(), "reset-origin.test", origin.port()), "data", {},
                    20s, /*hold_stdin=*/true);
  EXPECT_EQ(result.exit_code, 255) << describe(result);
  EXPECT_TRUE(contains(result.err, "reset")) << describe(result);
}

}  // namespace
}  // namespace sandgate::testing
