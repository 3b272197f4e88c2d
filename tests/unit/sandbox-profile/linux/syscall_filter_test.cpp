// The system-call allow-list of `sandgate run` (issue 26): what it allows and refuses, checked as
// a list and, in a forked child, as the kernel enforces it.
#include "sandbox-profile/linux/syscall_filter.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string>

namespace sandgate::sandbox {
namespace {

TEST(SyscallFilterTest, TheAllowListNamesNoRefusedCallAndNoneTwice) {
  const auto& allowed = allowed_system_calls();
  const std::set<std::string_view> unique(allowed.begin(), allowed.end());
  EXPECT_EQ(unique.size(), allowed.size()) << "a call is listed twice";
  for (std::string_view refused : refused_system_calls()) {
    EXPECT_EQ(unique.count(refused), 0U) << refused << " is allowed without conditions";
  }
  // What every program needs is there.
  // (openat, chmod and the other calls that set a mode are allowed on conditions: no set-id bit.)
  for (std::string_view needed : {"execve", "read", "write", "mmap", "futex", "wait4", "connect",
                                  "sendmsg", "rt_sigaction", "exit_group"}) {
    EXPECT_EQ(unique.count(needed), 1U) << needed;
  }
}

// Runs `probe` in a child under the filter; returns its exit status (255: set-up failed).
template <typename Probe>
int under_filter(Probe probe) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !install_syscall_filter()) {
      ::_exit(255);
    }
    ::_exit(probe());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 254;
}

// Each returns the errno of a call that must fail (0 if it succeeded).
int errno_of(long result) { return result < 0 ? errno : 0; }

TEST(SyscallFilterTest, RefusedCallsAnswerEnosysAndOrdinaryOnesWork) {
  EXPECT_EQ(
      under_filter([] { return errno_of(::syscall(SYS_request_key, "user", "x", nullptr, 0)); }),
      ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_keyctl, 0, -3, 0)); }), ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_add_key, "user", "x", "", 0, -2)); }),
            ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_bpf, 0, nullptr, 0)); }), ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_userfaultfd, 0)); }), ENOSYS);
  EXPECT_EQ(
      under_filter([] { return errno_of(::syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0)); }),
      ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_io_uring_setup, 4, nullptr)); }),
            ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_open_by_handle_at, 0, nullptr, 0)); }),
            ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_setns, 0, 0)); }), ENOSYS);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_fsopen, "tmpfs", 0)); }), ENOSYS);
  // An unknown call number: ENOSYS, as from a kernel without it.
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(1000)); }), ENOSYS);
  // No new namespace; clone3 falls back (ENOSYS) so that clone's flags can be read.
  EXPECT_EQ(under_filter([] { return errno_of(::unshare(CLONE_NEWUSER)); }), EPERM);
  EXPECT_EQ(under_filter([] { return errno_of(::unshare(CLONE_NEWNET)); }), EPERM);
  EXPECT_EQ(under_filter([] { return errno_of(::syscall(SYS_clone3, nullptr, 0)); }), ENOSYS);
  // Socket families by allow-list.
  EXPECT_EQ(under_filter([] { return errno_of(::socket(40 /* AF_VSOCK */, SOCK_STREAM, 0)); }),
            EAFNOSUPPORT);
  EXPECT_EQ(under_filter([] { return errno_of(::socket(AF_PACKET, SOCK_DGRAM, 0)); }),
            EAFNOSUPPORT);
  // What programs do: fork, exec, threads, sockets of the allowed families.
  EXPECT_EQ(under_filter([] {
              const pid_t child = ::fork();
              if (child == 0) {
                ::execl("/bin/sh", "sh", "-c", "exit 7", static_cast<char*>(nullptr));
                ::_exit(1);
              }
              int status = 0;
              ::waitpid(child, &status, 0);
              return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
            }),
            7);
  EXPECT_EQ(under_filter([] {
              const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
              const int unix_fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
              return fd >= 0 && unix_fd >= 0 ? 0 : 1;
            }),
            0);
  EXPECT_EQ(under_filter([] {
              // A shell pipeline with threads of its own (sort may use several).
              return ::system("printf 'b\\na\\n' | sort --parallel=2 >/dev/null") == 0 ? 0 : 1;
            }),
            0);
}

}  // namespace
}  // namespace sandgate::sandbox
