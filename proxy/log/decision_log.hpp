// The decision log: one line per decision and one when each tunnel or request ends, as readable
// text or as JSON (one object a line), to standard error or a file. Fields hold what clients
// sent (a raw target, a method): the JSON format escapes them (see format_record below).
//
// Thread-safe without a lock: each line is formatted in the caller's thread and written with one
// write(2) to a descriptor opened with O_APPEND, so concurrent lines never interleave. reopen()
// (on SIGHUP, for logrotate) swaps the file under the same descriptor number with dup2().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"

namespace sandgate::log {

// What a line is about. Fields that do not apply are left empty / zero and omitted.
struct Record {
  enum class Event : std::uint8_t { decision, end };
  Event event = Event::decision;
  std::uint64_t connection_id = 0;
  std::string_view client;   // "127.0.0.1:50312"
  std::string_view method;   // "CONNECT", "GET", ...
  std::string_view host;     // normalised, `[v6]` for IPv6; or the raw target when invalid
  std::uint16_t port = 0;
  // "allow", "deny" (the policy said no) or "error" (allowed, but the upstream failed).
  std::string_view verdict = "allow";
  // The reason's code, from the one reason table (rules::reason_code); empty on an end line
  // that ended normally. Text rather than the enum: the line is written as given, byte for byte.
  std::string_view reason;
  std::string_view rule;     // "file:line entry", empty when no list decided
  std::string_view address;  // the upstream address dialled, "93.184.216.34:443"
  std::string_view detail;   // the human sentence (denials and failures)
  std::uint64_t bytes_up = 0;    // client to upstream
  std::uint64_t bytes_down = 0;  // upstream to client
  double duration_ms = 0;
  // For `end`: "closed", "reset", "timeout", "idle-timeout", "aborted", "revoked", "refused",
  // "error".
  std::string_view outcome;
};

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

 private:
  DecisionLog(settings::LogFormat format, std::string path, int fd, settings::LogLevel level);
  void write_line(std::string& line);

  settings::LogFormat format_;
  settings::LogLevel level_;
  std::string path_;
  int fd_;
};

// The line write() (or note()) writes, without its newline and whatever the level, appended to
// `out`. In JSON every field goes through proxy/json/json_writer.hpp, so a line is valid UTF-8
// JSON whatever bytes a client sent (ill-formed UTF-8 becomes \ufffd, controls are escaped).
// For tests and the fuzz target; thread-safe.
void format_record(std::string& out, settings::LogFormat format, const Record& record);
void format_note(std::string& out, settings::LogFormat format, std::string_view level,
                 std::string_view text);

}  // namespace sandgate::log
