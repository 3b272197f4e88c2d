// The kernel side of FileWatcher (internal to proxy/watch): one backend per platform turns the
// kernel's notifications into ChangeLogic events and blocks until one arrives, the wake
// descriptor becomes readable, or a timeout passes. Backends: inotify (Linux), kqueue (macOS and
// the BSDs), and polling (elsewhere: it only waits, and the fingerprint comparison on each tick
// finds the changes).
//
// A backend is used by one thread at a time (the one in FileWatcher::wait_for_change).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/watch/change_logic.hpp"

namespace sandgate::watch {

class WatchBackend {
 public:
  virtual ~WatchBackend() = default;

  // Blocks up to `timeout` and appends what happened to the watched files to `events`. Returns
  // true when the wake descriptor is readable (the caller drains it), false otherwise (events,
  // a timeout, or an interrupted wait).
  virtual bool wait(std::chrono::milliseconds timeout, std::vector<Event>& events) = 0;

  // Re-arms watches on what exists now but is not watched: a folder restored, a file created,
  // re-created or replaced by a rename. Returns true if one was added, which means the files
  // may have come back.
  virtual bool rearm() = 0;
};

// The folder of each path and the file's name in it: `a/b/list.txt` -> {`a/b`, `list.txt`}; a
// bare name is in ".". Symlinks are not followed to their targets' folders (see file_watcher.hpp).
std::pair<std::string, std::string> folder_and_name(const std::string& path);

// The fingerprint of a path as it is now (stat, following symlinks, plus the link's target).
Fingerprint take_fingerprint(const std::string& path);

// The backend for this platform (on Linux, polling when no inotify instance can be had). Each
// throws std::runtime_error naming the call the kernel refused. `wake_fd` stays owned by the
// caller.
std::unique_ptr<WatchBackend> make_platform_backend(const std::vector<std::string>& paths,
                                                    int wake_fd);
std::unique_ptr<WatchBackend> make_polling_backend(int wake_fd);
#if defined(__linux__)
std::unique_ptr<WatchBackend> make_inotify_backend(const std::vector<std::string>& paths,
                                                   int wake_fd);
#endif
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__) || \
    defined(__DragonFly__)
#define SANDGATE_WATCH_KQUEUE 1
std::unique_ptr<WatchBackend> make_kqueue_backend(const std::vector<std::string>& paths,
                                                  int wake_fd);
#endif

}  // namespace sandgate::watch
