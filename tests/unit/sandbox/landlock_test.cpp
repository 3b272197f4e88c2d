// Landlock write protection, applied for real in a forked child (it cannot be undone): the
// protected paths cannot be written, created, removed, renamed or truncated; everything beside
// them stays writable.
#include "sandbox-profile/landlock.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

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

  // Runs `body` in a child restricted with deny_writes(paths); returns its exit code.
  int in_child(const std::vector<ProtectedPath>& paths, const std::function<int()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      auto applied = deny_writes(paths);
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

TEST_F(LandlockTest, RefusesToProtectTheRoot) {
  auto result = in_child({{"/", true, false}}, [] { return 0; });
  EXPECT_EQ(result, 100);
}

}  // namespace
}  // namespace sandgate::sandbox
