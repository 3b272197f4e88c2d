// The macOS and BSD backend: kqueue EVFILT_VNODE on each file and on its folder. A vnode filter
// watches an open descriptor, that is one inode, not a name, so after the file is renamed away or
// deleted (an editor's save, `sed -i`, `cp` over a new inode) its watch is re-armed on whatever
// is at the name now, and the folder's watch is what reports a file created at a name that had
// none. See watch_backend.hpp. Written against kqueue(2); not yet run on macOS.
#include "proxy/watch/watch_backend.hpp"

#if defined(SANDGATE_WATCH_KQUEUE)

#include <fcntl.h>
#include <sys/event.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace sandgate::watch {
namespace {

// O_EVTONLY (macOS) opens for event notification only, so the watch does not keep a volume
// from being unmounted; elsewhere a read-only descriptor does the same job.
#if defined(O_EVTONLY)
constexpr int kOpenFlags = O_EVTONLY | O_CLOEXEC;
#else
constexpr int kOpenFlags = O_RDONLY | O_CLOEXEC;
#endif

constexpr unsigned kVnodeNotes =
    NOTE_WRITE | NOTE_EXTEND | NOTE_ATTRIB | NOTE_RENAME | NOTE_DELETE | NOTE_LINK;

// One watched vnode: the descriptor kept open for its filter, and the identity it was opened as.
struct Watch {
  int fd = -1;
  dev_t device = 0;
  ino_t inode = 0;
};

class KqueueBackend final : public WatchBackend {
 public:
  KqueueBackend(const std::vector<std::string>& paths, int wake_fd) {
    for (const auto& path : paths) {
      folders_.try_emplace(folder_and_name(path).first);
      files_.try_emplace(path);
    }
    kq_ = ::kqueue();
    if (kq_ < 0) {
      throw std::runtime_error(std::string("file watcher: kqueue: ") + std::strerror(errno));
    }
    ::fcntl(kq_, F_SETFD, FD_CLOEXEC);
    // The wake pipe is one more event source on the same queue, so one kevent() waits for all.
    struct kevent change;
    EV_SET(&change, static_cast<uintptr_t>(wake_fd), EVFILT_READ, EV_ADD, 0, 0, 0);
    if (::kevent(kq_, &change, 1, nullptr, 0, nullptr) < 0) {
      const int error = errno;
      ::close(kq_);
      throw std::runtime_error(std::string("file watcher: kevent: ") + std::strerror(error));
    }
    wake_fd_ = wake_fd;
    rearm();
  }

  ~KqueueBackend() override {
    // Closing a descriptor removes its kevents; closing the queue removes the rest.
    for (auto& [folder, watch] : folders_) {
      close_watch(watch);
    }
    for (auto& [path, watch] : files_) {
      close_watch(watch);
    }
    ::close(kq_);
  }

  bool wait(std::chrono::milliseconds timeout, std::vector<Event>& events) override {
    const auto ms = std::max<std::int64_t>(timeout.count(), 0);
    timespec limit{};
    limit.tv_sec = static_cast<time_t>(ms / 1000);
    limit.tv_nsec = static_cast<long>((ms % 1000) * 1'000'000);
    struct kevent happened[16];
    const int n = ::kevent(kq_, nullptr, 0, happened, 16, &limit);
    if (n < 0) {
      return false;  // EINTR and the like: the caller looks again
    }
    bool woken = false;
    for (int i = 0; i < n; ++i) {
      const struct kevent& e = happened[i];
      if (e.filter == EVFILT_READ && static_cast<int>(e.ident) == wake_fd_) {
        woken = true;
        continue;
      }
      if (e.filter != EVFILT_VNODE || (e.flags & EV_ERROR) != 0) {
        continue;
      }
      translate(static_cast<int>(e.ident), e.fflags, events);
    }
    return woken;
  }

  // Opens and registers what exists now but is not watched, or is watched as another inode than
  // the one at its name now (replaced by a rename, or re-created after a delete).
  bool rearm() override {
    bool added = false;
    for (auto& [folder, watch] : folders_) {
      added |= arm(folder, watch);
    }
    for (auto& [path, watch] : files_) {
      added |= arm(path, watch);
    }
    return added;
  }

 private:
  // A file's notes, as ChangeLogic events. The file's own descriptor sees writes to this inode
  // and its end (renamed away, unlinked); it never sees a new file arrive at the name.
  void translate_file(Watch& watch, unsigned notes, std::vector<Event>& out) {
    if (notes & (NOTE_WRITE | NOTE_EXTEND)) {
      out.push_back(Event::written);  // kqueue reports no close of a writer
    }
    if (notes & (NOTE_ATTRIB | NOTE_LINK)) {
      out.push_back(Event::attributes);
    }
    if (notes & NOTE_RENAME) {
      out.push_back(Event::moved_away);
    }
    if (notes & NOTE_DELETE) {
      out.push_back(Event::deleted);
    }
    if (notes & (NOTE_RENAME | NOTE_DELETE)) {
      // This inode is no longer (or soon no longer) what the name holds: drop its watch, and
      // rearm() opens whatever the name holds next.
      close_watch(watch);
    }
  }

  // A folder's notes. NOTE_WRITE (and, on FreeBSD, NOTE_EXTEND for renames) means an entry was
  // added or removed, without saying which: maybe a watched name came or went, maybe a sibling
  // did. Reported as folder_changed; the fingerprints then tell whether a watched file changed.
  void translate_folder(Watch& watch, unsigned notes, std::vector<Event>& out) {
    if (notes & kVnodeNotes) {
      out.push_back(Event::folder_changed);
    }
    if (notes & (NOTE_RENAME | NOTE_DELETE)) {
      close_watch(watch);  // the folder itself moved or went: rearm() watches the name again
    }
  }

  void translate(int fd, unsigned notes, std::vector<Event>& out) {
    for (auto& [path, watch] : files_) {
      if (watch.fd == fd) {
        translate_file(watch, notes, out);
        return;
      }
    }
    for (auto& [folder, watch] : folders_) {
      if (watch.fd == fd) {
        translate_folder(watch, notes, out);
        return;
      }
    }
  }

  // Watches the vnode at `name` unless it is already watched. True if a watch was added.
  bool arm(const std::string& name, Watch& watch) {
    struct stat info {};
    if (::stat(name.c_str(), &info) != 0) {
      close_watch(watch);  // nothing there now; the folder's watch reports its return
      return false;
    }
    if (watch.fd >= 0 && watch.device == info.st_dev && watch.inode == info.st_ino) {
      return false;
    }
    close_watch(watch);
    const int fd = ::open(name.c_str(), kOpenFlags);
    if (fd < 0) {
      return false;  // gone again, or unreadable: the stat fingerprint still covers it
    }
    struct stat opened {};
    struct kevent change;
    // EV_CLEAR: report each change once, not again on every kevent() until the state resets.
    EV_SET(&change, static_cast<uintptr_t>(fd), EVFILT_VNODE, EV_ADD | EV_CLEAR, kVnodeNotes, 0, 0);
    if (::fstat(fd, &opened) != 0 || ::kevent(kq_, &change, 1, nullptr, 0, nullptr) < 0) {
      ::close(fd);
      return false;
    }
    watch.fd = fd;
    watch.device = opened.st_dev;
    watch.inode = opened.st_ino;
    return true;
  }

  static void close_watch(Watch& watch) {
    if (watch.fd >= 0) {
      ::close(watch.fd);
    }
    watch = Watch{};
  }

  int kq_ = -1;
  int wake_fd_ = -1;
  std::map<std::string, Watch> folders_;  // one watch per folder, shared by its files
  std::map<std::string, Watch> files_;    // path -> the inode watched for it
};

}  // namespace

std::unique_ptr<WatchBackend> make_kqueue_backend(const std::vector<std::string>& paths,
                                                  int wake_fd) {
  return std::make_unique<KqueueBackend>(paths, wake_fd);
}

}  // namespace sandgate::watch

#endif  // SANDGATE_WATCH_KQUEUE
