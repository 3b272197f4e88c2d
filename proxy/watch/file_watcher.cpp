// File watching. See file_watcher.hpp for what is covered and why the folder is watched.
#include "proxy/watch/file_watcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>

#ifdef __linux__
#include <sys/inotify.h>
#endif

namespace sandgate::watch {
namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

// How often fingerprints are compared even without events, and how long a writer that has not
// closed the file yet is waited for.
constexpr auto kPollInterval = std::chrono::milliseconds(500);
constexpr auto kOpenWriterCap = std::chrono::seconds(2);

// What a file looks like from outside; any difference means it changed.
struct Fingerprint {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::string link_target;  // where a symlink points, if the path is one
  bool operator==(const Fingerprint&) const = default;
};

#ifdef __APPLE__
const timespec& modified(const struct stat& info) { return info.st_mtimespec; }
const timespec& changed(const struct stat& info) { return info.st_ctimespec; }
#else
const timespec& modified(const struct stat& info) { return info.st_mtim; }
const timespec& changed(const struct stat& info) { return info.st_ctim; }
#endif

Fingerprint fingerprint(const std::string& path) {
  Fingerprint print;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {  // follows symlinks: the content's identity
    print.exists = true;
    print.device = info.st_dev;
    print.inode = info.st_ino;
    print.size = info.st_size;
    print.mtime_ns = static_cast<std::int64_t>(modified(info).tv_sec) * 1'000'000'000 +
                     modified(info).tv_nsec;
    print.ctime_ns = static_cast<std::int64_t>(changed(info).tv_sec) * 1'000'000'000 +
                     changed(info).tv_nsec;
  }
  std::error_code ec;
  if (fs::is_symlink(path, ec)) {
    print.link_target = fs::read_symlink(path, ec).string();
  }
  return print;
}

std::string parent_of(const std::string& path) {
  auto parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace

struct FileWatcher::Impl {
  std::vector<std::string> paths;
  std::map<std::string, Fingerprint> prints;
  int wake_pipe[2] = {-1, -1};
#ifdef __linux__
  int inotify = -1;
  std::map<std::string, int> folder_watches;  // folder -> watch descriptor
  // Watch descriptor -> folders: two folder paths that are one folder (a symlinked folder and
  // its target) share one descriptor, and events in it concern the files of both.
  std::map<int, std::vector<std::string>> folders_of_watch;
#endif

  // The (folder, file name) pairs whose events matter: each file in its own folder. Events about
  // other files in those folders (a log file written beside the blocklist, say) are ignored. A
  // symlink's target is deliberately not followed: callers pass resolved paths, and a symlink
  // that appears later must not make the watcher (or its caller) look elsewhere.
  std::vector<std::pair<std::string, std::string>> watched_names() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& path : paths) {
      out.emplace_back(parent_of(path), fs::path(path).filename().string());
    }
    return out;
  }

  std::vector<std::string> folders() const {
    std::vector<std::string> out;
    for (auto& [folder, name] : watched_names()) {
      out.push_back(folder);
    }
    return out;
  }

  bool concerns_us(const std::string& folder, std::string_view name) const {
    for (const auto& [watched_folder, watched_name] : watched_names()) {
      if (watched_folder == folder && watched_name == name) {
        return true;
      }
    }
    return false;
  }

  // (Re-)adds watches for folders that exist now but have none (created or restored since).
  // Returns true if a watch was added, which means the files may have come back.
  bool refresh_watches() {
    bool added = false;
#ifdef __linux__
    for (const auto& folder : folders()) {
      if (folder_watches.count(folder) != 0) {
        continue;
      }
      const int wd = ::inotify_add_watch(
          inotify, folder.c_str(),
          IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_MODIFY |
              IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
      if (wd >= 0) {
        folder_watches[folder] = wd;
        folders_of_watch[wd].push_back(folder);
        added = true;
      }
    }
#endif
    return added;
  }

  std::vector<std::string> changed_paths() {
    std::vector<std::string> changed;
    for (const auto& path : paths) {
      auto now = fingerprint(path);
      if (!(now == prints[path])) {
        prints[path] = now;
        changed.push_back(path);
      }
    }
    return changed;
  }

  // Reads pending inotify events. Returns {any event about our files, a writer still open}.
  std::pair<bool, bool> drain_events(bool open_writer) {
    bool relevant = false;
#ifdef __linux__
    alignas(inotify_event) char buffer[64 * 1024];
    for (;;) {
      const ssize_t n = ::read(inotify, buffer, sizeof buffer);
      if (n <= 0) {
        break;
      }
      for (char* at = buffer; at < buffer + n;) {
        auto* event = reinterpret_cast<inotify_event*>(at);
        at += sizeof(inotify_event) + event->len;
        if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
          // The folder itself went away: forget its watch; refresh_watches() re-adds it when
          // the folder is back.
          auto folders = folders_of_watch.find(event->wd);
          if (folders != folders_of_watch.end()) {
            if (event->mask & IN_IGNORED) {
              for (const auto& folder : folders->second) {
                folder_watches.erase(folder);
              }
              folders_of_watch.erase(folders);
            }
            relevant = true;
          }
          continue;
        }
        if (event->mask & IN_Q_OVERFLOW) {
          relevant = true;  // events were lost: the fingerprints will tell what changed
          continue;
        }
        auto folders = folders_of_watch.find(event->wd);
        if (folders == folders_of_watch.end() || event->len == 0) {
          continue;
        }
        const std::string_view name(event->name);
        if (std::none_of(folders->second.begin(), folders->second.end(),
                         [&](const std::string& folder) { return concerns_us(folder, name); })) {
          continue;
        }
        // Track whether a writer has the file open still.
        relevant = true;
        if (event->mask & IN_MODIFY) {
          open_writer = true;
        }
        if (event->mask & (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE)) {
          open_writer = false;
        }
      }
    }
#endif
    return {relevant, open_writer};
  }
};

FileWatcher::FileWatcher(std::vector<std::string> paths) : impl_(std::make_unique<Impl>()) {
  impl_->paths = std::move(paths);
  // pipe2() is Linux-only; pipe() and fcntl() work everywhere.
  if (::pipe(impl_->wake_pipe) != 0) {
    throw std::runtime_error(std::string("file watcher: pipe: ") + std::strerror(errno));
  }
  for (int fd : impl_->wake_pipe) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
#ifdef __linux__
  impl_->inotify = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (impl_->inotify < 0) {
    throw std::runtime_error(std::string("file watcher: inotify: ") + std::strerror(errno));
  }
  impl_->refresh_watches();
#endif
  for (const auto& path : impl_->paths) {
    impl_->prints[path] = fingerprint(path);
  }
}

FileWatcher::~FileWatcher() {
#ifdef __linux__
  ::close(impl_->inotify);
#endif
  ::close(impl_->wake_pipe[0]);
  ::close(impl_->wake_pipe[1]);
}

void FileWatcher::wake() {
  const char byte = 1;
  [[maybe_unused]] auto ignored = ::write(impl_->wake_pipe[1], &byte, 1);
}

std::vector<std::string> FileWatcher::wait_for_change(std::chrono::milliseconds quiet) {
  Impl& impl = *impl_;
  bool pending = false;  // something happened; waiting for it to settle
  bool open_writer = false;
  auto last_event = clock::now();
  for (;;) {
    pollfd fds[2] = {{impl.wake_pipe[0], POLLIN, 0}, {-1, POLLIN, 0}};
#ifdef __linux__
    fds[1].fd = impl.inotify;
#endif
    auto timeout = kPollInterval;
    if (pending) {
      const auto settle = open_writer ? kOpenWriterCap : quiet;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          last_event + settle - clock::now());
      timeout = std::max(std::chrono::milliseconds(0), std::min(timeout, left));
    }
    const int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
    if (ready < 0 && errno != EINTR) {
      return {};
    }
    if (fds[0].revents & POLLIN) {
      char drain[64];
      while (::read(impl.wake_pipe[0], drain, sizeof drain) > 0) {
      }
      return {};
    }
    auto [relevant, writer] = impl.drain_events(open_writer);
    open_writer = writer;
    if (impl.refresh_watches()) {
      relevant = true;
    }
    const auto now = clock::now();
    if (relevant) {
      pending = true;
      last_event = now;
      continue;
    }
    const auto settle = open_writer ? kOpenWriterCap : quiet;
    if (pending && now - last_event < settle) {
      continue;
    }
    // Quiet now (or a plain timer tick): whatever differs from the last look has changed.
    pending = false;
    open_writer = false;
    auto changed = impl.changed_paths();
    if (!changed.empty()) {
      return changed;
    }
  }
}

}  // namespace sandgate::watch
