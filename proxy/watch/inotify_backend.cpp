// The Linux backend: inotify on the folder holding each file, so that renames and re-creations
// are seen, not only writes to the first inode. See watch_backend.hpp.
#include "proxy/watch/watch_backend.hpp"

#if defined(__linux__)

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace sandgate::watch {
namespace {

// The events asked for on each folder; IN_ONLYDIR refuses a path that is no longer a folder.
constexpr std::uint32_t kFolderMask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                                      IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF |
                                      IN_MOVE_SELF | IN_ONLYDIR;

// One inotify event about a watched name, as ChangeLogic events, in the order they happened
// (a mask may hold IN_MODIFY and IN_CLOSE_WRITE together when the kernel merged them).
void translate(std::uint32_t mask, std::vector<Event>& out) {
  if (mask & IN_CREATE) {
    out.push_back(Event::created);
  }
  if (mask & IN_MOVED_TO) {
    out.push_back(Event::moved_in);
  }
  if (mask & IN_MODIFY) {
    out.push_back(Event::modified);
  }
  if (mask & IN_ATTRIB) {
    out.push_back(Event::attributes);
  }
  if (mask & IN_CLOSE_WRITE) {
    out.push_back(Event::write_closed);
  }
  if (mask & IN_MOVED_FROM) {
    out.push_back(Event::moved_away);
  }
  if (mask & IN_DELETE) {
    out.push_back(Event::deleted);
  }
}

class InotifyBackend final : public WatchBackend {
 public:
  InotifyBackend(const std::vector<std::string>& paths, int wake_fd) : wake_fd_(wake_fd) {
    for (const auto& path : paths) {
      names_.push_back(folder_and_name(path));
    }
    inotify_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_ < 0) {
      throw std::runtime_error(std::string("file watcher: inotify: ") + std::strerror(errno));
    }
    rearm();
  }
  ~InotifyBackend() override { ::close(inotify_); }

  bool wait(std::chrono::milliseconds timeout, std::vector<Event>& events) override {
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
    if (ready < 0) {
      return false;  // EINTR and the like: the caller looks again
    }
    if (fds[0].revents & POLLIN) {
      return true;
    }
    drain(events);
    return false;
  }

  // (Re-)adds watches for folders that exist now but have none (created or restored since).
  bool rearm() override {
    bool added = false;
    for (const auto& [folder, name] : names_) {
      if (folder_watches_.count(folder) != 0) {
        continue;
      }
      const int wd = ::inotify_add_watch(inotify_, folder.c_str(), kFolderMask);
      if (wd >= 0) {
        folder_watches_[folder] = wd;
        auto& folders = folders_of_watch_[wd];
        if (std::find(folders.begin(), folders.end(), folder) == folders.end()) {
          folders.push_back(folder);
        }
        added = true;
      }
    }
    return added;
  }

 private:
  bool concerns_us(const std::string& folder, std::string_view name) const {
    return std::any_of(names_.begin(), names_.end(), [&](const auto& watched) {
      return watched.first == folder && watched.second == name;
    });
  }

  // Reads every pending event; the descriptor is non-blocking, so this ends when it is empty.
  void drain(std::vector<Event>& events) {
    alignas(inotify_event) char buffer[64 * 1024];
    for (;;) {
      const ssize_t n = ::read(inotify_, buffer, sizeof buffer);
      if (n <= 0) {
        break;
      }
      for (char* at = buffer; at < buffer + n;) {
        auto* event = reinterpret_cast<inotify_event*>(at);
        at += sizeof(inotify_event) + event->len;
        if (event->mask & IN_Q_OVERFLOW) {
          events.push_back(Event::folder_changed);  // events were lost: fingerprints will tell
          continue;
        }
        auto folders = folders_of_watch_.find(event->wd);
        if (folders == folders_of_watch_.end()) {
          continue;
        }
        if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
          // The folder itself went away: forget its watch once the kernel drops it; rearm()
          // adds it again when the folder is back.
          if (event->mask & IN_IGNORED) {
            for (const auto& folder : folders->second) {
              folder_watches_.erase(folder);
            }
            folders_of_watch_.erase(folders);
          }
          events.push_back(Event::folder_changed);
          continue;
        }
        if (event->len == 0) {
          continue;
        }
        // Two folder paths that are one folder (a symlinked folder and its target) share one
        // watch descriptor, and events in it concern the files of both.
        const std::string_view name(event->name);
        if (std::any_of(folders->second.begin(), folders->second.end(),
                        [&](const std::string& folder) { return concerns_us(folder, name); })) {
          translate(event->mask, events);
        }
      }
    }
  }

  int wake_fd_;
  int inotify_ = -1;
  std::vector<std::pair<std::string, std::string>> names_;  // (folder, file name) per path
  std::map<std::string, int> folder_watches_;               // folder -> watch descriptor
  std::map<int, std::vector<std::string>> folders_of_watch_;
};

}  // namespace

std::unique_ptr<WatchBackend> make_inotify_backend(const std::vector<std::string>& paths,
                                                   int wake_fd) {
  return std::make_unique<InotifyBackend>(paths, wake_fd);
}

}  // namespace sandgate::watch

#endif  // __linux__
