// linux_namespaces: the confined process is cloned from a single-threaded `run` only (the child
// of a raw clone() runs no fork handlers, so a lock another thread held at that moment would stay
// held in it); the command's share of the per-user rlimits and of the /proc/sys/user limits.
#include "sandbox-profile/linux/linux_namespaces.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
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

// A /proc/sys of the test's own, with the files it is given (path under it = contents).
class ProcSys {
 public:
  explicit ProcSys(const std::vector<std::pair<std::string, std::string>>& files) {
    root_ = std::string(::testing::TempDir()) + "/proc-sys-XXXXXX";
    if (::mkdtemp(root_.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp";
    }
    for (const auto& [path, contents] : files) {
      std::filesystem::create_directories(std::filesystem::path(root_ + "/" + path).parent_path());
      std::ofstream(root_ + "/" + path) << contents;
    }
  }
  ~ProcSys() { std::filesystem::remove_all(root_); }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

using Limits = std::vector<std::pair<std::string, long>>;

// At the top level both places say the same: a quarter of each, no namespaces, and a limit
// this kernel lacks (no fanotify files here) is left out.
TEST(SandboxUserLimits, AtTheTopLevelAQuarterOfEachAndNoNamespaces) {
  const ProcSys proc({{"user/max_inotify_instances", "128\n"},
                      {"user/max_inotify_watches", "65536\n"},
                      {"user/max_user_namespaces", "63429\n"},
                      {"user/max_mnt_namespaces", "63429\n"},
                      {"fs/inotify/max_user_instances", "128\n"},
                      {"fs/inotify/max_user_watches", "65536\n"}});
  EXPECT_EQ(sandbox_user_limits(proc.root()), (Limits{{"max_inotify_instances", 32},
                                                      {"max_inotify_watches", 16384},
                                                      {"max_mnt_namespaces", 0},
                                                      {"max_user_namespaces", 0}}));
}

// Inside a nested user namespace (rootless podman, toolbox, a CI runner) the namespace's own
// files say INT_MAX, yet the kernel charges the top level's limit: the quarter is of that.
TEST(SandboxUserLimits, InsideANestedUserNamespaceTheTopLevelsLimitIsTheUsers) {
  const ProcSys proc({{"user/max_inotify_instances", "2147483647\n"},
                      {"user/max_inotify_watches", "2147483647\n"},
                      {"user/max_fanotify_groups", "2147483647\n"},
                      {"user/max_fanotify_marks", "2147483647\n"},
                      {"user/max_user_namespaces", "2147483647\n"},
                      {"fs/inotify/max_user_instances", "128\n"},
                      {"fs/inotify/max_user_watches", "65536\n"},
                      {"fs/fanotify/max_user_groups", "128\n"},
                      {"fs/fanotify/max_user_marks", "1048576\n"}});
  EXPECT_EQ(sandbox_user_limits(proc.root()), (Limits{{"max_fanotify_groups", 32},
                                                      {"max_fanotify_marks", 262144},
                                                      {"max_inotify_instances", 32},
                                                      {"max_inotify_watches", 16384},
                                                      {"max_user_namespaces", 0}}));
}

// A namespace that set a lower limit of its own keeps it; an unreadable top level changes
// nothing; a limit of 1 or 0 leaves the command one (a quarter rounds down to 0).
TEST(SandboxUserLimits, TheSmallerLevelWinsAndTheShareIsAtLeastOne) {
  const ProcSys proc({{"user/max_inotify_instances", "40\n"},
                      {"user/max_inotify_watches", "1000\n"},
                      {"user/max_fanotify_groups", "2\n"},
                      {"fs/inotify/max_user_instances", "128\n"},
                      {"fs/inotify/max_user_watches", "not a number\n"},
                      {"fs/fanotify/max_user_groups", "0\n"}});
  EXPECT_EQ(sandbox_user_limits(proc.root()), (Limits{{"max_fanotify_groups", 1},
                                                      {"max_inotify_instances", 10},
                                                      {"max_inotify_watches", 250}}));
}

// This machine's: every limit the kernel has, none above a quarter of the top level's.
TEST(SandboxUserLimits, ThisMachinesAreAtMostAQuarterOfTheTopLevels) {
  long top = 0;
  if (!(std::ifstream("/proc/sys/fs/inotify/max_user_instances") >> top)) {
    GTEST_SKIP() << "no inotify here";
  }
  for (const auto& [name, value] : sandbox_user_limits()) {
    if (name == "max_inotify_instances") {
      EXPECT_EQ(value, std::max(1L, top / 4));
    }
  }
}

}  // namespace

// The frozen folders reach `run` with the report; a path with a newline is left out (a store not
// said to be settled stays on the watch that stops the run).
TEST(NamespaceReport, CarriesTheFrozenFoldersAndSettledStores) {
  NamespaceReport report;
  report.frozen.folders = {"/home/ada/.config/gh", "/home/ada"};
  report.frozen.left = {"/home/ada/work"};
  report.frozen.settled = {"/home/ada/.git-credentials", "/home/ada/odd\nname"};
  const NamespaceReport back = NamespaceReport::parse(report.serialize());
  EXPECT_EQ(back.frozen.folders, report.frozen.folders);
  EXPECT_EQ(back.frozen.left, report.frozen.left);
  EXPECT_EQ(back.frozen.settled, std::vector<std::string>{"/home/ada/.git-credentials"});
}

}  // namespace sandgate::sandbox
