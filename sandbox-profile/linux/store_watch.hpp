// Watches, from outside the run, the folders of the credential stores hidden file by file
// (plan/credential_stores.hpp). A program outside that replaces one during the run (a rename over
// it, as `git credential-store` and `docker login` write) takes the run's /dev/null mount away
// with the old file, and the command could read the new one. So the run fails closed: the
// command is killed at once and `run` says why. (A read in the instant between the rename and
// the kill is not ruled out, of the new file and of the old one too: the kernel's rename detaches
// the mounts on the old file, in every namespace, before the name moves to the new one, and a
// lookup in between, a wait for RCU readers long on a loaded machine, finds the old file
// uncovered. Nothing a mount namespace holds can refuse an outside rename.) A hidden folder
// replaced whole is watched the same way. The watch starts once the confined child exists, whose
// covers may be made before it: the child checks them again before the command starts
// (private_view.hpp, first_uncovered).
//
// With inotify; when no inotify instance or watch can be had (the user's are all taken by other
// programs), by comparing each store's and folder's inode every kPollInterval instead (a
// replacement is then seen up to that late).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sandgate::sandbox {

class StoreWatch {
 public:
  // Watches `stores` (absolute paths) for the process `child` (the namespace's init). Nothing
  // is watched when `stores` is empty.
  StoreWatch(const std::vector<std::string>& stores, pid_t child);
  ~StoreWatch();
  StoreWatch(const StoreWatch&) = delete;
  StoreWatch& operator=(const StoreWatch&) = delete;

  // The store that was replaced (the command was killed for it); empty when none was.
  std::string replaced() const;

 private:
  static constexpr std::chrono::milliseconds kPollInterval{100};

  void watch(pid_t child);
  // The fallback: each store and folder, by inode, until stop.
  void poll(pid_t child);
  void stopped_for(pid_t child, const std::string& hit);

  int inotify_ = -1;
  int stop_ = -1;  // an eventfd: the destructor ends the thread through it
  struct Folder {
    int wd;
    std::string path;
    std::vector<std::string> names;  // the stores in it
  };
  std::vector<Folder> folders_;
  // Polled: what each path (a store or its folder) was at start.
  struct Identity {
    std::string path;
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
  };
  static Identity identity_of(const std::string& path);
  std::vector<Identity> polled_;
  std::condition_variable stop_polling_;
  bool stopping_ = false;  // guarded by mutex_
  mutable std::mutex mutex_;
  std::string replaced_;
  std::thread thread_;
};

}  // namespace sandgate::sandbox
