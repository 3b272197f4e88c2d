// Landlock write protection, applied for real in a forked child (it cannot be undone): the
// protected paths cannot be written, created, removed, renamed or truncated; everything beside
// them stays writable.
#include "sandbox-profile/linux/landlock.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "sandbox-profile/plan/protected_paths.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

class LandlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (landlock_abi() == 0) {
      GTEST_SKIP() << "this kernel offers no Landlock (landlock_create_ruleset failed): the "
                      "write protection cannot be tested here";
    }
    char pattern[] = "/tmp/sandgate-landlock-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern).string();
    home_ = root_ + "/home";
    fs::create_directories(home_ + "/.ssh");
    fs::create_directories(home_ + "/project");
    fs::create_directories(home_ + "/dotfiles");
    std::ofstream(home_ + "/.ssh/authorized_keys") << "key\n";
    std::ofstream(home_ + "/.bashrc") << "# rc\n";
    std::ofstream(home_ + "/dotfiles/zshrc") << "# zsh\n";
    std::ofstream(home_ + "/notes.txt") << "notes\n";
    fs::create_symlink(home_ + "/dotfiles/zshrc", home_ + "/.zshrc");
  }
  void TearDown() override {
    if (!root_.empty()) {
      std::error_code ec;
      fs::remove_all(root_, ec);
    }
  }

  // Runs `body` in a child restricted to write (and bind sockets) anywhere but `paths`; returns
  // its exit code.
  int in_child(const std::vector<ProtectedPath>& paths, const std::function<int()>& body) {
    WritePolicy policy;
    policy.writable = {"/"};
    policy.sockets = {"/"};
    for (const auto& p : paths) {
      policy.carved.push_back(p.path);
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      auto applied = restrict_writes(policy);
      if (!applied) {
        std::fprintf(stderr, "%s\n", applied.error().c_str());
        ::_exit(100);
      }
      ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static bool can_write(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
      return false;
    }
    ::close(fd);
    return true;
  }

  std::string root_;
  std::string home_;
};

TEST_F(LandlockTest, ProtectedPathsAreReadOnlyAndTheRestIsWritable) {
  const std::vector<ProtectedPath> paths = {{home_ + "/.ssh", true, false},
                                            {home_ + "/.bashrc", false, false},
                                            {home_ + "/.zshrc", false, false},
                                            {home_ + "/.zshenv", false, false}};
  const int failures = in_child(paths, [&] {
    int bad = 0;
    const auto expect = [&bad](bool ok, const char* what) {
      if (!ok) {
        std::fprintf(stderr, "failed: %s\n", what);
        ++bad;
      }
    };
    expect(!can_write(home_ + "/.bashrc"), "write ~/.bashrc");
    expect(::truncate((home_ + "/.bashrc").c_str(), 0) != 0, "truncate ~/.bashrc");
    expect(::unlink((home_ + "/.bashrc").c_str()) != 0, "unlink ~/.bashrc");
    expect(::rename((home_ + "/.bashrc").c_str(), (home_ + "/project/rc").c_str()) != 0,
           "rename ~/.bashrc away");
    expect(!can_write(home_ + "/.ssh/authorized_keys"), "write ~/.ssh/authorized_keys");
    expect(!can_write(home_ + "/.ssh/new_key"), "create in ~/.ssh");
    expect(::rename((home_ + "/.ssh").c_str(), (home_ + "/project/ssh").c_str()) != 0,
           "rename ~/.ssh");
    expect(!can_write(home_ + "/.zshenv"), "create the missing ~/.zshenv");
    // ~/.zshrc is a symbolic link: where it leads is protected too.
    expect(!can_write(home_ + "/dotfiles/zshrc"), "write the target of ~/.zshrc");
    // Beside them, everything that exists stays writable.
    expect(can_write(home_ + "/notes.txt"), "write ~/notes.txt");
    expect(can_write(home_ + "/project/new.txt"), "create in ~/project");
    expect(::mkdir((home_ + "/project/sub").c_str(), 0700) == 0, "mkdir in ~/project");
    expect(can_write(home_ + "/project/sub/deeper.txt"), "create below a new folder");
    expect(can_write("/dev/null"), "write /dev/null");
    // The known price: no new entry directly in a folder on the way to a protected path.
    expect(!can_write(home_ + "/brand-new.txt"), "(documented) create directly in ~");
    // Reading is untouched.
    expect(::access((home_ + "/.ssh/authorized_keys").c_str(), R_OK) == 0, "read ~/.ssh");
    return bad;
  });
  EXPECT_EQ(failures, 0) << "see the child's messages above";
}

// The allow-list (issue 20, item 3): writes only beneath the granted roots, whoever runs it
// (root too); carved paths inside a root stay read-only, and so do the links on their way.
TEST_F(LandlockTest, WritesOnlyBeneathTheGrantedRootsWithCarvedPathsAndTheirLinks) {
  fs::create_directories(root_ + "/outside");
  fs::create_directories(home_ + "/project/real");
  std::ofstream(home_ + "/project/real/allow.txt") << "ok\n";
  fs::create_directory_symlink(home_ + "/project/real", home_ + "/project/cfg");
  WritePolicy policy;
  policy.writable = {home_};
  policy.devices = {"/dev/null"};
  policy.carved = {home_ + "/.bashrc", home_ + "/project/cfg/allow.txt"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto applied = restrict_writes(policy);
    if (!applied) {
      std::fprintf(stderr, "%s\n", applied.error().c_str());
      ::_exit(100);
    }
    int bad = 0;
    const auto expect = [&bad](bool ok, const char* what) {
      if (!ok) {
        std::fprintf(stderr, "failed: %s\n", what);
        ++bad;
      }
    };
    expect(!can_write(root_ + "/outside/x"), "create outside the roots");
    expect(!can_write("/etc/sandgate-landlock-test"), "create in /etc");
    expect(can_write("/dev/null"), "write /dev/null");
    expect(!can_write(home_ + "/.bashrc"), "write a carved file");
    expect(!can_write(home_ + "/project/real/allow.txt"), "write the carved file's target");
    expect(::unlink((home_ + "/project/cfg").c_str()) != 0, "unlink the link on the way");
    expect(::rename((home_ + "/project/real").c_str(), (home_ + "/project/r2").c_str()) != 0,
           "rename the folder on the way");
    expect(can_write(home_ + "/notes.txt"), "write beside");
    expect(can_write(home_ + "/dotfiles/new"), "create in a folder beside");
    ::_exit(bad);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "see the child's messages";
  EXPECT_FALSE(fs::exists("/etc/sandgate-landlock-test"));
}

// Whether a unix socket can be bound at `path`.
bool can_bind(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return bound;
}

// Issue 40, 3: unix sockets are bound only beneath the socket roots, never in a host folder bound
// back inside one, nor in a carved path; writing stays allowed in every writable root.
TEST_F(LandlockTest, SocketsAreBoundOnlyBeneathTheSocketRoots) {
  fs::create_directories(home_ + "/.cache");
  fs::create_directories(root_ + "/private/kept");
  fs::create_directories(root_ + "/private/mine");
  WritePolicy policy;
  policy.writable = {home_, root_ + "/private"};
  policy.sockets = {root_ + "/private"};
  policy.not_sockets = {root_ + "/private/kept"};
  policy.carved = {home_ + "/.bashrc"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto applied = restrict_writes(policy);
    if (!applied) {
      std::fprintf(stderr, "%s\n", applied.error().c_str());
      ::_exit(100);
    }
    int bad = 0;
    const auto expect = [&bad](bool ok, const char* what) {
      if (!ok) {
        std::fprintf(stderr, "failed: %s\n", what);
        ++bad;
      }
    };
    expect(!can_bind(home_ + "/.cache/socket"),
           "bind in a writable root that is not a socket root");
    expect(can_write(home_ + "/.cache/file"), "write in it");
    expect(::mkfifo((home_ + "/.cache/fifo").c_str(), 0600) == 0, "make a fifo in it");
    expect(can_bind(root_ + "/private/mine/own.sock"), "bind in a socket root");
    // The price of the kept folder: nothing new directly in the folder on the way to it.
    expect(!can_bind(root_ + "/private/own.sock"), "(documented) bind directly beside it");
    expect(!can_bind(root_ + "/private/kept/host.sock"), "bind in a host folder kept inside");
    expect(can_write(root_ + "/private/kept/file"), "write in the kept folder");
    ::_exit(bad);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "see the child's messages";
}

TEST_F(LandlockTest, LinksOnTheWayAreFoundThroughNestedLinks) {
  fs::create_directories(root_ + "/a/b");
  fs::create_directory_symlink(root_ + "/a", root_ + "/l1");
  fs::create_directory_symlink("b", root_ + "/a/l2");  // relative, inside the first target
  EXPECT_EQ(links_on_the_way(root_ + "/l1/l2/file"),
            (std::vector<std::string>{root_ + "/l1", root_ + "/a/l2"}));
  EXPECT_TRUE(links_on_the_way(root_ + "/a/b/file").empty());
}

TEST_F(LandlockTest, RefusesToProtectTheRoot) {
  auto result = in_child({{"/", true, false}}, [] { return 0; });
  EXPECT_EQ(result, 100);
}

}  // namespace
}  // namespace sandgate::sandbox
