// The unix-socket supervisor of `sandgate run` (issue 26, finding 10), with the real kernel: a
// child in a network namespace of its own installs the filter and hands its listener to this
// process, which supervises it as `run` does. A socket of the host's (this process's network
// namespace) is refused, wherever it is and however it is named, unless listed; the child's own
// sockets work; sendto() with an address is judged the same way.
#include "sandbox-profile/linux/unix_connect_guard.hpp"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "sandbox-profile/linux/syscall_filter.hpp"
#include "sandbox-profile/process/fd_passing.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

int bound_socket(const std::string& path, int type) {
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  if (type == SOCK_STREAM) {
    ::listen(fd, 8);
  }
  return fd;
}

// The errno of connect() (or of sendto() with `datagram`) to `path` from a new socket; 0: it
// worked.
int reach(const std::string& path, bool datagram = false) {
  const int fd = ::socket(AF_UNIX, (datagram ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  const auto* where = reinterpret_cast<sockaddr*>(&address);
  const long rc = datagram ? ::sendto(fd, "x", 1, 0, where, sizeof address)
                           : ::connect(fd, where, sizeof address);
  const int error = rc < 0 ? errno : 0;
  ::close(fd);
  return error;
}

class UnixConnectGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/sandgate-guard-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string root_;
};

TEST_F(UnixConnectGuardTest, HostSocketsAreRefusedUnlessListedAndTheChildsOwnWork) {
  // The host's sockets: made before and "after" (the child only looks when told).
  const int host = bound_socket(root_ + "/host.sock", SOCK_STREAM);
  const int host_dgram = bound_socket(root_ + "/host.dgram", SOCK_DGRAM);
  const int listed = bound_socket(root_ + "/listed.sock", SOCK_STREAM);
  ASSERT_GE(host, 0);
  ASSERT_GE(host_dgram, 0);
  ASSERT_GE(listed, 0);
  ASSERT_EQ(::symlink((root_ + "/host.sock").c_str(), (root_ + "/link.sock").c_str()), 0);
  // A socket bound in a third network namespace (a container's, another sandbox's): neither the
  // host's nor the child's own, and refused all the same.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t other = ::fork();
  if (other == 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
      ::_exit(1);
    }
    const int fd = bound_socket(root_ + "/other.sock", SOCK_STREAM);
    ssize_t ignored = ::write(ready[1], fd >= 0 ? "y" : "n", 1);
    (void)ignored;
    ::pause();
    ::_exit(0);
  }
  char answer = 0;
  ASSERT_EQ(::read(ready[0], &answer, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  int channel[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(channel[0]);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
      ::_exit(100);
    }
    ::alarm(60);  // a check that hangs (an accept nobody connects to) fails instead
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      ::_exit(101);
    }
    const int diag = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    auto listener = install_syscall_filter(true);
    if (!listener || *listener < 0 || !send_message(channel[1], "guard", *listener) ||
        !send_message(channel[1], "diag", diag)) {
      ::_exit(102);
    }
    ::close(*listener);
    if (::chdir(root_.c_str()) != 0) {
      ::_exit(103);
    }
    // The exit status is the number of the first check that failed (0: none).
    const int own = bound_socket(root_ + "/own.sock", SOCK_STREAM);
    const int own_dgram = bound_socket("own.dgram", SOCK_DGRAM);
    int from_thread = -1;
    std::thread([&from_thread, this] { from_thread = reach(root_ + "/own.sock"); }).join();
    // More blocked connects at once than the supervisor's pool has threads (64): a listener with
    // a backlog of 8 that accepts only once all 100 callers have started. Every call is made in
    // the end: the calls beyond the pool's threads wait their turn and are not lost. (While the
    // pool is full of blocked calls, other calls wait too: only the command's own sockets can
    // block, so it can hold up only itself.)
    const int busy = bound_socket(root_ + "/busy.sock", SOCK_STREAM);
    std::atomic<int> connected{0};
    std::vector<std::thread> callers;
    for (int i = 0; i < 100; ++i) {
      callers.emplace_back(
          [&connected, this] { connected += reach(root_ + "/busy.sock") == 0 ? 1 : 0; });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int i = 0; i < 100 && busy >= 0; ++i) {
      const int accepted = ::accept(busy, nullptr, nullptr);
      if (accepted < 0) {
        break;
      }
      ::close(accepted);
    }
    for (auto& caller : callers) {
      caller.join();
    }
    // Callers that die while their connects would block for ever (a listener that never
    // accepts, more of them than the pool has threads) do not keep the pool: once they are
    // killed, the command's next connect is made at once.
    const int never = bound_socket(root_ + "/never.sock", SOCK_STREAM);
    const pid_t stuck = ::fork();
    if (stuck == 0) {
      std::vector<std::thread> blocked;
      for (int i = 0; i < 80; ++i) {
        blocked.emplace_back([this] { reach(root_ + "/never.sock"); });
      }
      ::pause();
      ::_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(stuck, SIGKILL);
    ::waitpid(stuck, nullptr, 0);
    const auto after_kill = std::chrono::steady_clock::now();
    const int freed = never >= 0 ? reach(root_ + "/own.sock") : -1;
    const bool freed_soon = std::chrono::steady_clock::now() - after_kill < std::chrono::seconds(5);
    // A blocking connect to a full backlog ends at the socket's SO_SNDTIMEO with EAGAIN, as the
    // kernel's own does.
    const int full = bound_socket(root_ + "/full.sock", SOCK_STREAM);
    std::vector<int> fillers;
    for (int i = 0; i < 64 && full >= 0; ++i) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      sockaddr_un to{};
      to.sun_family = AF_UNIX;
      std::snprintf(to.sun_path, sizeof to.sun_path, "%s", (root_ + "/full.sock").c_str());
      fillers.push_back(fd);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
        break;  // EAGAIN: the backlog is full
      }
    }
    int timed_out = -1;
    const auto before_timeout = std::chrono::steady_clock::now();
    {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      timeval limit{0, 300 * 1000};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
      sockaddr_un to{};
      to.sun_family = AF_UNIX;
      std::snprintf(to.sun_path, sizeof to.sun_path, "%s", (root_ + "/full.sock").c_str());
      timed_out = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 ? 0 : errno;
      ::close(fd);
    }
    const auto waited = std::chrono::steady_clock::now() - before_timeout;
    for (int fd : fillers) {
      ::close(fd);
    }
    const bool checks[] = {
        reach(root_ + "/host.sock") == ECONNREFUSED,
        reach("host.sock") == ECONNREFUSED,           // relative to the working folder
        reach(root_ + "/link.sock") == ECONNREFUSED,  // through a symbolic link
        reach(root_ + "/host.dgram", true) == ECONNREFUSED,
        reach(root_ + "/listed.sock") == 0,
        own >= 0 && reach(root_ + "/own.sock") == 0,
        own_dgram >= 0 && reach("own.dgram", true) == 0,
        reach(root_ + "/missing.sock") == ENOENT,
        answer != 'y' || reach(root_ + "/other.sock") == ECONNREFUSED,
        from_thread == 0,  // a call from a thread that is not the process's first
        connected.load() == 100,
        freed == 0 && freed_soon,
        timed_out == EAGAIN && waited >= std::chrono::milliseconds(250) &&
            waited < std::chrono::seconds(5),
    };
    for (std::size_t i = 0; i < sizeof checks; ++i) {
      if (!checks[i]) {
        ::_exit(static_cast<int>(i + 1));
      }
    }
    ::_exit(0);
  }
  ::close(channel[1]);
  auto message = receive_message(channel[0]);
  auto diag = message ? receive_message(channel[0]) : message;
  int status = 0;
  if (!message || message->fd < 0 || !diag || diag->fd < 0) {
    ::waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 100) {
      GTEST_SKIP() << "cannot create a user namespace here";
    }
    FAIL() << "the child sent no listener (exit " << WEXITSTATUS(status) << ")";
  }
  {
    UnixConnectGuard guard(message->fd, diag->fd, {root_ + "/listed.sock"});
    ::waitpid(child, &status, 0);
  }
  ::close(channel[0]);
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  for (int fd : {host, host_dgram, listed}) {
    ::close(fd);
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the first check that failed (1-based)";
}

TEST(BoundUnixSocketInodesTest, ListsASocketBoundHere) {
  char pattern[] = "/tmp/sandgate-diag-test-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string path = std::string(pattern) + "/s.sock";
  const int fd = bound_socket(path, SOCK_STREAM);
  ASSERT_GE(fd, 0);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  const auto inodes = bound_unix_socket_inodes();
  EXPECT_TRUE(inodes.contains(
      {static_cast<std::uint32_t>(info.st_dev), static_cast<std::uint32_t>(info.st_ino)}));
  ::close(fd);
  fs::remove_all(pattern);
}

}  // namespace
}  // namespace sandgate::sandbox
