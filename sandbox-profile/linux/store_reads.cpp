// The command's attempts on the hidden credential stores. See store_reads.hpp.
#include "sandbox-profile/linux/store_reads.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace sandgate::sandbox {

StoreAttempts read_store_attempts(int watch, const std::vector<StoreReads::Watched>& watched,
                                  const std::vector<std::string>& shown) {
  StoreAttempts out;
  const auto count = [&out](const std::string& path, bool listed) {
    auto known = std::find_if(out.attempts.begin(), out.attempts.end(),
                              [&](const auto& a) { return a.path == path && a.listed == listed; });
    if (known == out.attempts.end()) {
      out.attempts.push_back({path, listed, 0});
      known = out.attempts.end() - 1;
    }
    ++known->count;
  };
  alignas(inotify_event) char buffer[8192];
  for (;;) {
    const ssize_t got = ::read(watch, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;  // EAGAIN: all read
    }
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if ((event->mask & IN_Q_OVERFLOW) != 0) {
        out.complete = false;
        continue;
      }
      if ((event->mask & IN_OPEN) == 0) {
        continue;
      }
      const auto store = std::find_if(watched.begin(), watched.end(),
                                      [&](const auto& w) { return w.wd == event->wd; });
      if (store == watched.end()) {
        continue;
      }
      if (store->folder && event->len > 0) {
        // A name inside a hidden folder is only ever a shown path bound back (the folder is
        // otherwise empty): ~/.ssh/known_hosts read by ssh is no attempt.
        const std::string path = store->path + "/" + std::string(event->name);
        if (std::find(shown.begin(), shown.end(), path) == shown.end()) {
          count(path, false);
        }
      } else {
        count(store->path, store->folder);
      }
    }
  }
  std::stable_sort(out.attempts.begin(), out.attempts.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  return out;
}

}  // namespace sandgate::sandbox
