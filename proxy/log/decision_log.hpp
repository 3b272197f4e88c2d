// The decision log: one line per decision and one when each tunnel or request ends, as readable
// text or as JSON (one object a line), to standard error or a file. Fields hold what clients
// sent (a raw target, a method): the JSON format escapes them (see format_record below).
//
// Thread-safe. Each line is formatted in the caller's thread and appended to a buffer under a
// short lock; wherever the log goes (standard error, a pipe, the journal, a file) the same
// writer thread writes the buffer out in batches, one write(2) each: when it holds 64 KiB, and
// at least every 50 ms, so a line is out within 50 ms and logging costs the connection path a
// short lock and a copy instead of a system call. Until start_writer() runs (the gate's start),
// and for a log no gate starts (tests, `check`), every line is written at once: no thread exists
// before the gate starts, so `run` can clone its confined process from a single-threaded one.
// Operator notes flush at once (with everything before them, in order); so do reopen(), flush(),
// the drain and the destructor, so a clean stop loses nothing; a writer that falls 1 MiB behind
// (a stalled pipe) makes the next caller write for it, as an unbatched log would, instead of
// holding more. A crash loses at most the last 50 ms of lines; std::terminate flushes first.
// reopen() (on SIGHUP, for logrotate) writes what is buffered to the old file, then swaps the
// file under the same descriptor number with dup2().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "proxy/log/denial_tally.hpp"
#include "proxy/log/event_feed.hpp"
#include "proxy/log/record.hpp"
#include "proxy/log/traffic_tally.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"

namespace sandgate::log {

class DecisionLog {
 public:
  // Standard error when `path` is empty. The error names the file and the reason.
  // `level` filters what is written (SANDGATE_LOG_LEVEL); metrics and /denials see everything.
  static Expected<std::unique_ptr<DecisionLog>, std::string> open(
      settings::LogFormat format, const std::string& path,
      settings::LogLevel level = settings::LogLevel::info);
  ~DecisionLog();

  void write(const Record& record);
  // An operator message ("sandgate: ..."), e.g. start-up notes and warnings.
  void note(std::string_view level, std::string_view text);
  // Reopens the file at the same path (after logrotate moved it). Errors are logged, not fatal.
  void reopen();
  // Changes what the log keeps from now on (a reload of log_level). Thread-safe.
  void set_level(settings::LogLevel level) { level_.store(level, std::memory_order_relaxed); }
  // Starts the writer thread: from now on lines are batched. Idempotent.
  void start_writer();
  // Writes every buffered line now.
  void flush();
  // flush() unless a lock is held (by a thread that may never let go): for std::terminate.
  void try_flush();
  // Every denial written since the log opened, counted per destination (whatever the level).
  // Thread-safe.
  const DenialTally& denials() const { return denials_; }
  // The bytes of every destination since the gate started (traffic_tally.hpp).
  const TrafficTally& traffic() const { return traffic_; }
  // Every record as a JSON line, live, for `sandgate watch` (event_feed.hpp; whatever the
  // level and format). Thread-safe.
  EventFeed& events() { return events_; }

 private:
  DecisionLog(settings::LogFormat format, std::string path, int fd, settings::LogLevel level);
  // Adds `line` (no newline yet) to the batch, and writes the batch out now when `now` (or when
  // no writer runs, or the writer is behind).
  void emit(std::string& line, bool now);
  void write_all(const char* data, std::size_t size);
  // Takes the batch and writes it; the caller holds output_mutex_ (the order of batches).
  void write_batch(std::string& spare);
  void run_writer();
  // The record as JSON into the live feed, when something can watch it.
  void publish_event(const Record& record);

  settings::LogFormat format_;
  std::atomic<settings::LogLevel> level_;  // read on every write; changed by a reload
  std::string path_;
  int fd_;

  // Two locks: mutex_ for the batch (held for an append or a swap, never a system call) and
  // output_mutex_ for the descriptor (held for the write(2)s of one batch, so batches go out
  // in the order they were taken). Taken in that order: output_mutex_, then mutex_.
  std::mutex output_mutex_;
  std::mutex mutex_;  // guards buffer_, writing_ and stopping_
  std::string buffer_;
  std::condition_variable wake_;
  bool writing_ = false;  // a writer thread runs: lines wait for it
  bool stopping_ = false;
  std::thread writer_;
  DenialTally denials_;
  TrafficTally traffic_;
  EventFeed events_;
};

// The line write() (or note()) writes, without its newline and whatever the level, appended to
// `out`. In JSON every field goes through proxy/json/json_writer.hpp, so a line is valid UTF-8
// JSON whatever bytes a client sent (ill-formed UTF-8 becomes \ufffd, controls are escaped).
// For tests and the fuzz target; thread-safe.
void format_record(std::string& out, settings::LogFormat format, const Record& record);
void format_note(std::string& out, settings::LogFormat format, std::string_view level,
                 std::string_view text);

}  // namespace sandgate::log
