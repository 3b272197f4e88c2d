// What file events mean for a reload, apart from how a kernel reports them: the event vocabulary
// every backend (inotify, kqueue, none) translates into, the quiet period that turns a burst of
// events (a save is several) into one reload, the longer wait for a writer that still holds the
// file open, and the stat() fingerprint comparison that decides which files really changed.
//
// Pure: no system calls and no clock of its own (the caller passes `now`), so tests drive it
// with synthetic events and time. Not thread-safe; FileWatcher uses it from the one thread that
// waits.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::watch {

// Something a backend saw about a watched file or its folder. Only events about the watched
// names reach ChangeLogic (a log file written beside the blocklist is filtered out by the backend
// where it can tell; where it cannot, the fingerprints find nothing changed).
enum class Event : std::uint8_t {
  created,         // a file appeared at the watched name (inotify IN_CREATE)
  modified,        // its data changed and the writer may still hold it open: a close will be
                   // reported (inotify IN_MODIFY, followed by IN_CLOSE_WRITE)
  write_closed,    // a writer closed it (inotify IN_CLOSE_WRITE)
  written,         // its data changed; this backend reports no close (kqueue NOTE_WRITE,
                   // NOTE_EXTEND), so only the quiet period tells when the writer is done
  moved_in,        // a complete file was renamed onto the name (inotify IN_MOVED_TO)
  moved_away,      // the file at the name was renamed away (IN_MOVED_FROM, kqueue NOTE_RENAME)
  deleted,         // the name was unlinked (IN_DELETE, kqueue NOTE_DELETE)
  attributes,      // mode, owner, times or link count (IN_ATTRIB, NOTE_ATTRIB, NOTE_LINK)
  folder_changed,  // the folder was deleted, moved or restored, an entry of it changed where the
                   // backend cannot tell which (kqueue), or events were lost (IN_Q_OVERFLOW)
};

std::string_view to_string(Event event);

// What a file looks like from outside; any difference means it changed. Taken with stat(),
// which follows symlinks (the content's identity), plus where a symlink at the path points.
struct Fingerprint {
  bool exists = false;
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::string link_target;  // where a symlink at the path points, if it is one
  bool operator==(const Fingerprint&) const = default;
};

struct Timing {
  // How often fingerprints are compared even without events: covers file systems that send no
  // events, a folder re-pointed through a symlink, and a platform without a backend.
  std::chrono::milliseconds poll_interval{500};
  // How long a writer that modified the file but has not closed it yet is waited for.
  std::chrono::milliseconds open_writer_cap{2000};
};

class ChangeLogic {
 public:
  using Clock = std::chrono::steady_clock;

  // `initial[i]` is the fingerprint of `paths[i]` when watching starts. A path given twice is
  // kept once (its first fingerprint).
  ChangeLogic(std::vector<std::string> paths, std::vector<Fingerprint> initial, Timing timing = {});

  const std::vector<std::string>& paths() const { return paths_; }
  const Timing& timing() const { return timing_; }

  // Starts one wait: nothing pending yet; events must then stay away for `quiet`.
  void begin_wait(std::chrono::milliseconds quiet);

  // Records an event at `now`: a reload is pending, and the quiet period starts again.
  void on_event(Event event, Clock::time_point now);

  // How long the backend may block before the next look: the poll interval, or less when a
  // pending change settles sooner. Never negative.
  std::chrono::milliseconds timeout(Clock::time_point now) const;

  // Whether to compare fingerprints now: nothing is pending (a plain timer tick) or what is
  // pending has been quiet long enough. When true, the pending state is cleared.
  bool due(Clock::time_point now);

  // Given the fingerprints of paths() now (same order), the paths whose fingerprint differs
  // from the last one seen, in paths() order; the new fingerprints become the ones remembered.
  std::vector<std::string> compare(const std::vector<Fingerprint>& now);

  bool pending() const { return pending_; }
  bool open_writer() const { return open_writer_; }

 private:
  std::chrono::milliseconds settle() const;

  std::vector<std::string> paths_;
  std::vector<Fingerprint> prints_;
  Timing timing_;
  std::chrono::milliseconds quiet_{0};
  bool pending_ = false;      // something happened; waiting for it to settle
  bool open_writer_ = false;  // the last data event left a writer holding the file open
  Clock::time_point last_event_{};
};

}  // namespace sandgate::watch
