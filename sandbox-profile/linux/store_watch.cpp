// The watch over hidden credential stores during a run. See store_watch.hpp.
#include "sandbox-profile/linux/store_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace sandgate::sandbox {

StoreWatch::StoreWatch(const std::vector<std::string>& stores, pid_t child) {
  if (stores.empty()) {
    return;
  }
  inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  stop_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  bool watched = inotify_ >= 0 && stop_ >= 0;
  for (const auto& store : stores) {
    const auto slash = store.rfind('/');
    if (slash == std::string::npos || slash + 1 >= store.size()) {
      continue;
    }
    const std::string folder = slash == 0 ? "/" : store.substr(0, slash);
    const std::string name = store.substr(slash + 1);
    auto known = std::find_if(folders_.begin(), folders_.end(),
                              [&](const Folder& f) { return f.path == folder; });
    if (known == folders_.end()) {
      // A new entry of the store's name (a rename over it, or one made after it was deleted or
      // moved away, which alone shows nothing), or the folder itself moved or deleted (a new one
      // may take its place).
      const int wd = !watched ? -1
                              : ::inotify_add_watch(inotify_, folder.c_str(),
                                                    IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF |
                                                        IN_MOVE_SELF | IN_ONLYDIR);
      // A folder that cannot be watched (no watch left for the user) is polled, with the rest.
      watched = watched && (wd >= 0 || errno == ENOENT || errno == ENOTDIR);
      folders_.push_back({wd, folder, {}});
      polled_.push_back(identity_of(folder));
      known = folders_.end() - 1;
    }
    known->names.push_back(name);
    polled_.push_back(identity_of(store));
  }
  if (folders_.empty()) {
    return;
  }
  if (watched) {
    thread_ = std::thread([this, child] { watch(child); });
  } else {
    thread_ = std::thread([this, child] { poll(child); });
  }
}

StoreWatch::~StoreWatch() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    stop_polling_.notify_all();
    const std::uint64_t one = 1;
    if (stop_ >= 0) {
      (void)!::write(stop_, &one, sizeof one);
    }
    thread_.join();
  }
  for (int fd : {inotify_, stop_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

StoreWatch::Identity StoreWatch::identity_of(const std::string& path) {
  Identity identity{path};
  struct statx info {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &info) == 0) {
    identity.exists = true;
    identity.device = ::makedev(info.stx_dev_major, info.stx_dev_minor);
    identity.inode = info.stx_ino;
    if ((info.stx_mask & STATX_BTIME) != 0) {
      identity.born_seconds = info.stx_btime.tv_sec;
      identity.born_nanoseconds = info.stx_btime.tv_nsec;
    }
  }
  return identity;
}

void StoreWatch::settle(const std::vector<std::string>& settled,
                        const std::vector<std::string>& frozen) {
  std::lock_guard lock(mutex_);
  settled_ = settled;
  for (const auto& folder : frozen) {
    const auto slash = folder.rfind('/');
    const std::string parent = slash == 0 ? std::string("/") : folder.substr(0, slash);
    if (slash != std::string::npos &&
        std::find(frozen.begin(), frozen.end(), parent) != frozen.end()) {
      settled_.push_back(folder);
    }
  }
}

std::vector<std::string> StoreWatch::noted() const {
  std::lock_guard lock(mutex_);
  return noted_;
}

void StoreWatch::replaced_outside(pid_t child, const std::string& hit) {
  {
    std::lock_guard lock(mutex_);
    if (std::find(settled_.begin(), settled_.end(), hit) != settled_.end()) {
      if (std::find(noted_.begin(), noted_.end(), hit) == noted_.end() &&
          noted_.size() < kMaxNoted) {
        noted_.push_back(hit);
      }
      return;
    }
  }
  stopped_for(child, hit);
}

void StoreWatch::stopped_for(pid_t child, const std::string& hit) {
  // Recorded before the kill: `run` asks replaced() as soon as it has reaped the child, which may
  // be before this thread runs again after the kill (the run would then end with the command's
  // 137 and not say why).
  {
    std::lock_guard lock(mutex_);
    if (replaced_.empty()) {
      replaced_ = hit;
    }
  }
  ::kill(child, SIGKILL);
}

void StoreWatch::poll(pid_t child) {
  std::unique_lock lock(mutex_);
  while (!stop_polling_.wait_for(lock, kPollInterval, [this] { return stopping_; })) {
    lock.unlock();
    for (auto& before : polled_) {
      const Identity now = identity_of(before.path);
      if (now.exists != before.exists || now.device != before.device || now.inode != before.inode ||
          now.born_seconds != before.born_seconds ||
          now.born_nanoseconds != before.born_nanoseconds) {
        before = now;  // one replacement, one hit
        replaced_outside(child, now.path);
      }
    }
    lock.lock();
  }
}

std::string StoreWatch::replaced() const {
  std::lock_guard lock(mutex_);
  return replaced_;
}

void StoreWatch::watch(pid_t child) {
  alignas(inotify_event) char buffer[8192];
  for (;;) {
    pollfd fds[2] = {{inotify_, POLLIN, 0}, {stop_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      continue;  // EINTR
    }
    if (fds[1].revents != 0) {
      return;
    }
    const ssize_t got = ::read(inotify_, buffer, sizeof buffer);
    for (ssize_t at = 0; got > 0 && at < got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      const auto folder = std::find_if(folders_.begin(), folders_.end(),
                                       [&](const Folder& f) { return f.wd == event->wd; });
      if (folder == folders_.end()) {
        continue;
      }
      std::string hit;
      if ((event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) != 0) {
        hit = folder->path;
      } else if (event->len > 0) {
        const std::string name(event->name);
        if (std::find(folder->names.begin(), folder->names.end(), name) != folder->names.end()) {
          hit = folder->path + "/" + name;
        }
      }
      if (!hit.empty()) {
        replaced_outside(child, hit);
      }
    }
  }
}

}  // namespace sandgate::sandbox
