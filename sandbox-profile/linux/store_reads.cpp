// The command's attempts on the hidden credential stores. See store_reads.hpp.
#include "sandbox-profile/linux/store_reads.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace sandgate::sandbox {

StoreReadWatch::StoreReadWatch(int watch, std::vector<StoreReads::Watched> watched,
                               std::vector<std::string> shown)
    : watch_(watch), watched_(std::move(watched)), shown_(std::move(shown)) {
  if (watch_ < 0) {
    return;
  }
  stop_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_ >= 0) {
    thread_ = std::thread([this] { count_events(); });
  }
}

StoreReadWatch::~StoreReadWatch() {
  finish();
  for (int fd : {watch_, stop_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void StoreReadWatch::count_events() {
  for (;;) {
    pollfd fds[2] = {{watch_, POLLIN, 0}, {stop_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      continue;  // EINTR
    }
    if (fds[1].revents != 0) {
      return;
    }
    read_queued();
  }
}

void StoreReadWatch::read_queued() {
  alignas(inotify_event) char buffer[16384];
  for (;;) {
    const ssize_t got = ::read(watch_, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      return;  // EAGAIN: all read
    }
    std::lock_guard lock(mutex_);
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if ((event->mask & IN_Q_OVERFLOW) != 0) {
        complete_ = false;
        continue;
      }
      if ((event->mask & IN_OPEN) == 0) {
        continue;  // a close: watched only so that two opens in a row are never merged
      }
      const auto store = std::find_if(watched_.begin(), watched_.end(),
                                      [&](const auto& w) { return w.wd == event->wd; });
      if (store == watched_.end()) {
        continue;
      }
      if (store->folder && event->len > 0) {
        // A name inside a hidden folder is only ever a shown path bound back (the folder is
        // otherwise empty): ~/.ssh/known_hosts read by ssh is no attempt.
        const std::string path = store->path + "/" + std::string(event->name);
        if (std::find(shown_.begin(), shown_.end(), path) == shown_.end()) {
          ++counts_[{path, false}];
        }
      } else {
        ++counts_[{store->path, store->folder}];
      }
    }
  }
}

StoreAttempts StoreReadWatch::finish() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(stop_, &one, sizeof one);
    thread_.join();
  }
  StoreAttempts out;
  if (watch_ < 0) {
    return out;
  }
  read_queued();  // what came after the thread's last read
  std::lock_guard lock(mutex_);
  for (const auto& [key, count] : counts_) {
    out.attempts.push_back({key.first, key.second, count});
  }
  out.complete = complete_;
  std::stable_sort(out.attempts.begin(), out.attempts.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  return out;
}

}  // namespace sandgate::sandbox
