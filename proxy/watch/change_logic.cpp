// The backend-neutral part of file watching. See change_logic.hpp.
#include "proxy/watch/change_logic.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace sandgate::watch {

std::string_view to_string(Event event) {
  switch (event) {
    case Event::created:
      return "created";
    case Event::modified:
      return "modified";
    case Event::write_closed:
      return "write_closed";
    case Event::written:
      return "written";
    case Event::moved_in:
      return "moved_in";
    case Event::moved_away:
      return "moved_away";
    case Event::deleted:
      return "deleted";
    case Event::attributes:
      return "attributes";
    case Event::folder_changed:
      return "folder_changed";
  }
  return "unknown";
}

ChangeLogic::ChangeLogic(std::vector<std::string> paths, std::vector<Fingerprint> initial,
                         Timing timing)
    : timing_(timing) {
  initial.resize(paths.size());  // a missing initial print reads as "does not exist"
  // A path given twice is one file: watched and reported once.
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (std::find(paths_.begin(), paths_.end(), paths[i]) == paths_.end()) {
      paths_.push_back(std::move(paths[i]));
      prints_.push_back(std::move(initial[i]));
    }
  }
}

void ChangeLogic::begin_wait(std::chrono::milliseconds quiet) {
  quiet_ = std::max(quiet, std::chrono::milliseconds(0));
  pending_ = false;
  open_writer_ = false;
}

void ChangeLogic::on_event(Event event, Clock::time_point now) {
  // Every event about a watched name makes a reload pending and restarts the quiet period: an
  // editor's save is a burst (write to a temporary, rename, attribute change), and reading in
  // the middle of it would load half a file or report the same change twice.
  pending_ = true;
  last_event_ = now;
  switch (event) {
    case Event::modified:
      // Written but not closed: `cat big > list` may pause longer than the quiet period between
      // writes, so wait for the close (up to open_writer_cap).
      open_writer_ = true;
      break;
    case Event::write_closed:
    case Event::moved_in:
    case Event::created:
    case Event::deleted:
      // The content at the name is complete (closed, renamed in whole), new, or gone: no writer
      // of the old file is waited for. A create is followed by `modified` if data is written.
      open_writer_ = false;
      break;
    case Event::written:
      // No close will be reported, so this cannot wait for one: the quiet period alone decides,
      // and each further write restarts it.
    case Event::moved_away:
    case Event::attributes:
    case Event::folder_changed:
      // Say nothing about a writer: a chmod or a sibling's rename while a writer is still busy
      // must not cut its wait short. The fingerprints tell what really changed.
      break;
  }
}

std::chrono::milliseconds ChangeLogic::settle() const {
  return open_writer_ ? timing_.open_writer_cap : quiet_;
}

std::chrono::milliseconds ChangeLogic::timeout(Clock::time_point now) const {
  auto timeout = timing_.poll_interval;
  if (pending_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(last_event_ + settle() - now);
    timeout = std::min(timeout, left);
  }
  return std::max(timeout, std::chrono::milliseconds(0));
}

bool ChangeLogic::due(Clock::time_point now) {
  if (pending_ && now - last_event_ < settle()) {
    return false;
  }
  pending_ = false;
  open_writer_ = false;
  return true;
}

std::vector<std::string> ChangeLogic::compare(const std::vector<Fingerprint>& now) {
  assert(now.size() == paths_.size());
  std::vector<std::string> changed;
  for (std::size_t i = 0; i < paths_.size() && i < now.size(); ++i) {
    if (!(now[i] == prints_[i])) {
      prints_[i] = now[i];
      changed.push_back(paths_[i]);
    }
  }
  return changed;
}

}  // namespace sandgate::watch
