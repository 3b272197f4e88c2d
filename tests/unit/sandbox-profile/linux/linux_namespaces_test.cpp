// linux_namespaces: the confined process is cloned from a single-threaded `run` only (the child
// of a raw clone() runs no fork handlers, so a lock another thread held at that moment would stay
// held in it); the command's share of the per-user rlimits.
#include "sandbox-profile/linux/linux_namespaces.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace sandgate::sandbox {
namespace {

TEST(CloneConfined, RefusesWhileAnotherThreadRuns) {
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  std::thread other([&] {
    std::unique_lock lock(mutex);
    done.wait(lock, [&] { return finished; });
  });
  auto cloned = clone_confined();
  {
    std::lock_guard lock(mutex);
    finished = true;
  }
  done.notify_one();
  other.join();
  ASSERT_FALSE(cloned.has_value());  // had it cloned, the child would be running this test too
  EXPECT_NE(cloned.error().find("2 threads run at the clone"), std::string::npos) << cloned.error();
}

// The command's share of a per-user rlimit: a quarter of the user's, never 0 (a command that
// cannot queue one signal cannot set a timer), within the ceiling, and none where the user has
// none (then the kernel counts nothing against it either).
TEST(CommandShare, IsAQuarterOfTheUsersAtLeastOneWithinTheCeiling) {
  struct Case {
    rlim_t user;
    rlim_t ceiling;
    rlim_t share;
  };
  for (const Case& c :
       {Case{96367, RLIM_INFINITY, 24091}, Case{819200, RLIM_INFINITY, 204800},
        Case{3, RLIM_INFINITY, 1}, Case{0, RLIM_INFINITY, 1}, Case{96367, 4096, 4096},
        Case{1000, 4096, 250}, Case{RLIM_INFINITY, RLIM_INFINITY, RLIM_INFINITY},
        Case{RLIM_INFINITY, 4096, 4096}}) {
    EXPECT_EQ(command_share(c.user, c.ceiling), c.share) << c.user << " within " << c.ceiling;
  }
}

// Every rlimit the kernel counts per user namespace (include/linux/user_namespace.h's
// enum rlimit_type) is in the table, once.
TEST(CommandShare, CoversTheKernelsPerUserNamespaceRlimits) {
  std::vector<int> resources;
  for (const auto& limit : kUserRlimits) {
    resources.push_back(limit.resource);
  }
  std::sort(resources.begin(), resources.end());
  EXPECT_EQ(resources,
            (std::vector<int>{RLIMIT_NPROC, RLIMIT_MEMLOCK, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE}));
}

}  // namespace
}  // namespace sandgate::sandbox
