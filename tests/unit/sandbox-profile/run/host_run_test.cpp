// The host's side of `run` as macOS runs it (run_on_host() with seatbelt_launch()), here on Linux
// with a stand-in for sandbox-exec that keeps the profile it is given and runs the command
// unconfined: the command leads a session on a pty of its own (relayed, with the keys typed),
// TIOCSTI into its /dev/tty never reaches the caller's terminal, its $TMPDIR is a fresh 0700
// folder of the run, removed at the end; and the profile it was given, decided by the SBPL
// evaluator, allows ioctl on that pty only (not the caller's terminal) and binding unix sockets
// in that folder only.
#include "sandbox-profile/run/run_confined.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/unit/sandbox-profile/macos/sbpl_reader.hpp"

namespace sandgate::sandbox {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A gate that serves nothing: it takes the listener and reports its port.
class IdleGate final : public GateHandle {
 public:
  bool open() override { return true; }
  std::optional<std::uint16_t> start(int listener) override {
    listener_ = listener;
    sockaddr_in address{};
    socklen_t size = sizeof address;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size);
    return ntohs(address.sin_port);
  }
  void serve_capture(CaptureSockets sockets) override { sockets.close_all(); }
  void stop() override {
    if (listener_ >= 0) {
      ::close(listener_);
      listener_ = -1;
    }
  }

 private:
  int listener_ = -1;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value after `key=` on its line of `text`, or "".
std::string field(const std::string& text, const std::string& key) {
  const auto at = text.find(key + "=");
  if (at == std::string::npos) {
    return {};
  }
  const auto start = at + key.size() + 1;
  return text.substr(start, text.find_first_of("\r\n", start) - start);
}

class HostRun : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / "host-run-XXXXXX";
    std::string pattern = root_.string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern);
    fs::create_directories(root_ / "home");
    fs::create_directories(root_ / "tmp");
    fs::create_directories(root_ / "work");
    // The stand-in for sandbox-exec: `-p PROFILE CMD...`; keeps the profile, runs CMD.
    std::ofstream(root_ / "sandbox-exec") << "#!/bin/sh\n"
                                             "[ \"$1\" = -p ] || exit 99\n"
                                             "printf '%s' \"$2\" > \"$PROFILE_COPY\"\n"
                                             "shift 2\n"
                                             "exec \"$@\"\n";
    fs::permissions(root_ / "sandbox-exec", fs::perms::owner_all);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  fs::path root_;
};

TEST_F(HostRun, TheCommandGetsAPtyOfItsOwnAndAPrivateFolderAndTheProfileNamesBoth) {
  if (!fs::exists("/usr/bin/python3") || !fs::exists("/bin/bash")) {
    GTEST_SKIP() << "python3 and bash are needed for TIOCSTI and the script";
  }
  // The caller's terminal, whose shell side the test keeps to see what a shell would read.
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  char name[128] = {};
  ASSERT_EQ(::ptsname_r(master, name, sizeof name), 0);
  const std::string callers_terminal = name;
  const int shell_side = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  ASSERT_GE(shell_side, 0);

  const std::string profile_copy = (root_ / "profile.sb").string();
  const std::string script =
      "echo \"tty=$(tty)\"; echo \"tmpdir=$TMPDIR\"; echo \"mode=$(stat -c %a \"$TMPDIR\")\"; "
      "echo \"session=$(ps -o sid= -p $$ | tr -d ' ')\"; echo \"pid=$$\"; "
      "/usr/bin/python3 -c \"import fcntl, termios\n"
      "with open('/dev/tty', 'w') as tty:\n"
      "    [fcntl.ioctl(tty, termios.TIOCSTI, bytes([c])) for c in b'echo INJECTED\\n']\"; "
      "while IFS= read -r -t 1 x; do :; done; echo ready; IFS= read -r line; echo \"got=$line\"";

  const pid_t run = ::fork();
  ASSERT_GE(run, 0);
  if (run == 0) {
    // `run` in the foreground of the caller's terminal, as a shell starts it.
    ::setsid();
    const int tty = ::open(name, O_RDWR);
    ::dup2(tty, 0);
    ::dup2(tty, 1);
    ::dup2(tty, 2);
    ::setenv("TMPDIR", (root_ / "tmp").c_str(), 1);
    ::setenv("PROFILE_COPY", profile_copy.c_str(), 1);
    if (::chdir((root_ / "work").c_str()) != 0) {
      ::_exit(126);
    }
    RunOptions options;
    options.command = {"/bin/bash", "-c", script};
    options.home = (root_ / "home").string();
    IdleGate gate;
    const std::string stand_in = (root_ / "sandbox-exec").string();
    ::_exit(run_on_host(options, gate, [&](std::uint16_t port, const std::string& terminal) {
      return seatbelt_launch(options, port, terminal, stand_in);
    }));
  }

  std::string shown;
  const auto read_until = [&](const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (shown.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd ready{master, POLLIN, 0};
      if (::poll(&ready, 1, 50) > 0) {
        char buffer[4096];
        const ssize_t got = ::read(master, buffer, sizeof buffer);
        if (got > 0) {
          shown.append(buffer, static_cast<std::size_t>(got));
        } else if (got < 0 && errno == EIO) {
          std::this_thread::sleep_for(20ms);
        }
      }
    }
  };
  read_until("ready");
  const std::string tmpdir = field(shown, "tmpdir");
  EXPECT_TRUE(fs::is_directory(tmpdir)) << shown;  // while the command runs
  ssize_t typed = ::write(master, "hello\r", 6);
  (void)typed;
  read_until("got=");
  read_until("\n");
  int status = 0;
  ASSERT_EQ(::waitpid(run, &status, 0), run);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << shown;

  // A terminal of its own, as the leader of its own session, with the keys typed.
  const std::string commands_terminal = field(shown, "tty");
  EXPECT_TRUE(commands_terminal.starts_with("/dev/pts/")) << shown;
  EXPECT_NE(commands_terminal, callers_terminal) << shown;
  EXPECT_FALSE(field(shown, "pid").empty()) << shown;
  EXPECT_EQ(field(shown, "session"), field(shown, "pid")) << shown;
  EXPECT_NE(shown.find("got=hello"), std::string::npos) << shown;
  // TIOCSTI typed into the command's own input only.
  termios modes{};
  ::tcgetattr(shell_side, &modes);
  modes.c_lflag &= ~static_cast<tcflag_t>(ICANON);
  ::tcsetattr(shell_side, TCSANOW, &modes);
  std::string pending;
  char buffer[4096];
  for (ssize_t got = 0; (got = ::read(shell_side, buffer, sizeof buffer)) > 0;) {
    pending.append(buffer, static_cast<std::size_t>(got));
  }
  EXPECT_EQ(pending.find("INJECTED"), std::string::npos)
      << "keystrokes pushed by the command reached the caller's shell";
  ::close(shell_side);
  ::close(master);

  // The private folder: under the caller's $TMPDIR, 0700, gone after the run.
  EXPECT_TRUE(tmpdir.starts_with((root_ / "tmp" / "sandgate-run.").string())) << shown;
  EXPECT_EQ(field(shown, "mode"), "700") << shown;
  EXPECT_FALSE(fs::exists(tmpdir)) << "the private folder outlived the run";

  // The profile sandbox-exec was given.
  const std::string profile = read_text(profile_copy);
  ASSERT_FALSE(profile.empty()) << "the stand-in got no profile";
  auto forms = testing::read_sbpl(profile);
  ASSERT_TRUE(forms) << forms.error();
  EXPECT_EQ(testing::check_sbpl(*forms), "");
  const auto decide = [&](const std::string& operation, const std::string& path,
                          bool unix_socket = false) {
    testing::Request request;
    request.operation = operation;
    request.path = path;
    request.unix_socket = unix_socket;
    return testing::evaluate(*forms, request);
  };
  EXPECT_TRUE(decide("file-ioctl", commands_terminal)) << "the relayed pty: raw mode, size";
  EXPECT_TRUE(decide("file-ioctl", "/dev/tty"));
  EXPECT_FALSE(decide("file-ioctl", callers_terminal)) << "the caller's terminal: TIOCSTI";
  EXPECT_TRUE(decide("network-bind", tmpdir + "/agent.sock", true));
  EXPECT_FALSE(decide("network-bind", (root_ / "tmp" / "tmux-0" / "default").string(), true))
      << "the caller's $TMPDIR is shared";
  EXPECT_FALSE(decide("network-bind", (root_ / "work" / "x.sock").string(), true));
}

}  // namespace
}  // namespace sandgate::sandbox
