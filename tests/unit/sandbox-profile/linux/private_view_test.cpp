// The mount view's pure part: finding the second mounts of a protected path in the text of
// /proc/self/mountinfo (issue 20, item 9); and the hidden stores' covers, made for real in a
// forked child's own user and mount namespaces, as a program outside replaces the stores. The
// rest of the mounting is exercised end to end by tests/e2e/run_test.cpp.
#include "sandbox-profile/linux/private_view.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sandgate::sandbox {
namespace {

constexpr const char* kMountinfo =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "30 27 8:2 / /home rw,relatime - ext4 /dev/sda2 rw\n"
    // The home of ada mounted a second time under her project, and /home again at /mnt/h.
    "41 30 8:2 /ada /home/ada/projects/alias rw,relatime - ext4 /dev/sda2 rw\n"
    "42 27 8:2 / /mnt/h rw,relatime - ext4 /dev/sda2 rw\n"
    // Another file system's folder of the same name: not an alias.
    "43 27 8:3 /ada /srv/ada rw,relatime - ext4 /dev/sda3 rw\n"
    // A path with a space, escaped as mountinfo does.
    "44 27 8:2 /ada/.ssh /opt/my\\040keys rw,relatime - ext4 /dev/sda2 rw\n";

TEST(MountAliases, FindsEveryOtherMountOfTheSameFolder) {
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/.bashrc"),
            (std::vector<std::string>{"/home/ada/projects/alias/.bashrc", "/mnt/h/ada/.bashrc"}));
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/.ssh"),
            (std::vector<std::string>{"/home/ada/projects/alias/.ssh", "/mnt/h/ada/.ssh",
                                      "/opt/my keys"}));
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/.ssh/config"),
            (std::vector<std::string>{"/home/ada/projects/alias/.ssh/config",
                                      "/mnt/h/ada/.ssh/config", "/opt/my keys/config"}));
}

TEST(MountAliases, NoneForAPathMountedOnce) {
  EXPECT_TRUE(mount_aliases(kMountinfo, "/etc/passwd").empty());
  EXPECT_TRUE(mount_aliases(kMountinfo, "/home/bob/.bashrc").size() == 1);  // /mnt/h/bob
  EXPECT_TRUE(mount_aliases("", "/home/ada/.bashrc").empty());
}

// A path reached through the alias itself maps back to the original and the other alias.
TEST(MountAliases, WorksFromEitherSide) {
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/projects/alias/.bashrc"),
            (std::vector<std::string>{"/home/ada/.bashrc", "/mnt/h/ada/.bashrc"}));
}

// Writes `text` to `path` whole (false if it cannot).
bool put(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A program outside renames a file over a hidden store, or moves a hidden folder away and makes
// a new one: the kernel detaches the cover in every namespace, and the path shows the host's
// file or folder again. first_uncovered() names the store then, and only then (the confined init
// asks it before the command starts). With placeholders (a private root to make them under) and
// with /dev/null.
TEST(StoreCovers, AStoreReplacedOutsideIsNoLongerCovered) {
  for (const bool placeholders : {true, false}) {
    SCOPED_TRACE(placeholders ? "placeholders" : "/dev/null");
    std::string pattern = ::testing::TempDir() + "/store-covers-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    const std::string root = std::filesystem::canonical(pattern).string();
    const std::string store = root + "/credentials";
    const std::string folder = root + "/keys";
    std::ofstream(store) << "OLD-TOKEN\n";
    std::ofstream(store + ".new") << "NEW-TOKEN\n";
    std::filesystem::create_directories(folder);
    std::ofstream(folder + "/key") << "OLD-KEY\n";
    std::filesystem::create_directories(root + "/private");

    int ready[2];
    int replaced[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(replaced), 0);
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Exit codes: 10 no namespace here (skipped), 1 to 6 the step that failed, 0 all held.
      ::close(ready[0]);
      ::close(replaced[1]);
      if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        ::_exit(10);
      }
      put("/proc/self/setgroups", "deny");
      if (!put("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
          !put("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1")) {
        ::_exit(10);
      }
      ViewPlan plan;
      if (placeholders) {
        plan.private_roots = {root + "/private"};
      }
      plan.secret_files = {store};
      plan.secret_folders = {folder};
      std::vector<std::string> hidden;
      StoreReads reads;
      std::vector<StoreCover> covers;
      if (!build_private_view(plan, hidden, reads, covers) || covers.size() != 2) {
        ::_exit(1);
      }
      if (!contents(store).empty() || std::filesystem::exists(folder + "/key")) {
        ::_exit(2);  // not hidden
      }
      if (!first_uncovered(covers).empty()) {
        ::_exit(3);  // in place, yet said not to be
      }
      (void)!::write(ready[1], "r", 1);
      char done = 0;
      if (::read(replaced[0], &done, 1) != 1) {
        ::_exit(4);
      }
      if (contents(store) != "NEW-TOKEN\n") {
        ::_exit(5);  // the kernel kept the cover: this test no longer shows what it is for
      }
      // Each named (the folders are covered first).
      if (first_uncovered({covers[0]}) != folder || first_uncovered({covers[1]}) != store) {
        ::_exit(6);
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(replaced[0]);
    char got = 0;
    const bool child_ready = ::read(ready[0], &got, 1) == 1;
    if (child_ready) {
      std::filesystem::rename(store + ".new", store);
      std::filesystem::rename(folder, folder + ".old");
      std::filesystem::create_directories(folder);
      std::ofstream(folder + "/key") << "NEW-KEY\n";
      (void)!::write(replaced[1], "d", 1);
    }
    ::close(ready[0]);
    ::close(replaced[1]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    std::filesystem::remove_all(root);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 10) {
      GTEST_SKIP() << "cannot create a user and mount namespace here";
    }
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

}  // namespace
}  // namespace sandgate::sandbox
