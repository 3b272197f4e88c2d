// End to end for `sandgate watch` beside `sandgate run --unknown=ask`, with the real executable
// under real pseudo-terminals: the run in one (as the user's agent pane), the watch in another,
// rendered by a real terminal emulator (tests/support/pty_screen.py, pyte). The confined command
// makes a plain HTTP request to origin.test, a host no list decides (a fake DNS server on
// loopback names it, an origin on loopback answers), once the test says go: the question must
// appear on the watch's screen, `o` must let the request through, and the run's own terminal
// must show no question. Then the watch leaves, and the run's terminal asks again.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rules/ascii.hpp"
#include "tests/fakes/fake_dns_server.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/scratch_folder.hpp"

extern char** environ;

namespace sandgate::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kSandgate = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate";
const std::string kScreenDriver = std::string(SANDGATE_SOURCE_DIR) + "/tests/support/pty_screen.py";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// A pseudo-terminal with a program as its session leader: `run`'s terminal, as a user's pane.
class Pty {
 public:
  Pty() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    ::grantpt(master_);
    ::unlockpt(master_);
    char name[128] = {};
    ::ptsname_r(master_, name, sizeof name);
    name_ = name;
    winsize size{};
    size.ws_row = 24;
    size.ws_col = 80;
    ::ioctl(master_, TIOCSWINSZ, &size);
  }
  ~Pty() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(master_);
  }
  void start(std::vector<std::string> argv, std::vector<std::string> env, const std::string& cwd) {
    auto args = pointers(argv);
    auto envp = pointers(env);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      const int tty = ::open(name_.c_str(), O_RDWR);  // the controlling terminal
      ::dup2(tty, 0);
      ::dup2(tty, 1);
      ::dup2(tty, 2);
      if (::chdir(cwd.c_str()) != 0) {
        ::_exit(126);
      }
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
  }
  // Reads what the terminal shows until `text` appears (or `timeout`); returns all of it.
  const std::string& read_until(const std::string& text, std::chrono::seconds timeout = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (shown_.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buffer[4096];
        const ssize_t got = ::read(master_, buffer, sizeof buffer);
        if (got > 0) {
          shown_.append(buffer, static_cast<std::size_t>(got));
        } else if (got < 0 && errno == EIO) {
          break;  // every process of the terminal has closed it
        }
      }
    }
    return shown_;
  }
  void type(const std::string& keys) { (void)!::write(master_, keys.data(), keys.size()); }
  int wait_exit(std::chrono::seconds timeout = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      read_until("\x01never", 0s);  // keep draining, so the program never blocks on output
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(20ms);
    }
    return -2;
  }
  pid_t pid() const { return pid_; }

 private:
  int master_ = -1;
  std::string name_;
  std::string shown_;
  pid_t pid_ = -1;
};

// A program with its output in files (the screen driver).
struct Driver {
  pid_t pid = -1;
  std::string err_path;
  ~Driver() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  void start(std::vector<std::string> argv, std::vector<std::string> env, const std::string& err) {
    err_path = err;
    auto args = pointers(argv);
    auto envp = pointers(env);
    pid = ::fork();
    if (pid == 0) {
      const int out = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int in = ::open("/dev/null", O_RDONLY);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
  }
  int wait(std::chrono::seconds timeout = 45s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(20ms);
    }
    return -2;
  }
};

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/python3", X_OK) != 0 ||
        std::system("/usr/bin/python3 -c 'import pyte' 2>/dev/null") != 0) {
      FAIL() << "python3-pyte is required (scripts/install-deps.sh installs it)";
    }
    std::string pattern = visible_scratch_base() + "/watch-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern).string();
    fs::create_directories(root_ + "/home");
    fs::create_directories(root_ + "/project");
    fs::create_directories(root_ + "/runtime");
    ::chmod((root_ + "/runtime").c_str(), 0700);
    std::ofstream(root_ + "/blocked.txt") << "blocked.test\n";
    dns_.set("origin.test", {"127.0.0.1"});
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::vector<std::string> environment() const {
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      const std::string name = text.substr(0, text.find('='));
      const std::string lower = rules::ascii_lower(name);
      if (lower.find("proxy") == std::string::npos && !name.starts_with("SANDGATE_") &&
          name != "HOME" && name != "XDG_RUNTIME_DIR" && name != "TERM") {
        env.push_back(text);
      }
    }
    env.push_back("HOME=" + root_ + "/home");
    env.push_back("XDG_RUNTIME_DIR=" + root_ + "/runtime");
    env.push_back("TERM=xterm");
    return env;
  }

  // `sandgate run --unknown=ask` whose command waits for the file `go`, then asks origin.test.
  void start_run() {
    const std::string script =
        "while [ ! -e go ]; do sleep 0.1; done; curl -sS --max-time 40 http://origin.test:" +
        std::to_string(origin_.port()) + "/; echo curl-rc=$?; sleep 1";
    run_.start({kSandgate,
                "run",
                "--block-loopback=false",
                "--dns-server",
                dns_.endpoint(),
                "--blocklist",
                root_ + "/blocked.txt",
                "--threads",
                "1",
                "--drain-seconds",
                "2",
                "--unknown=ask",
                "--ask-timeout",
                "40",
                "--log-file",
                log_path(),
                "--",
                "sh",
                "-c",
                script},
               environment(), root_ + "/project");
  }
  // Waits until the run's log says `text`.
  bool log_says(const std::string& text, std::chrono::seconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (read_file(log_path()).find(text) != std::string::npos) {
        return true;
      }
      run_.read_until("\x01never", 0s);
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  std::string log_path() const { return root_ + "/gate.log"; }
  static bool eventually_accepts(std::uint16_t port) {
    for (int i = 0; i < 250; ++i) {
      if (port_accepts(port)) {
        return true;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  std::string question() const {
    return "allow origin.test:" + std::to_string(origin_.port()) + "?";
  }
  void go() { std::ofstream(root_ + "/project/go") << "go\n"; }

  std::string root_;
  fakes::FakeDnsServer dns_;
  fakes::HttpOrigin origin_{[](const fakes::HttpOrigin::Request&) {
    return fakes::HttpOrigin::Reply::fixed(200, "hello from the origin\n");
  }};
  Pty run_;
};

TEST_F(WatchTest, TheQuestionIsAnsweredInTheWatchAndTheRunsTerminalIsLeftAlone) {
  start_run();
  ASSERT_TRUE(log_says("sandgate watch can attach to this run at")) << read_file(log_path());
  Driver watch;
  const std::string screen = root_ + "/screen.txt";
  watch.start({"/usr/bin/python3", kScreenDriver, "--rows", "24", "--cols", "80", "--timeout", "30",
               "wait:attached", "wait:" + question(), "dump:" + screen, "key:o",
               "wait:allow GET origin.test:" + std::to_string(origin_.port()), "gone:" + question(),
               "dump:" + root_ + "/answered.txt", "key:q", "--", kSandgate, "watch"},
              environment(), root_ + "/watch.log");
  ASSERT_TRUE(log_says("questions go to sandgate watch")) << read_file(watch.err_path);
  go();
  const int driver = watch.wait();
  const std::string shown = run_.read_until("curl-rc=");
  run_.read_until("\n", 5s);
  EXPECT_EQ(driver, 0) << read_file(watch.err_path);
  EXPECT_NE(shown.find("hello from the origin"), std::string::npos) << shown;
  EXPECT_NE(shown.find("curl-rc=0"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(question()), std::string::npos) << "the run's terminal was asked:\n"
                                                       << shown;
  EXPECT_EQ(shown.find("[o]nce"), std::string::npos) << shown;
  EXPECT_EQ(run_.wait_exit(), 0);

  const std::string rendered = read_file(screen);
  EXPECT_NE(rendered.find("> " + question() + "  1 waiting"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("Questions (1)  o once  s session  a always  d deny  n never"),
            std::string::npos)
      << rendered;
  const std::string answered = read_file(root_ + "/answered.txt");
  EXPECT_NE(answered.find("once origin.test:" + std::to_string(origin_.port()) +
                          ": 1 waiting request(s) decided"),
            std::string::npos)
      << answered;
  EXPECT_NE(read_file(log_path()).find("via sandgate watch"), std::string::npos);
}

TEST_F(WatchTest, WhenTheWatchLeavesTheRunsTerminalAsksAgain) {
  start_run();
  ASSERT_TRUE(log_says("sandgate watch can attach to this run at")) << read_file(log_path());
  Driver watch;
  // Resized to 40 columns on the way: redrawn, each line cut to the width.
  watch.start({"/usr/bin/python3", kScreenDriver, "--timeout", "30", "wait:attached",
               "wait:" + question(), "resize:12x40", "wait:> allow origin.test:",
               "dump:" + root_ + "/narrow.txt", "key:q", "--", kSandgate, "watch"},
              environment(), root_ + "/watch.log");
  ASSERT_TRUE(log_says("questions go to sandgate watch")) << read_file(watch.err_path);
  go();
  ASSERT_EQ(watch.wait(), 0) << read_file(watch.err_path);
  const std::string narrow = read_file(root_ + "/narrow.txt");
  EXPECT_NE(narrow.find("Questions (1)  o once  s session  a alwa\n"), std::string::npos) << narrow;
  ASSERT_TRUE(log_says("sandgate watch left"));
  // The question still waits: the terminal takes it now.
  const std::string shown = run_.read_until(question());
  ASSERT_NE(shown.find(question()), std::string::npos) << shown;
  std::this_thread::sleep_for(std::chrono::seconds(1));  // keys in its first moment are dropped
  run_.type("o\r");
  EXPECT_NE(run_.read_until("curl-rc=").find("curl-rc=0"), std::string::npos);
  EXPECT_EQ(run_.wait_exit(), 0);
}

// A `serve` through its admin endpoint and admin token: a request the blocklist refuses shows
// with its reason; without the token the watch is refused and says so.
TEST_F(WatchTest, AServeIsWatchedThroughItsAdminEndpointWithItsToken) {
  const std::string token_file = root_ + "/admin-token";
  std::ofstream(token_file) << "0123456789abcdef0123456789abcdef\n";
  ::chmod(token_file.c_str(), 0600);
  const std::uint16_t port = free_port();
  const std::string admin = "127.0.0.1:" + std::to_string(free_port());
  Driver serve;
  serve.start({kSandgate, "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--admin",
               admin, "--admin-token-file", token_file, "--blocklist", root_ + "/blocked.txt",
               "--dns-server", dns_.endpoint(), "--threads", "1", "--drain-seconds", "1"},
              environment(), root_ + "/serve.log");
  ASSERT_TRUE(eventually_accepts(port)) << read_file(serve.err_path);

  Driver refused;
  refused.start({"/usr/bin/python3", kScreenDriver, "--timeout", "20", "wait:HTTP 401", "key:q",
                 "--", kSandgate, "watch", "--admin", admin},
                environment(), root_ + "/refused.log");
  EXPECT_EQ(refused.wait(), 0) << read_file(refused.err_path);

  Driver watch;
  const std::string screen = root_ + "/serve-screen.txt";
  watch.start({"/usr/bin/python3", kScreenDriver, "--timeout", "20", "wait:attached",
               "wait:sandgate watch: serve 127.0.0.1:" + std::to_string(port),
               "wait:CONNECT blocked.test:443  blocklist", "dump:" + screen, "key:q", "--",
               kSandgate, "watch", "--admin", admin, "--admin-token-file", token_file},
              environment(), root_ + "/watch.log");
  // Refused requests until the watch has shown one (its screen is dumped then).
  for (int i = 0; i < 100 && read_file(screen).empty(); ++i) {
    const std::string cmd =
        "curl -s -o /dev/null --max-time 5 -x http://127.0.0.1:" + std::to_string(port) +
        " https://blocked.test/ >/dev/null 2>&1";
    (void)!std::system(cmd.c_str());
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(watch.wait(), 0) << read_file(watch.err_path);
  EXPECT_NE(read_file(screen).find("deny  CONNECT blocked.test:443  blocklist"), std::string::npos)
      << read_file(screen);
}

TEST_F(WatchTest, WithNoRunToWatchItSaysWhereItLooked) {
  Driver watch;
  const std::string screen = root_ + "/screen.txt";
  watch.start({"/usr/bin/python3", kScreenDriver, "--timeout", "10", "wait:sandgate watch: no run",
               "dump:" + screen, "--", kSandgate, "watch"},
              environment(), root_ + "/watch.log");
  EXPECT_EQ(watch.wait(), 2) << read_file(watch.err_path);
  std::string said = read_file(screen);
  std::erase(said, '\n');  // the message wraps at the terminal's width
  EXPECT_NE(said.find("no run of this user to watch"), std::string::npos) << said;
  EXPECT_NE(said.find(root_ + "/runtime/sandgate/runs"), std::string::npos) << said;
}

}  // namespace
}  // namespace sandgate::testing
