// The mount view's pure part: finding the second mounts of a protected path in the text of
// /proc/self/mountinfo (issue 20, item 9); and the hidden stores' covers, made for real in a
// forked child's own user and mount namespaces, as a program outside replaces the stores. The
// rest of the mounting is exercised end to end by tests/e2e/run_test.cpp.
#include "sandbox-profile/linux/private_view.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

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
      FrozenFolders frozen;
      // The folder is writable inside (no read-only root): not frozen, the covers alone.
      if (!build_private_view(plan, hidden, reads, covers, frozen) || covers.size() != 2 ||
          !frozen.folders.empty() || frozen.left != std::vector<std::string>{root}) {
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

// The layout of the StoreViews tests, under a fresh temporary folder `root` (read-only inside
// the view, as the home is): a hidden file and a hidden folder in it, beside a file, a folder, a
// link and a writable working folder.
struct FrozenLayout {
  std::string root;
  std::string store;   // root/credentials: hidden file
  std::string folder;  // root/keys: hidden folder
  std::string work;    // root/work: writable inside

  FrozenLayout() {
    std::string pattern = ::testing::TempDir() + "/store-views-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      return;
    }
    root = std::filesystem::canonical(pattern).string();
    store = root + "/credentials";
    folder = root + "/keys";
    work = root + "/work";
    std::ofstream(store) << "OLD-TOKEN\n";
    std::filesystem::create_directories(folder);
    std::ofstream(folder + "/key") << "OLD-KEY\n";
    std::filesystem::create_directories(root + "/private");
    std::filesystem::create_directories(root + "/sub");
    std::ofstream(root + "/sub/file") << "SUB\n";
    std::ofstream(root + "/notes") << "NOTES\n";
    std::filesystem::create_symlink("notes", root + "/link");
    std::filesystem::create_directories(work);
  }
  ~FrozenLayout() {
    if (!root.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(root, ignored);
    }
  }
  FrozenLayout(const FrozenLayout&) = delete;
  FrozenLayout& operator=(const FrozenLayout&) = delete;

  // The view of a run: every mount read-only, the working folder writable, the stores hidden.
  ViewPlan plan() const {
    ViewPlan plan;
    plan.private_roots = {root + "/private"};
    plan.read_only_root = true;
    plan.writable = {work};
    plan.secret_files = {store};
    plan.secret_folders = {folder};
    return plan;
  }
};

// In a forked child with its own user and mount namespaces (mapped to the caller's ids): runs
// `body` and exits with what it returns. 10: no namespace can be made here.
pid_t in_namespace(const std::function<int()>& body) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  const pid_t pid = ::fork();
  if (pid != 0) {
    return pid;
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    ::_exit(10);
  }
  put("/proc/self/setgroups", "deny");
  if (!put("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
      !put("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1")) {
    ::_exit(10);
  }
  // As the run's namespace: no new namespace may be made from it (a detached mount counts).
  put("/proc/sys/user/max_mnt_namespaces", "0");
  ::_exit(body());
}

// The child's exit code (-1: it did not exit).
int exit_code_of(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    return -1;
  }
  return WEXITSTATUS(status);
}

// The view's stores, as built by the run (the folders holding a store frozen where the command
// cannot write them).
bool build_view(const ViewPlan& plan, std::vector<StoreCover>& covers, FrozenFolders& frozen) {
  std::vector<std::string> hidden;
  StoreReads reads;
  return build_private_view(plan, hidden, reads, covers, frozen).has_value();
}

// A program outside renames a new file over a hidden store, again and again (as `git
// credential-store` does on every HTTPS login), while a reader inside opens and reads the
// store's path without pause; then it moves the hidden folder away and makes a new one in its
// place. The reader never sees the old file's content nor the new one's (the kernel takes the
// store's own cover away at each rename, but the name inside is the frozen folder's, which no
// rename outside touches), and the new folder stays hidden. The folder's other entries are as
// they were: a file and a folder readable, a link pointing where it did, the working folder
// under it writable.
TEST(StoreViews, AStoreRenamedOverOutsideNeverShowsInside) {
  const FrozenLayout layout;
  ASSERT_FALSE(layout.root.empty());
  constexpr int kRenames = 200;
  int ready[2];
  int replaced[2];
  ASSERT_EQ(::pipe(ready), 0);
  // A socket pair: the child's end polled without blocking, the parent's send unharmed if the
  // child has already failed.
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, replaced), 0);
  ASSERT_EQ(::fcntl(replaced[0], F_SETFL, O_NONBLOCK), 0);
  const pid_t pid = in_namespace([&]() -> int {
    // Exit codes: 1 to 9 and 11 the step that failed (stderr says what was read), 0 all held.
    ::close(ready[0]);
    ::close(replaced[1]);
    std::vector<StoreCover> covers;
    FrozenFolders frozen;
    if (!build_view(layout.plan(), covers, frozen) || covers.size() != 2 ||
        frozen.folders != std::vector<std::string>{layout.root} || !frozen.left.empty() ||
        frozen.settled != std::vector<std::string>{layout.folder, layout.store}) {
      return 1;
    }
    if (!contents(layout.store).empty() || std::filesystem::exists(layout.folder + "/key")) {
      return 2;  // not hidden
    }
    if (contents(layout.root + "/notes") != "NOTES\n" ||
        contents(layout.root + "/sub/file") != "SUB\n" ||
        contents(layout.root + "/link") != "NOTES\n" ||
        std::filesystem::read_symlink(layout.root + "/link") != "notes") {
      return 3;  // a sibling lost
    }
    std::ofstream(layout.work + "/written") << "WRITTEN\n";
    if (contents(layout.work + "/written") != "WRITTEN\n") {
      return 4;  // the working folder is no longer writable through the frozen folder
    }
    // The frozen folder, its read-only entries and the store's cover stay read-only.
    for (const auto& path : {layout.root + "/new", layout.root + "/notes", layout.store}) {
      if (::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600) >= 0 || errno != EROFS) {
        return 5;
      }
    }
    if (::chmod(layout.root.c_str(), 0777) == 0 || ::rename(layout.root.c_str(), "/x") == 0) {
      return 5;
    }
    if (!first_uncovered(covers).empty()) {
      return 6;
    }
    (void)!::write(ready[1], "r", 1);
    std::size_t reads = 0;
    for (char done = 0; ::read(replaced[0], &done, 1) != 1; ++reads) {
      const std::string seen = contents(layout.store);
      if (!seen.empty()) {
        std::fprintf(stderr, "read %s after %zu reads\n", seen.c_str(), reads);
        return 7;
      }
      if (std::filesystem::exists(layout.folder + "/key")) {
        std::fprintf(stderr, "the hidden folder's key is there after %zu reads\n", reads);
        return 8;
      }
    }
    if (!contents(layout.store).empty() || std::filesystem::exists(layout.folder + "/key") ||
        !first_uncovered(covers).empty() || contents(layout.root + "/notes") != "NOTES\n") {
      return 9;
    }
    std::fprintf(stderr, "%zu reads across the renames\n", reads);
    return reads < 100 ? 11 : 0;  // 11: too few reads to have raced the renames
  });
  ASSERT_GT(pid, 0);
  ::close(ready[1]);
  ::close(replaced[0]);
  char got = 0;
  if (::read(ready[0], &got, 1) == 1) {
    for (int i = 0; i < kRenames; ++i) {
      std::ofstream(layout.store + ".new") << "NEW-TOKEN-" << i << "\n";
      std::filesystem::rename(layout.store + ".new", layout.store);
    }
    std::filesystem::rename(layout.folder, layout.folder + ".old");
    std::filesystem::create_directories(layout.folder);
    std::ofstream(layout.folder + "/key") << "NEW-KEY\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a few more reads after it
    (void)!::send(replaced[1], "d", 1, MSG_NOSIGNAL);
  }
  ::close(ready[0]);
  ::close(replaced[1]);
  const int code = exit_code_of(pid);
  if (code == 10) {
    GTEST_SKIP() << "cannot create a user and mount namespace here";
  }
  EXPECT_EQ(code, 0);
}

// A folder holding a hidden store with more entries than kMaxFrozenEntries is not frozen: the
// run does not start, and says which folder and why.
TEST(StoreViews, AFolderWithTooManyEntriesStopsTheRun) {
  const FrozenLayout layout;
  ASSERT_FALSE(layout.root.empty());
  for (std::size_t i = 0; i < kMaxFrozenEntries; ++i) {
    std::ofstream(layout.root + "/f" + std::to_string(i));
  }
  int said[2];
  ASSERT_EQ(::pipe(said), 0);
  const pid_t pid = in_namespace([&]() -> int {
    ::close(said[0]);
    std::vector<std::string> hidden;
    StoreReads reads;
    std::vector<StoreCover> covers;
    FrozenFolders frozen;
    const auto built = build_private_view(layout.plan(), hidden, reads, covers, frozen);
    if (built) {
      return 1;
    }
    (void)!::write(said[1], built.error().data(), built.error().size());
    return 0;
  });
  ASSERT_GT(pid, 0);
  ::close(said[1]);
  std::string error;
  char buffer[512];
  for (ssize_t got; (got = ::read(said[0], buffer, sizeof buffer)) > 0;) {
    error.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(said[0]);
  const int code = exit_code_of(pid);
  if (code == 10) {
    GTEST_SKIP() << "cannot create a user and mount namespace here";
  }
  EXPECT_EQ(code, 0);
  EXPECT_NE(error.find("cannot freeze " + layout.root), std::string::npos) << error;
  EXPECT_NE(error.find("more than 4096 entries"), std::string::npos) << error;
}

}  // namespace
}  // namespace sandgate::sandbox
