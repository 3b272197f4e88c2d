// Waiting in a test for something another thread or process makes true: polls `done` every 10 ms
// until it holds or `timeout` passes. A bound on how long a broken gate can hold a test, never a
// claim about how fast a working one is (no test asserts a timing).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace sandgate::testing {

// Whether `done()` held within `timeout` (it is asked once more at the end).
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::steady_clock::duration timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return done();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace sandgate::testing
