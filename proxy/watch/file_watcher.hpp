// Notices every way a file can change: written in place, truncated and rewritten, replaced by an
// editor's write-to-temp-then-rename, `sed -i`, `cp`, deleted and re-created (also long after),
// created after start, its folder deleted and restored, or replaced by a symlink.
//
// Linux: inotify on the folder holding each file, so renames and re-creations are seen, not
// only writes to the first inode (or the timer alone when the user has no inotify instance left).
// macOS and the BSDs: kqueue on each file and its folder, re-armed on the new inode after a rename
// or delete (kqueue_backend.cpp). Everywhere (and as the safety net of both): a cheap stat()
// fingerprint compared on a timer, which also covers file systems that send no events and a path
// whose folder is re-pointed (a symlinked folder). What each event means, the debounce and the
// comparison are change_logic.hpp, shared by all. Symlinks are not followed to watch their targets'
// folders: the policy reloader passes paths it resolved at start-up and reads nothing else. Not
// tied to any event loop: a caller's thread blocks in wait_for_change().
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace sandgate::watch {

class FileWatcher {
 public:
  // Paths that need not exist yet. Throws std::runtime_error if the kernel refuses a watch
  // descriptor (the message says why).
  explicit FileWatcher(std::vector<std::string> paths);
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // Blocks until one or more watched files changed and then stayed quiet for `quiet` (a save
  // is several events; a writer that still has the file open is waited for, up to a cap).
  // Returns the changed paths, or nothing once stop() was called or `wake()` woke it.
  std::vector<std::string> wait_for_change(std::chrono::milliseconds quiet);

  // Wakes a blocked wait_for_change(), which returns an empty list. Thread-safe.
  void wake();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandgate::watch
