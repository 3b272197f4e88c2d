// File watching: the backend-neutral loop. What events mean and when to look is ChangeLogic
// (change_logic.hpp); how the kernel reports them is a backend (watch_backend.hpp).
#include "proxy/watch/file_watcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "proxy/watch/change_logic.hpp"
#include "proxy/watch/watch_backend.hpp"

namespace sandgate::watch {
namespace {

namespace fs = std::filesystem;

#ifdef __APPLE__
const timespec& modified(const struct stat& info) { return info.st_mtimespec; }
const timespec& changed(const struct stat& info) { return info.st_ctimespec; }
#else
const timespec& modified(const struct stat& info) { return info.st_mtim; }
const timespec& changed(const struct stat& info) { return info.st_ctim; }
#endif

std::int64_t nanoseconds(const timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Waits on the wake descriptor alone: where no kernel backend exists, the fingerprint
// comparison on each poll-interval tick is what finds changes.
class PollingBackend final : public WatchBackend {
 public:
  explicit PollingBackend(int wake_fd) : wake_fd_(wake_fd) {}
  bool wait(std::chrono::milliseconds timeout, std::vector<Event>&) override {
    pollfd fd{wake_fd_, POLLIN, 0};
    return ::poll(&fd, 1, static_cast<int>(timeout.count())) > 0 && (fd.revents & POLLIN);
  }
  bool rearm() override { return false; }

 private:
  int wake_fd_;
};

std::vector<Fingerprint> fingerprints(const std::vector<std::string>& paths) {
  std::vector<Fingerprint> out;
  out.reserve(paths.size());
  for (const auto& path : paths) {
    out.push_back(take_fingerprint(path));
  }
  return out;
}

}  // namespace

std::pair<std::string, std::string> folder_and_name(const std::string& path) {
  auto parent = fs::path(path).parent_path().string();
  return {parent.empty() ? "." : parent, fs::path(path).filename().string()};
}

Fingerprint take_fingerprint(const std::string& path) {
  Fingerprint print;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {  // follows symlinks: the content's identity
    print.exists = true;
    print.device = static_cast<std::uint64_t>(info.st_dev);
    print.inode = static_cast<std::uint64_t>(info.st_ino);
    print.size = static_cast<std::int64_t>(info.st_size);
    print.mtime_ns = nanoseconds(modified(info));
    print.ctime_ns = nanoseconds(changed(info));
  }
  std::error_code ec;
  if (fs::is_symlink(path, ec)) {
    print.link_target = fs::read_symlink(path, ec).string();
  }
  return print;
}

std::unique_ptr<WatchBackend> make_polling_backend(int wake_fd) {
  return std::make_unique<PollingBackend>(wake_fd);
}

std::unique_ptr<WatchBackend> make_platform_backend(const std::vector<std::string>& paths,
                                                    int wake_fd) {
#if defined(__linux__)
  // Without an inotify instance to be had (the user's are all taken: EMFILE; a confined
  // command's limit), the timer's fingerprint comparison alone finds the changes, a poll
  // interval late: the gate starts and reloads all the same.
  try {
    return make_inotify_backend(paths, wake_fd);
  } catch (const std::runtime_error&) {
    return make_polling_backend(wake_fd);
  }
#elif defined(SANDGATE_WATCH_KQUEUE)
  return make_kqueue_backend(paths, wake_fd);
#else
  (void)paths;
  return make_polling_backend(wake_fd);
#endif
}

struct FileWatcher::Impl {
  int wake_pipe[2] = {-1, -1};
  std::unique_ptr<ChangeLogic> logic;
  std::unique_ptr<WatchBackend> backend;
  std::vector<Event> events;  // reused by every wait

  ~Impl() {
    backend.reset();  // before the pipe it may have registered
    for (int fd : wake_pipe) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
};

FileWatcher::FileWatcher(std::vector<std::string> paths) : impl_(std::make_unique<Impl>()) {
  // pipe2() is Linux-only; pipe() and fcntl() work everywhere.
  if (::pipe(impl_->wake_pipe) != 0) {
    throw std::runtime_error(std::string("file watcher: pipe: ") + std::strerror(errno));
  }
  for (int fd : impl_->wake_pipe) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  // Watches first, then the fingerprints: a change between the two is then either in the
  // fingerprint or reported as an event, never lost.
  impl_->backend = make_platform_backend(paths, impl_->wake_pipe[0]);
  auto initial = fingerprints(paths);
  impl_->logic = std::make_unique<ChangeLogic>(std::move(paths), std::move(initial));
}

FileWatcher::~FileWatcher() = default;

void FileWatcher::wake() {
  const char byte = 1;
  [[maybe_unused]] auto ignored = ::write(impl_->wake_pipe[1], &byte, 1);
}

std::vector<std::string> FileWatcher::wait_for_change(std::chrono::milliseconds quiet) {
  using Clock = ChangeLogic::Clock;
  Impl& impl = *impl_;
  ChangeLogic& logic = *impl.logic;
  logic.begin_wait(quiet);
  for (;;) {
    impl.events.clear();
    if (impl.backend->wait(logic.timeout(Clock::now()), impl.events)) {
      char drain[64];
      while (::read(impl.wake_pipe[0], drain, sizeof drain) > 0) {
      }
      return {};
    }
    // A watch re-armed means a folder or file is back: treat it like an event about it.
    if (impl.backend->rearm()) {
      impl.events.push_back(Event::folder_changed);
    }
    const auto now = Clock::now();
    for (const Event event : impl.events) {
      logic.on_event(event, now);
    }
    if (!impl.events.empty() || !logic.due(now)) {
      continue;  // still settling
    }
    // Quiet now (or a plain timer tick): whatever differs from the last look has changed.
    auto changed = logic.compare(fingerprints(logic.paths()));
    if (!changed.empty()) {
      return changed;
    }
  }
}

}  // namespace sandgate::watch
