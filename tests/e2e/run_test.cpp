// End to end for `sandgate run`, with the real executable and real programs from Debian (curl,
// openssl, sh, setpriv): the gate is the confined command's only way out. Each test runs
//   build/bin/sandgate run [SETTINGS] -- CMD
// as a subprocess with a controlled environment, HOME in a fresh temporary folder, a fake DNS
// server (in this process) for the gate, and an HTTPS origin (openssl s_server) on the host's
// loopback. The gate runs in the host's network namespace and dials that origin; the command
// runs in its own namespace where the host's loopback does not exist.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_dns_server.hpp"
#include "tests/fakes/fake_launchdarkly.hpp"
#include "tests/support/loopback_ports.hpp"

extern char** environ;

namespace sandgate::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kBinDir = std::string(SANDGATE_BINARY_DIR) + "/bin";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---------------------------------------------------------------------------------------------
// Running programs.

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal, or by the timeout
  std::string out;
  std::string err;
  bool timed_out = false;
  std::chrono::milliseconds elapsed{0};
};

// A program started in its own process group, stdout and stderr going to files.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
          const std::string& output_prefix)
      : out_path_(output_prefix + ".out"), err_path_(output_prefix + ".err") {
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : env) {
      envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);
    const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    started_ = std::chrono::steady_clock::now();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
    ::close(out);
    ::close(err);
    ::close(in);
  }
  ~Process() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  std::string out() const { return read_file(out_path_); }

  // Waits for the exit, killing the whole group at the timeout.
  Outcome wait(std::chrono::seconds timeout = 60s) {
    Outcome outcome;
    int status = 0;
    const auto deadline = started_ + timeout;
    for (;;) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        outcome.timed_out = true;
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    outcome.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started_);
    pid_ = -1;
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    outcome.out = read_file(out_path_);
    outcome.err = read_file(err_path_);
    return outcome;
  }

  // Waits until stdout contains `text`; false after `timeout`.
  bool wait_for_output(const std::string& text, std::chrono::seconds timeout = 20s) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (out().find(text) != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

 private:
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point started_;
};

// Runs a shell command line and returns its output, for setting things up.
std::pair<int, std::string> shell(const std::string& command) {
  FILE* pipe = ::popen(("(" + command + ") 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    out += buffer;
  }
  const int status = pipe == nullptr ? -1 : ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// ---------------------------------------------------------------------------------------------
// Fakes: an HTTPS origin (openssl s_server with a test CA) and a unix socket server.

class TlsOrigin {
 public:
  explicit TlsOrigin(const std::string& folder) : folder_(folder) {
    auto made = shell(
        "cd '" + folder_ +
        "' && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sandgate-run-test-ca"
        " -keyout ca.key -out ca.pem"
        " && openssl req -newkey rsa:2048 -nodes -subj /CN=origin.test"
        " -keyout server.key -out server.csr"
        " && printf 'subjectAltName=DNS:origin.test,DNS:blocked.test,IP:127.0.0.1\\n' > san.ext"
        " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
        " -days 2 -extfile san.ext -out server.pem");
    if (made.first != 0) {
      throw std::runtime_error("openssl could not make the test CA: " + made.second);
    }
    ::chmod((folder_ + "/ca.pem").c_str(), 0644);
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
    for (int i = 0; i < 250 && !port_accepts(port_); ++i) {
      std::this_thread::sleep_for(20ms);
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

// A unix socket server that accepts and holds each connection open without answering: a client
// that reaches it waits until its own timeout (curl: exit 28), one that cannot is refused (7).
class UnixServer {
 public:
  explicit UnixServer(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::chmod(path.c_str(), 0777);
    ::listen(fd_, 16);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) > 0) {
          const int client = ::accept(fd_, nullptr, nullptr);
          if (client >= 0) {
            clients_.push_back(client);
          }
        }
      }
    });
  }
  ~UnixServer() {
    stop_ = true;
    thread_.join();
    for (int client : clients_) {
      ::close(client);
    }
    ::close(fd_);
    ::unlink(path_.c_str());
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<int> clients_;  // touched by the thread only, until it is joined
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A real sshd on 127.0.0.1 serving git over SSH, with its own host key and one client key, for
// the user running the test (as tests/e2e/ssh_test.cpp does).
class GitSshServer {
 public:
  explicit GitSshServer(const std::string& folder) : folder_(folder) {
    ::mkdir("/run/sshd", 0755);  // sshd wants it even when it does not use it
    auto made = shell("set -e; cd '" + folder_ +
                      "'; ssh-keygen -q -t ed25519 -N '' -f host_key"
                      "; ssh-keygen -q -t ed25519 -N '' -f client_key"
                      "; cp client_key.pub authorized_keys"
                      "; git init -q --bare -b main served.git"
                      "; git init -q -b main work; cd work; echo hello > README"
                      "; git add README; git -c user.name=t -c user.email=t@t.invalid commit -q "
                      "-m one; git push -q ../served.git main");
    if (made.first != 0) {
      throw std::runtime_error("could not prepare sshd and the repository: " + made.second);
    }
    port_ = free_port();
    std::ofstream(folder_ + "/sshd_config")
        << "ListenAddress 127.0.0.1:" << port_ << "\nHostKey " << folder_
        << "/host_key\nAuthorizedKeysFile " << folder_
        << "/authorized_keys\nPidFile none\nStrictModes no\nUsePAM no\n"
           "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
           "KbdInteractiveAuthentication no\nUseDNS no\nLogLevel INFO\n";
    const std::string config = folder_ + "/sshd_config";
    const std::string log = folder_ + "/sshd.log";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int null_fd = ::open("/dev/null", O_RDWR);
      ::dup2(null_fd, 0);
      ::dup2(null_fd, 1);
      ::dup2(log_fd, 2);
      ::execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", config.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 500 && read_file(log).find("Server listening on") == std::string::npos;
         ++i) {
      std::this_thread::sleep_for(10ms);
    }
  }
  ~GitSshServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::uint16_t port() const { return port_; }
  std::string log() const { return read_file(folder_ + "/sshd.log"); }

 private:
  std::string folder_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

// ---------------------------------------------------------------------------------------------
// The fixture: folders, DNS, origin, and `sandgate run` with a clean environment.

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (shell("command -v curl && command -v openssl").first != 0) {
      FAIL() << "curl and openssl are required (scripts/install-deps.sh installs them)";
    }
    char pattern[] = "/tmp/sandgate-run-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern).string();
    home_ = root_ + "/home";
    work_ = root_ + "/work";
    fs::create_directories(home_);
    fs::create_directories(work_);
    fs::create_directories(root_ + "/origin");
    std::ofstream(root_ + "/blocked.txt") << "blocked.test\n";
    origin_ = std::make_unique<TlsOrigin>(root_ + "/origin");
    ASSERT_TRUE(port_accepts(origin_->port())) << "openssl s_server did not start";
    dns_.set("origin.test", {"127.0.0.1"});
    dns_.set("blocked.test", {"127.0.0.1"});
  }
  void TearDown() override {
    origin_.reset();
    if (!root_.empty()) {
      std::error_code ec;
      fs::remove_all(root_, ec);
    }
  }

  // The environment: this process's without any proxy or sandgate variable, HOME in the
  // temporary folder.
  std::vector<std::string> environment(const std::map<std::string, std::string>& extra = {}) {
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      const std::string name = text.substr(0, text.find('='));
      std::string lower = name;
      for (auto& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      if (lower.find("proxy") != std::string::npos || name.starts_with("SANDGATE_") ||
          name.starts_with("GOOSE_") || name == "HOME" || name == "GIT_SSH_COMMAND" ||
          extra.contains(name)) {  // getenv would find the caller's first
        continue;
      }
      env.push_back(text);
    }
    env.push_back("HOME=" + home_);
    for (const auto& [name, value] : extra) {
      env.push_back(name + "=" + value);
    }
    return env;
  }

  // `sandgate run` with the test's gate settings, then `args` (flags, `--`, CMD...).
  std::vector<std::string> run_argv(const std::vector<std::string>& args,
                                    const std::string& sandgate = kBinDir + "/sandgate") {
    std::vector<std::string> argv = {sandgate,
                                     "run",
                                     "--block-loopback=false",  // the origin is on loopback
                                     "--dns-server",
                                     dns_.endpoint(),
                                     "--blocklist",
                                     root_ + "/blocked.txt",
                                     "--threads",
                                     "1",
                                     "--drain-seconds",
                                     "2"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  Outcome run(const std::vector<std::string>& args, std::chrono::seconds timeout = 60s) {
    Process process(run_argv(args), environment(), root_ + "/run-" + std::to_string(++runs_));
    return process.wait(timeout);
  }

  std::string curl_https(const std::string& host, const std::string& extra = "") const {
    return "curl -sS --max-time 20 --cacert " + origin_->ca() + " " + extra + " https://" + host +
           ":" + std::to_string(origin_->port()) + "/";
  }

  std::string root_;
  std::string home_;
  std::string work_;
  fakes::FakeDnsServer dns_;
  std::unique_ptr<TlsOrigin> origin_;
  int runs_ = 0;
};

std::string describe(const Outcome& o) {
  return "exit " + std::to_string(o.exit_code) + (o.timed_out ? " (timed out)" : "") +
         "\n--- stdout\n" + o.out + "--- stderr\n" + o.err;
}

TEST_F(RunTest, HttpsThroughTheGateSucceeds) {
  auto o = run({"--", "sh", "-c", curl_https("origin.test")});
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  EXPECT_NE(o.out.find("s_server"), std::string::npos) << describe(o);
  // The start-up message says what is in force.
  EXPECT_NE(o.err.find("sandgate run: confined: user, network and mount namespaces"),
            std::string::npos)
      << describe(o);
  // The gate logged the tunnel it made.
  EXPECT_NE(o.err.find("origin.test"), std::string::npos) << describe(o);
}

TEST_F(RunTest, ABlockedHostFailsWithThe403ReasonVisibleToCurl) {
  auto o = run({"--", "sh", "-c",
                curl_https("blocked.test", "-v") + " 2>" + work_ + "/curl.err; echo rc=$?"});
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  EXPECT_NE(o.out.find("rc=56"), std::string::npos) << describe(o);  // CONNECT refused
  const std::string curl_err = read_file(work_ + "/curl.err");
  EXPECT_NE(curl_err.find("403"), std::string::npos) << curl_err;
  EXPECT_NE(curl_err.find("blocklist"), std::string::npos) << curl_err;  // Proxy-Status details
}

TEST_F(RunTest, TheLaunchDarklyAllowlistAppliesToTheConfinedCommand) {
  fakes::FakeLaunchDarkly launchdarkly("0123456789abcdef01234567");
  launchdarkly.set_value("origin.test", "false");
  const std::map<std::string, std::string> ld = {
      {"LAUNCHDARKLY_CLIENT_ID", "0123456789abcdef01234567"},
      {"LAUNCHDARKLY_BASE_URI", launchdarkly.base_uri()},
      {"SSL_CERT_FILE", launchdarkly.ca_file()},
      {"GOOSE_SANDBOX_LD_FAILOVER", "deny"}};
  auto run_with_ld = [&](const std::string& script) {
    Process process(run_argv({"--", "sh", "-c", script}), environment(ld),
                    root_ + "/run-" + std::to_string(++runs_));
    return process.wait(60s);
  };
  auto denied = run_with_ld(curl_https("origin.test", "-v") + " 2>" + work_ + "/ld.err; echo rc=$?");
  EXPECT_NE(denied.out.find("rc=56"), std::string::npos) << describe(denied);
  const std::string curl_err = read_file(work_ + "/ld.err");
  EXPECT_NE(curl_err.find("403"), std::string::npos) << curl_err;
  EXPECT_NE(curl_err.find("launchdarkly: LaunchDarkly's flag"), std::string::npos) << curl_err;

  launchdarkly.set_value("origin.test", "true");
  auto allowed = run_with_ld(curl_https("origin.test"));
  EXPECT_EQ(allowed.exit_code, 0) << describe(allowed);
  EXPECT_EQ(launchdarkly.evaluations_for("origin.test"), 2) << "each run asks once";
}

TEST_F(RunTest, TheHostsLoopbackIsOutOfReachButTheGateWorks) {
  const std::string port = std::to_string(origin_->port());
  auto o = run({"--", "sh", "-c",
                "curl -sS --noproxy '*' --max-time 5 --cacert " + origin_->ca() +
                    " https://127.0.0.1:" + port + "/ >/dev/null 2>&1; echo direct=$?; " +
                    curl_https("origin.test") + " >/dev/null; echo gate=$?"});
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  EXPECT_NE(o.out.find("direct=7"), std::string::npos) << describe(o);  // connection refused
  EXPECT_NE(o.out.find("gate=0"), std::string::npos) << describe(o);
  // Outside, the same origin answers: the refusal inside is the namespace's doing.
  EXPECT_TRUE(port_accepts(origin_->port()));
}

TEST_F(RunTest, DirectConnectionsToTheNetworkFailAtOnce) {
  // 192.0.2.1 and 2001:db8::1 are documentation addresses that are never reached: inside the
  // namespace there is no route at all, so connect() fails immediately.
  auto o = run({"--", "sh", "-c",
                "curl -sS --noproxy '*' --max-time 10 http://192.0.2.1/; echo v4=$?; "
                "curl -sS --noproxy '*' --max-time 10 'http://[2001:db8::1]/'; echo v6=$?"});
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  EXPECT_NE(o.out.find("v4=7"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("v6=7"), std::string::npos) << describe(o);
  // No route: both fail at once, far from curl's 10 s limit.
  EXPECT_LT(o.elapsed, 8s) << describe(o);
}

TEST_F(RunTest, ExitStatusAndDeathBySignalAreCmds) {
  auto seven = run({"--", "sh", "-c", "exit 7"});
  EXPECT_EQ(seven.exit_code, 7) << describe(seven);
  auto killed = run({"--", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(killed.exit_code, 128 + SIGTERM) << describe(killed);
  auto missing = run({"--", "/nonexistent/program"});
  EXPECT_EQ(missing.exit_code, 127) << describe(missing);
  EXPECT_NE(missing.err.find("cannot run '/nonexistent/program'"), std::string::npos)
      << describe(missing);
}

TEST_F(RunTest, SignalsAreForwardedToCmd) {
  Process term(run_argv({"--", "sh", "-c",
                         "trap 'echo got-term; exit 42' TERM; echo ready; "
                         "while :; do sleep 0.05; done"}),
               environment(), root_ + "/term");
  ASSERT_TRUE(term.wait_for_output("ready"));
  ::kill(term.pid(), SIGTERM);
  auto o = term.wait(30s);
  EXPECT_EQ(o.exit_code, 42) << describe(o);
  EXPECT_NE(o.out.find("got-term"), std::string::npos) << describe(o);

  Process hup(run_argv({"--", "sh", "-c", "echo ready; exec sleep 30"}), environment(),
              root_ + "/hup");
  ASSERT_TRUE(hup.wait_for_output("ready"));
  ::kill(hup.pid(), SIGHUP);
  auto h = hup.wait(30s);
  EXPECT_EQ(h.exit_code, 128 + SIGHUP) << describe(h);
  EXPECT_LT(h.elapsed, 20s);
}

TEST_F(RunTest, TheGateIsGoneWhenRunReturns) {
  // Inside: a process left behind by CMD tries the gate after `run` has returned.
  auto o = run({"--", "sh", "-c",
                "(sleep 1; " + curl_https("origin.test") + " >/dev/null 2>&1; echo $? > " + work_ +
                    "/late-rc) >/dev/null 2>&1 & echo started"});
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  std::string late;
  for (int i = 0; i < 500 && late.empty(); ++i) {
    std::this_thread::sleep_for(20ms);
    late = read_file(work_ + "/late-rc");
  }
  EXPECT_EQ(late, "7\n") << "the orphan reached the gate after run returned";

  // On the host (--no-isolation): the port no longer accepts.
  auto host = run({"--no-isolation", "--", "sh", "-c",
                   "echo port=$SANDBOX_PROXY_PORT; " + curl_https("origin.test") + " >/dev/null"});
  EXPECT_EQ(host.exit_code, 0) << describe(host);
  EXPECT_NE(host.err.find("WARNING: --no-isolation"), std::string::npos) << describe(host);
  const auto at = host.out.find("port=");
  ASSERT_NE(at, std::string::npos) << describe(host);
  const int port = std::stoi(host.out.substr(at + 5));
  EXPECT_FALSE(port_accepts(static_cast<std::uint16_t>(port)));
}

TEST_F(RunTest, ProtectedPathsAreReadOnlyInside) {
  std::ofstream(home_ + "/.bashrc") << "# rc\n";
  // Each write reports `NAME=ok` or `NAME=denied`.
  const auto attempt = [](const std::string& name, const std::string& command) {
    return "if " + command + " 2>/dev/null; then echo " + name + "=ok; else echo " + name +
           "=denied; fi; ";
  };
  auto o = run({"--", "sh", "-c",
                attempt("rc", "echo evil >> ~/.bashrc") +
                    attempt("zshenv", "echo evil > ~/.zshenv") + attempt("ssh", "mkdir -p ~/.ssh") +
                    attempt("list", "echo evil.com > " + root_ + "/blocked.txt") +
                    attempt("work", "echo fine > " + work_ + "/out.txt")});
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  if (o.err.find("writes denied by Landlock") == std::string::npos) {
    GTEST_SKIP() << "this kernel offers no Landlock: " << describe(o);
  }
  for (const char* denied : {"rc=denied", "zshenv=denied", "ssh=denied", "list=denied"}) {
    EXPECT_NE(o.out.find(denied), std::string::npos) << denied << "\n" << describe(o);
  }
  EXPECT_NE(o.out.find("work=ok"), std::string::npos) << describe(o);
  EXPECT_EQ(read_file(home_ + "/.bashrc"), "# rc\n");
  EXPECT_EQ(read_file(root_ + "/blocked.txt"), "blocked.test\n");  // the gate's own list
  EXPECT_EQ(read_file(work_ + "/out.txt"), "fine\n");
}

TEST_F(RunTest, ContainerDaemonSocketsAreHiddenUnlessAllowed) {
  const std::string socket = work_ + "/docker.sock";
  UnixServer server(socket);
  const std::string probe =
      "curl -sS --max-time 1 --unix-socket " + socket + " http://localhost/; echo rc=$?";
  auto hidden = run({"--", "sh", "-c", probe});
  EXPECT_NE(hidden.out.find("rc=7"), std::string::npos) << describe(hidden);  // refused
  EXPECT_NE(hidden.err.find("unix sockets hidden: " + socket), std::string::npos)
      << describe(hidden);
  // On the host the socket answers; inside, with --allow-unix-socket, it does too.
  auto host = shell(probe);
  EXPECT_NE(host.second.find("rc=28"), std::string::npos) << host.second;
  auto allowed = run({"--allow-unix-socket", socket, "--", "sh", "-c", probe});
  EXPECT_NE(allowed.out.find("rc=28"), std::string::npos) << describe(allowed);
}

// --allow-localhost-port and --allow-inbound-port open exactly those ports between the host's
// loopback and the namespace's.
TEST_F(RunTest, ListedLocalhostPortsAreForwardedBothWays) {
  const std::string port = std::to_string(origin_->port());
  auto out = run({"--allow-localhost-port", port, "--", "sh", "-c",
                  "curl -sS --noproxy '*' --max-time 10 --cacert " + origin_->ca() +
                      " https://127.0.0.1:" + port + "/ >/dev/null; echo listed=$?"});
  EXPECT_EQ(out.exit_code, 0) << describe(out);
  EXPECT_NE(out.out.find("listed=0"), std::string::npos) << describe(out);

  // A TLS server inside, reached from the host.
  const std::uint16_t inbound = free_port();
  const std::string folder = root_ + "/origin";
  Process server(
      run_argv({"--allow-inbound-port", std::to_string(inbound), "--", "openssl", "s_server",
                "-quiet", "-www", "-accept", "127.0.0.1:" + std::to_string(inbound), "-cert",
                folder + "/server.pem", "-key", folder + "/server.key"}),
      environment(), root_ + "/inbound");
  std::pair<int, std::string> reached{-1, ""};
  for (int i = 0; i < 100 && reached.first != 0; ++i) {
    std::this_thread::sleep_for(100ms);
    reached = shell("curl -sS --max-time 5 --cacert " + origin_->ca() +
                    " https://127.0.0.1:" + std::to_string(inbound) + "/");
  }
  EXPECT_EQ(reached.first, 0) << reached.second;
  EXPECT_NE(reached.second.find("s_server"), std::string::npos) << reached.second;
  ::kill(server.pid(), SIGTERM);
  auto o = server.wait(30s);
  EXPECT_EQ(o.exit_code, 128 + SIGTERM) << describe(o);
  EXPECT_FALSE(port_accepts(inbound));  // gone with `run`
}

// git over SSH as goose's agent did it: GIT_SSH_COMMAND (set by `run`) runs ssh with
// sandgate-connect as ProxyCommand, which tunnels through the gate to the git host.
TEST_F(RunTest, GitCloneOverSshGoesThroughTheGate) {
  if (shell("command -v ssh && command -v ssh-keygen && command -v git && test -x "
            "/usr/sbin/sshd")
          .first != 0) {
    FAIL() << "ssh, ssh-keygen, git and /usr/sbin/sshd are required";
  }
  const std::string folder = root_ + "/sshd";
  fs::create_directories(folder);
  GitSshServer sshd(folder);
  dns_.set("gitlocal.test", {"127.0.0.1"});
  // ssh's settings for the test hosts, added to the GIT_SSH_COMMAND that `run` set (ssh reads
  // ~/.ssh/config from the passwd entry's home, not $HOME, so -F names the file).
  const std::string ssh_config = folder + "/ssh_config";
  std::ofstream(ssh_config) << "Host gitlocal.test other.test\n  Port " << sshd.port()
                            << "\n  IdentityFile " << folder
                            << "/client_key\n  StrictHostKeyChecking no\n"
                               "  UserKnownHostsFile /dev/null\n  BatchMode yes\n"
                               "  LogLevel ERROR\n  ConnectTimeout 20\n";
  const std::string with_config = "GIT_SSH_COMMAND=\"$GIT_SSH_COMMAND -F " + ssh_config + "\" ";
  const passwd* user = ::getpwuid(::geteuid());
  ASSERT_NE(user, nullptr);
  const std::string url = std::string(user->pw_name) + "@gitlocal.test:" + folder + "/served.git";

  Process process(
      run_argv({"--git-hosts", "gitlocal.test", "--ssh-ports", std::to_string(sshd.port()), "--",
                "sh", "-c", with_config + "git clone -q " + url + " " + work_ + "/clone"}),
      environment({{"GIT_CONFIG_GLOBAL", "/dev/null"},
                   {"GIT_CONFIG_NOSYSTEM", "1"},
                   {"GIT_TERMINAL_PROMPT", "0"}}),
      root_ + "/git");
  auto o = process.wait();
  EXPECT_EQ(o.exit_code, 0) << describe(o) << "\n--- sshd\n" << sshd.log();
  EXPECT_EQ(read_file(work_ + "/clone/README"), "hello\n");
  EXPECT_NE(o.err.find("gitlocal.test"), std::string::npos) << describe(o);  // the gate's log

  // A host that is not a git host is refused on the SSH port, as the gate's rules say.
  dns_.set("other.test", {"127.0.0.1"});
  Process refused(run_argv({"--git-hosts", "gitlocal.test", "--ssh-ports",
                            std::to_string(sshd.port()), "--", "sh", "-c",
                            with_config + "git clone -q " + std::string(user->pw_name) +
                                "@other.test:" + folder + "/served.git " + work_ + "/other"}),
                  environment({{"GIT_CONFIG_GLOBAL", "/dev/null"},
                               {"GIT_CONFIG_NOSYSTEM", "1"},
                               {"GIT_TERMINAL_PROMPT", "0"}}),
                  root_ + "/git-refused");
  auto r = refused.wait();
  EXPECT_NE(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.err.find("ssh-non-git-host"), std::string::npos) << describe(r);
}

TEST_F(RunTest, RunsAsAnUnprivilegedUser) {
  // Run as nobody (65534) when this test runs as root; as the current user otherwise. The
  // executables are copied where that user can read them.
  const std::string bin = root_ + "/bin";
  fs::create_directories(bin);
  fs::copy_file(kBinDir + "/sandgate", bin + "/sandgate");
  fs::copy_file(kBinDir + "/sandgate-connect", bin + "/sandgate-connect");
  for (const std::string& path : {root_, bin, home_, work_, root_ + "/origin"}) {
    ::chmod(path.c_str(), 0777);
  }
  ::chmod((root_ + "/blocked.txt").c_str(), 0644);
  ::chown(home_.c_str(), 65534, 65534);
  std::vector<std::string> prefix;
  if (::geteuid() == 0) {
    if (shell("command -v setpriv").first != 0) {
      FAIL() << "setpriv (util-linux) is required to run as nobody";
    }
    prefix = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  }
  // Can this user create a user namespace at all here? If the kernel forbids it, this test
  // cannot show anything about sandgate.
  std::string probe_command = "unshare -Urn true";
  if (!prefix.empty()) {
    probe_command = "setpriv --reuid=65534 --regid=65534 --clear-groups -- " + probe_command;
  }
  auto probe = shell(probe_command);
  if (probe.first != 0) {
    GTEST_SKIP() << "the kernel does not let an unprivileged user create user namespaces here "
                    "(`"
                 << probe_command << "` failed: " << probe.second
                 << "); sandgate run would report that clearly and refuse to run unconfined";
  }
  std::vector<std::string> argv = prefix;
  for (auto& arg :
       run_argv({"--", "sh", "-c", "id -u; " + curl_https("origin.test")}, bin + "/sandgate")) {
    argv.push_back(arg);
  }
  Process process(argv, environment(), root_ + "/nobody");
  auto o = process.wait();
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  EXPECT_NE(o.out.find("s_server"), std::string::npos) << describe(o);
  if (!prefix.empty()) {
    EXPECT_TRUE(o.out.starts_with("65534\n")) << describe(o);
  }
}

TEST_F(RunTest, ProfilePrintsTheSeatbeltProfileOrSaysWhatIsMissing) {
  Process ok(
      {kBinDir + "/sandgate", "profile", "--proxy-port", "4321", "--allow-inbound-port", "3000"},
      environment(), root_ + "/profile-ok");
  auto o = ok.wait();
  EXPECT_EQ(o.exit_code, 0) << describe(o);
  EXPECT_TRUE(o.out.find("(version 1)") != std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("(allow network-outbound (remote ip \"localhost:4321\"))"),
            std::string::npos);
  EXPECT_NE(o.out.find("(subpath \"" + home_ + "/.ssh\")"), std::string::npos);

  Process no_port({kBinDir + "/sandgate", "profile", "--listen", "127.0.0.1:0"}, environment(),
                  root_ + "/profile-no-port");
  auto p = no_port.wait();
  EXPECT_EQ(p.exit_code, 2) << describe(p);
  EXPECT_NE(p.err.find("--proxy-port"), std::string::npos) << describe(p);

  auto env = environment();
  env.push_back("HOME=/Users/a\nb");  // the later HOME wins in getenv()? make it the only one
  std::erase_if(env, [this](const std::string& e) { return e == "HOME=" + home_; });
  Process bad_home({kBinDir + "/sandgate", "profile", "--proxy-port", "4321"}, env,
                   root_ + "/profile-bad-home");
  auto b = bad_home.wait();
  EXPECT_EQ(b.exit_code, 2) << describe(b);
  EXPECT_NE(b.err.find("control character"), std::string::npos) << describe(b);
}

}  // namespace
}  // namespace sandgate::testing
