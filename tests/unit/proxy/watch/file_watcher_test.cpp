// FileWatcher with the platform's backend (inotify here) on real files in a fresh temporary
// folder: each way a file changes is reported once it settles, a sibling's writes are not, a
// folder deleted and restored is seen, and wake() ends a wait. The event logic alone is
// change_logic_test.

#include "proxy/watch/file_watcher.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/sanitized_build.hpp"

namespace sandgate::watch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr auto kQuiet = 50ms;

class FileWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sandgate-watch-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    folder_ = root_ / "lists";
    fs::create_directory(folder_);
    path_ = (folder_ / "blocked.txt").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
  }

  // Waits for a change, bounded: a watcher that misses one would block forever, so a second
  // thread wakes it after `limit` and the test then sees an empty list.
  static std::vector<std::string> wait(FileWatcher& watcher, std::chrono::milliseconds limit) {
    std::promise<void> done;
    auto finished = done.get_future();
    std::thread waker([&] {
      if (finished.wait_for(limit) == std::future_status::timeout) {
        watcher.wake();
      }
    });
    auto changed = watcher.wait_for_change(kQuiet);
    done.set_value();
    waker.join();
    return changed;
  }

  fs::path root_;
  fs::path folder_;
  std::string path_;
};

TEST_F(FileWatcherTest, ReportsAFileCreatedAfterStart) {
  FileWatcher watcher({path_});
  write(path_, "evil.com\n");
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(path_));
}

// Cases `make test` runs in the optimised tree only (tests/CMakeLists.txt, release_checks).
class FileWatcherReleaseBuild : public FileWatcherTest {};

// Issue 40, 9: with no inotify instance to be had (every descriptor taken here, as every instance
// of the user's can be), the watcher still starts and the timer's comparison finds the change.
TEST_F(FileWatcherReleaseBuild, WithoutAnInotifyInstanceItPolls) {
  if (sandgate::testing::kSanitizedBuild) {
    // Out of descriptors, UBSan's vptr check cannot make its probe pipe and reports a false
    // "invalid vptr" (tests/support/sanitized_build.hpp): the optimised tree runs this case.
    GTEST_SKIP() << "runs in the optimised tree";
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit limit{64, 64};
    ::setrlimit(RLIMIT_NOFILE, &limit);
    std::vector<int> taken;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
      taken.push_back(fd);
    }
    // Two for the watcher's wake pipe; none left for inotify.
    for (int i = 0; i < 2 && !taken.empty(); ++i) {
      ::close(taken.back());
      taken.pop_back();
    }
    try {
      FileWatcher watcher({path_});
      ::close(taken.back());  // one to write the file with
      write(path_, "evil.com\n");
      ::_exit(wait(watcher, 5s) == std::vector<std::string>{path_} ? 0 : 1);
    } catch (const std::exception&) {
      ::_exit(2);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "exit " << WEXITSTATUS(status) << " (1: no change seen, 2: the watcher did not start)";
}

TEST_F(FileWatcherTest, ReportsAWriteInPlaceAndAnAtomicReplace) {
  write(path_, "a.com\n");
  FileWatcher watcher({path_});
  write(path_, "a.com\nb.com\n");
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(path_));
  // An editor's save: a temporary written beside it, then renamed over it.
  write(folder_ / ".blocked.txt.tmp", "c.com\n");
  fs::rename(folder_ / ".blocked.txt.tmp", path_);
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(path_));
}

TEST_F(FileWatcherTest, ReportsADeleteAndALaterRecreate) {
  write(path_, "a.com\n");
  FileWatcher watcher({path_});
  fs::remove(path_);
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(path_));
  write(path_, "b.com\n");
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(path_));
}

TEST_F(FileWatcherTest, ReportsTheFileWhenItsFolderIsDeletedAndRestored) {
  write(path_, "a.com\n");
  FileWatcher watcher({path_});
  fs::remove_all(folder_);
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(path_));
  fs::create_directory(folder_);
  write(path_, "b.com\n");
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(path_));
}

TEST_F(FileWatcherTest, IgnoresASiblingFileAndEndsOnWake) {
  write(path_, "a.com\n");
  FileWatcher watcher({path_});
  write(folder_ / "gate.log", "a line\n");
  // Nothing about the watched file: only the wake after 1.5 s (three poll ticks) ends the wait.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(wait(watcher, 1500ms), IsEmpty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1400ms);
}

TEST_F(FileWatcherTest, ReportsOnlyTheFilesThatChanged) {
  const std::string other = (folder_ / "allowed.txt").string();
  write(path_, "a.com\n");
  write(other, "b.com\n");
  FileWatcher watcher({path_, other});
  write(other, "c.com\n");
  EXPECT_THAT(wait(watcher, 5s), ElementsAre(other));
}

}  // namespace
}  // namespace sandgate::watch
