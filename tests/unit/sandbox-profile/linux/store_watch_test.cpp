// The watch over the hidden stores (store_watch.hpp), with a child of the test's in the place of
// the namespace's init: a store replaced outside kills it, and the store is named by the time the
// child can be reaped (`run` asks at once).
#include "sandbox-profile/linux/store_watch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace sandgate::sandbox
