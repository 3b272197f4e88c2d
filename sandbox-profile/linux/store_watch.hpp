// Watches, from outside the run, the folders of the credential stores hidden file by file
// (plan/credential_stores.hpp). A program outside that replaces one during the run (a rename over
// it, as `git credential-store` and `docker login` write) takes the run's /dev/null mount away
// with the old file, and the command could read the new one. So the run fails closed: the
// command is killed at once and `run` says why. (A read in the instant between the rename and
// the kill is not ruled out.) A hidden folder replaced whole is watched the same way.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sandgate::sandbox {

class StoreWatch {
 public:
  // Watches `stores` (absolute paths) for the process `child` (the namespace's init). Nothing
  // is watched when `stores` is empty or inotify is not available.
  StoreWatch(const std::vector<std::string>& stores, pid_t child);
  ~StoreWatch();
  StoreWatch(const StoreWatch&) = delete;
  StoreWatch& operator=(const StoreWatch&) = delete;

  // The store that was replaced (the command was killed for it); empty when none was.
  std::string replaced() const;

 private:
  void watch(pid_t child);

  int inotify_ = -1;
  int stop_ = -1;  // an eventfd: the destructor ends the thread through it
  struct Folder {
    int wd;
    std::string path;
    std::vector<std::string> names;  // the stores in it
  };
  std::vector<Folder> folders_;
  mutable std::mutex mutex_;
  std::string replaced_;
  std::thread thread_;
};

}  // namespace sandgate::sandbox
