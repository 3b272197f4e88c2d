// The confined process is cloned from a single-threaded `run` only: the child of a raw clone()
// runs no fork handlers, so a lock another thread held at that moment would stay held in it.
#include "sandbox-profile/linux/linux_namespaces.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

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

}  // namespace
}  // namespace sandgate::sandbox
