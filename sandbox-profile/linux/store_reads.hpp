// The command's attempts on the hidden credential stores, from the inotify instance the confined
// child made over their covers (private_view.hpp, StoreReads): each open of a hidden file's
// placeholder is a read, each open of a hidden folder a listing. A thread of `run`'s counts the
// events as they come, so the kernel's queue (16384 events) does not overflow and lose names
// however many opens the command makes; opens and closes are both watched, so that the kernel
// never merges two opens in a row into one.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox-profile/linux/private_view.hpp"
#include "sandbox-profile/plan/credential_stores.hpp"

namespace sandgate::sandbox {

struct StoreAttempts {
  std::vector<StoreAttempt> attempts;  // most attempted first
  bool complete = true;                // false: the kernel's queue overflowed once
};

class StoreReadWatch {
 public:
  // Takes `watch` (the child's inotify descriptor) over; `watched` maps its watches to the
  // stores, `shown` are paths inside hidden folders that stay readable (opening one is no
  // attempt). Nothing is counted when `watch` is -1.
  StoreReadWatch(int watch, std::vector<StoreReads::Watched> watched,
                 std::vector<std::string> shown);
  ~StoreReadWatch();
  StoreReadWatch(const StoreReadWatch&) = delete;
  StoreReadWatch& operator=(const StoreReadWatch&) = delete;

  // When the command has ended: stops counting and returns what was counted.
  StoreAttempts finish();

 private:
  void count_events();  // the thread
  void read_queued();   // one read of the queue, counted

  int watch_ = -1;
  int stop_ = -1;  // an eventfd: finish() ends the thread through it
  std::vector<StoreReads::Watched> watched_;
  std::vector<std::string> shown_;
  std::mutex mutex_;
  std::map<std::pair<std::string, bool>, std::uint64_t> counts_;  // (path, listed) -> opens
  bool complete_ = true;
  std::thread thread_;
};

}  // namespace sandgate::sandbox
