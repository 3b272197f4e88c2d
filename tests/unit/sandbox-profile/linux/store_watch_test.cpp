// The watch over the hidden stores (store_watch.hpp), with a child of the test's in the place of
// the namespace's init: a store replaced outside kills it, and the store is named by the time the
// child can be reaped (`run` asks at once).
#include "sandbox-profile/linux/store_watch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace sandgate::sandbox {
namespace {

TEST(StoreWatch, TheReplacedStoreIsNamedOnceTheChildCanBeReaped) {
  std::string pattern = ::testing::TempDir() + "/store-watch-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::string root = std::filesystem::canonical(pattern).string();
  const std::string store = root + "/.git-credentials";
  // Many rounds: the reaping races the watch's thread after its kill.
  for (int round = 0; round < 40; ++round) {
    std::ofstream(store) << "OLD-TOKEN\n";
    std::ofstream(store + ".new") << "NEW-TOKEN\n";
    const pid_t child = ::fork();
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    ASSERT_GT(child, 0);
    StoreWatch watch({store}, child);
    std::filesystem::rename(store + ".new", store);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "round " << round;
    EXPECT_EQ(watch.replaced(), store) << "round " << round;
  }
  std::filesystem::remove_all(root);
}

// Once the view says a store's folder is frozen (settle()), its replacement outside is noted and
// the child lives on; a store left unfrozen beside it still kills. A frozen folder moved away
// kills unless its own folder is frozen too.
TEST(StoreWatch, ASettledStoreReplacedIsNotedAndTheChildLivesOn) {
  std::string pattern = ::testing::TempDir() + "/store-watch-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::string root = std::filesystem::canonical(pattern).string();
  const std::string settled = root + "/.git-credentials";
  const std::string left = root + "/work/.netrc";
  const std::string deeper = root + "/gh/hosts.yml";
  std::filesystem::create_directories(root + "/work");
  std::filesystem::create_directories(root + "/gh");
  for (const auto& store : {settled, left, deeper}) {
    std::ofstream(store) << "OLD-TOKEN\n";
    std::ofstream(store + ".new") << "NEW-TOKEN\n";
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  {
    StoreWatch watch({settled, left, deeper}, child);
    watch.settle({settled, deeper}, {root, root + "/gh"});
    std::filesystem::rename(settled + ".new", settled);
    std::filesystem::rename(deeper + ".new", deeper);
    std::filesystem::rename(root + "/gh", root + "/gh.old");  // its folder is frozen: noted
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    int status = 0;
    EXPECT_EQ(::waitpid(child, &status, WNOHANG), 0) << "killed for a settled store";
    EXPECT_EQ(watch.replaced(), "");
    EXPECT_EQ(watch.noted(), (std::vector<std::string>{settled, deeper, root + "/gh"}));
    std::filesystem::rename(left + ".new", left);
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    EXPECT_EQ(watch.replaced(), left);
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace sandgate::sandbox
