// The watch over hidden credential stores during a run. See store_watch.hpp.
#include "sandbox-profile/linux/store_watch.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace sandgate::sandbox {

StoreWatch::StoreWatch(const std::vector<std::string>& stores, pid_t child) {
  if (stores.empty()) {
    return;
  }
  inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  stop_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (inotify_ < 0 || stop_ < 0) {
    return;
  }
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
      const int wd =
          ::inotify_add_watch(inotify_, folder.c_str(),
                              IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
      if (wd < 0) {
        continue;
      }
      folders_.push_back({wd, folder, {}});
      known = folders_.end() - 1;
    }
    known->names.push_back(name);
  }
  if (!folders_.empty()) {
    thread_ = std::thread([this, child] { watch(child); });
  }
}

StoreWatch::~StoreWatch() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(stop_, &one, sizeof one);
    thread_.join();
  }
  for (int fd : {inotify_, stop_}) {
    if (fd >= 0) {
      ::close(fd);
    }
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
        ::kill(child, SIGKILL);
        std::lock_guard lock(mutex_);
        if (replaced_.empty()) {
          replaced_ = hit;
        }
      }
    }
  }
}

}  // namespace sandgate::sandbox
