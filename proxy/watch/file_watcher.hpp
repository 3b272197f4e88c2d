// Notices every way a file can change: written in place, truncated and rewritten, replaced by an
// editor's write-to-temp-then-rename, `sed -i`, `cp`, deleted and re-created (also long after),
// created after start, its folder deleted and restored, or a symlink whose target changes.
//
// Linux: inotify on the folder holding each file (and on the folder of a symlink's target), so
// renames and re-creations are seen, not only writes to the first inode. Everywhere (and as a
// safety net on Linux): a cheap stat() fingerprint compared on a timer, which also covers
// file systems that send no events. Not tied to any event loop: a caller's thread blocks in
// wait_for_change().
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
