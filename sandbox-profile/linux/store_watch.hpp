// Watches, from outside the run, the folders of the credential stores hidden file by file
// (plan/credential_stores.hpp). A program outside that replaces one during the run (a rename over
// it, as `git credential-store`, kubectl and `docker login` write) takes the run's cover away
// with the old file, in every namespace, before the name moves to the new one (the kernel's
// rename detaches the mounts on the old file first, and waits for RCU readers in between: a
// lookup then finds the old file uncovered).
//
// Where the store's folder is frozen inside (private_view.hpp, FrozenFolders: the folders the
// command cannot write, the home's among them), no name inside leads to the store itself: the
// replacement shows nothing inside, and is only noted (`run` says so when the command ends; the
// command goes on). Where it is not (a store in a folder the command may write: the working
// folder, or a home that is the working folder), the run fails closed: the command is killed at
// once and `run` says why; a read in the instant between the rename and the kill, of the new file
// or of the old one, is not ruled out (nothing a mount namespace holds can refuse an outside
// rename). A hidden folder replaced whole is watched the same way, and a frozen folder moved or
// removed outside stops the command unless its own folder is frozen too (the name inside would
// show the new one). Until the view is built and `run` is told what is frozen (settle()), every
// replacement stops the command. The watch starts once the confined child exists, whose covers
// may be made before it: the child checks them again before the command starts (private_view.hpp,
// first_uncovered).
//
// With inotify; when no inotify instance or watch can be had (the user's are all taken by other
// programs), by comparing each store's and folder's inode every kPollInterval instead (a
// replacement is then seen up to that late).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
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

  // The view is built (private_view.hpp, FrozenFolders): `settled` are the stores every name of
  // which inside lies in a frozen folder, `frozen` the frozen folders. From now on one of those
  // stores replaced outside is only noted (nothing of it shows inside), as is a frozen folder
  // moved or removed outside whose own folder is frozen too (the name inside is the copy's).
  // Until then, every replacement stops the command.
  void settle(const std::vector<std::string>& settled, const std::vector<std::string>& frozen);

  // The store that was replaced (the command was killed for it); empty when none was.
  std::string replaced() const;
  // The stores (or their frozen folders) replaced outside without stopping the command, once
  // each, in order.
  std::vector<std::string> noted() const;

 private:
  static constexpr std::chrono::milliseconds kPollInterval{100};
  static constexpr std::size_t kMaxNoted = 64;  // noted() holds at most this many

  void watch(pid_t child);
  // The fallback: each store and folder, by inode, until stop.
  void poll(pid_t child);
  // `hit` (a store or a watched folder) was replaced, moved or removed outside: noted when it is
  // settled, else the command is stopped for it.
  void replaced_outside(pid_t child, const std::string& hit);
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
    // The birth time where the file system keeps one: a file renamed over the store may reuse the
    // old one's inode number (ext4 hands a freed number out again at once), never its birth.
    std::int64_t born_seconds = 0;
    std::uint32_t born_nanoseconds = 0;
  };
  static Identity identity_of(const std::string& path);
  std::vector<Identity> polled_;
  std::condition_variable stop_polling_;
  bool stopping_ = false;  // guarded by mutex_
  mutable std::mutex mutex_;
  std::string replaced_;
  std::vector<std::string> settled_;  // guarded by mutex_: stores and folders only noted
  std::vector<std::string> noted_;    // guarded by mutex_
  std::thread thread_;
};

}  // namespace sandgate::sandbox
