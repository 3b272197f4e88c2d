// The decision log. See decision_log.hpp.
#include "proxy/log/decision_log.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>

#include "proxy/json/json_writer.hpp"
#include "proxy/log/text_fields.hpp"
#include "rules/reason.hpp"

namespace sandgate::log {
namespace {

// 2026-11-25T21:45:30.123Z, into `text`.
std::string_view format_timestamp(char (&text)[32]) {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  const int n = std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                              utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  return {text, static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(sizeof text) - 1))};
}

void append_timestamp(std::string& out) {
  char text[32];
  out += format_timestamp(text);
}

// Text fields must stay on one line and unambiguous: control characters become '?'.
void append_plain(std::string& out, std::string_view text) {
  for (char c : text) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
}

// The host and its port as one token: "name:443". A host that would read back as a host and a
// port ("a:1" with no port of its own) is quoted, so that the line says which it was.
void append_host(std::string& out, std::string_view host, std::uint16_t port) {
  const std::size_t colon = host.rfind(':');
  const bool looks_like_port =
      port == 0 && colon != std::string_view::npos && colon + 1 < host.size() &&
      host.find_first_not_of("0123456789", colon + 1) == std::string_view::npos;
  if (looks_like_port && !needs_quotes(host)) {
    out += '"';
    out += host;
    out += '"';
  } else {
    append_text_value(out, host);
  }
  if (port != 0) {
    out += ':';
    out += std::to_string(port);
  }
}

// One " key=value" field, the value through the one escaping function.
void append_field(std::string& out, std::string_view key, std::string_view value) {
  out += ' ';
  out += key;
  out += '=';
  append_text_value(out, value);
}

// A message line's own fields; its contents always quoted, as a sentence is.
void append_message_fields(std::string& out, const Record& r) {
  append_field(out, "direction", r.direction);
  append_field(out, "kind", r.message_kind);
  out += " size=" + std::to_string(r.message_size);
  if (r.contents_cut) {
    out += " cut=1";
  }
  if (r.unfinished) {
    out += " unfinished=1";
  }
  out += " contents=";
  append_quoted_value(out, r.contents);
}

// Every value goes through append_text_value (text_fields.hpp): no field of the line, whoever
// chose its bytes, can end early and pose as further fields.
void format_text(std::string& out, const Record& r) {
  append_timestamp(out);
  out += " conn=";
  out += std::to_string(r.connection_id);
  out += ' ';
  if (r.event == Record::Event::decision) {
    out += r.verdict == "allow"        ? "ALLOW "
           : r.verdict == "deny"       ? "BLOCK "
           : r.verdict == "would-deny" ? "WOULD-BLOCK "
                                       : "FAIL ";
  } else if (r.event == Record::Event::message) {
    out += "MESSAGE ";
  } else {
    out += "END ";
  }
  append_text_value(out, r.method);
  out += ' ';
  append_host(out, r.host, r.port);
  if (r.event == Record::Event::decision && r.verdict != "allow") {
    out += " (";
    append_text_value(out, r.reason);
    out += ')';
  }
  append_field(out, "client", r.client);
  if (!r.path.empty()) {
    append_field(out, "path", r.path);
  }
  if (!r.call.empty()) {
    append_field(out, "call", r.call);
  }
  if (!r.arguments.empty()) {
    append_field(out, "arguments", r.arguments);
  }
  if (r.event == Record::Event::message) {
    append_message_fields(out, r);
    return;
  }
  if (r.event == Record::Event::decision) {
    if (!r.rule.empty()) {
      append_field(out, "rule", r.rule);
    }
    if (!r.address.empty()) {
      append_field(out, "address", r.address);
    }
    if (r.verdict != "allow" && !r.detail.empty()) {
      // Always quoted, as before: a sentence reads as one.
      out += " why=";
      append_quoted_value(out, r.detail);
    }
  } else {
    append_field(out, "outcome", r.outcome);
    if (!r.reason.empty() && r.reason != rules::reason_code(rules::Reason::allowed)) {
      append_field(out, "reason", r.reason);
    }
    out += " up=" + std::to_string(r.bytes_up) + " down=" + std::to_string(r.bytes_down);
    char ms[32];
    std::snprintf(ms, sizeof ms, " ms=%.1f", r.duration_ms);
    out += ms;
  }
}

// Both formats write every field of the record; JSON leaves out what does not apply, like the
// text does. Every string goes through the one escaping function (json_writer).
void format_json(std::string& out, const Record& r) {
  char ts[32];
  json_writer::ObjectWriter object(out);
  object.string("ts", format_timestamp(ts))
      .string("event", r.event == Record::Event::decision  ? "decision"
                       : r.event == Record::Event::message ? "message"
                                                           : "end")
      .number("conn", r.connection_id)
      .string("client", r.client)
      .string("method", r.method)
      .string("host", r.host)
      .number("port", r.port);
  if (!r.path.empty()) {
    object.string("path", r.path);
  }
  if (!r.call.empty()) {
    object.string("call", r.call);
  }
  if (!r.arguments.empty()) {
    object.string("arguments", r.arguments);
  }
  if (r.event == Record::Event::message) {
    object.string("direction", r.direction)
        .string("kind", r.message_kind)
        .number("size", r.message_size)
        .string("contents", r.contents);
    if (r.contents_cut) {
      object.boolean("cut", true);
    }
    if (r.unfinished) {
      object.boolean("unfinished", true);
    }
    object.close();
    return;
  }
  object.string("verdict", r.verdict).string("reason", r.reason);
  if (!r.rule.empty()) {
    object.string("rule", r.rule);
  }
  if (!r.address.empty()) {
    object.string("address", r.address);
  }
  if (!r.detail.empty()) {
    object.string("detail", r.detail);
  }
  if (r.event == Record::Event::end) {
    object.string("outcome", r.outcome)
        .number("bytes_up", r.bytes_up)
        .number("bytes_down", r.bytes_down)
        .fixed("duration_ms", r.duration_ms, 3);
  }
  object.close();
}

int open_log_file(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

}  // namespace

void format_record(std::string& out, settings::LogFormat format, const Record& record) {
  if (format == settings::LogFormat::json) {
    format_json(out, record);
  } else {
    format_text(out, record);
  }
}

void format_note(std::string& out, settings::LogFormat format, std::string_view level,
                 std::string_view text) {
  if (format == settings::LogFormat::json) {
    char ts[32];
    json_writer::ObjectWriter object(out);
    object.string("ts", format_timestamp(ts))
        .string("event", "log")
        .string("level", level)
        .string("message", text);
    object.close();
  } else {
    append_timestamp(out);
    out += " sandgate ";
    append_plain(out, level);
    out += ": ";
    append_plain(out, text);
  }
}

Expected<std::unique_ptr<DecisionLog>, std::string> DecisionLog::open(settings::LogFormat format,
                                                                      const std::string& path,
                                                                      settings::LogLevel level) {
  int fd = STDERR_FILENO;
  if (!path.empty()) {
    fd = open_log_file(path);
    if (fd < 0) {
      return Unexpected{"log file " + path + ": " + std::strerror(errno)};
    }
  }
  return std::unique_ptr<DecisionLog>(new DecisionLog(format, path, fd, level));
}

namespace {

constexpr std::size_t kBatchBytes = 64 * 1024;
// Beyond this the writer is behind (a stalled pipe): callers write for it rather than hold more.
constexpr std::size_t kMostBuffered = 1024 * 1024;
constexpr auto kFlushInterval = std::chrono::milliseconds(50);

// The log whose writer runs (one gate per process), for the terminate handler: what is buffered
// goes out before the crash report.
std::atomic<DecisionLog*> g_started_log{nullptr};
std::terminate_handler g_previous_terminate = nullptr;

}  // namespace

DecisionLog::DecisionLog(settings::LogFormat format, std::string path, int fd,
                         settings::LogLevel level)
    : format_(format), level_(level), path_(std::move(path)), fd_(fd) {}

DecisionLog::~DecisionLog() {
  DecisionLog* self = this;
  g_started_log.compare_exchange_strong(self, nullptr);
  if (writer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    writer_.join();
  }
  flush();
  if (fd_ != STDERR_FILENO) {
    ::close(fd_);
  }
}

void DecisionLog::start_writer() {
  std::lock_guard lock(mutex_);
  if (writing_) {
    return;
  }
  buffer_.reserve(kBatchBytes * 2);
  writing_ = true;
  writer_ = std::thread([this] { run_writer(); });
  DecisionLog* none = nullptr;
  if (g_started_log.compare_exchange_strong(none, this)) {
    g_previous_terminate = std::set_terminate([] {
      if (DecisionLog* log = g_started_log.load()) {
        log->try_flush();
      }
      if (g_previous_terminate != nullptr) {
        g_previous_terminate();
      }
      std::abort();
    });
  }
}

void DecisionLog::run_writer() {
  ::pthread_setname_np(::pthread_self(), "sandgate-log");  // seen in top -H, ps -L, /proc
  std::string spare;
  spare.reserve(kBatchBytes * 2);
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kFlushInterval,
                     [this] { return stopping_ || buffer_.size() >= kBatchBytes; });
      if (stopping_) {
        return;  // the destructor flushes what is left
      }
    }
    std::lock_guard output(output_mutex_);
    write_batch(spare);
  }
}

void DecisionLog::write_all(const char* data, std::size_t left) {
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // a full disk must not stop the gate; the lines are lost
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

void DecisionLog::write_batch(std::string& spare) {
  spare.clear();
  {
    std::lock_guard lock(mutex_);
    buffer_.swap(spare);
  }
  if (!spare.empty()) {
    write_all(spare.data(), spare.size());
  }
}

void DecisionLog::flush() {
  std::lock_guard output(output_mutex_);
  std::string batch;
  write_batch(batch);
}

void DecisionLog::try_flush() {
  std::unique_lock output(output_mutex_, std::try_to_lock);
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (output.owns_lock() && lock.owns_lock() && !buffer_.empty()) {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
}

void DecisionLog::emit(std::string& line, bool now) {
  line += '\n';
  bool write_now = now;
  {
    std::lock_guard lock(mutex_);
    buffer_ += line;
    if (!writing_ || buffer_.size() >= kMostBuffered) {
      write_now = true;
    } else if (buffer_.size() >= kBatchBytes) {
      wake_.notify_one();
    }
  }
  if (write_now) {
    flush();
  }
}

void DecisionLog::publish_event(const Record& record) {
  if (!events_.enabled()) {
    return;
  }
  thread_local std::string json;
  json.clear();
  format_record(json, settings::LogFormat::json, record);
  events_.publish(json);
}

void DecisionLog::write(const Record& record) {
  // Before the level filter: the run's summary counts every denial and every byte.
  denials_.add(record);
  traffic_.add(record);
  publish_event(record);
  // Denials are warnings, failures errors; allows and end lines are the detail of `info`.
  const settings::LogLevel needed =
      record.event == Record::Event::end || record.verdict == "allow" ? settings::LogLevel::info
      : record.verdict == "deny" || record.verdict == "would-deny"    ? settings::LogLevel::warning
                                                                      : settings::LogLevel::error;
  if (needed > level_) {
    return;
  }
  thread_local std::string line;
  line.clear();
  format_record(line, format_, record);
  emit(line, false);
}

void DecisionLog::note(std::string_view level, std::string_view text) {
  const settings::LogLevel needed = level == "error"     ? settings::LogLevel::error
                                    : level == "warning" ? settings::LogLevel::warning
                                                         : settings::LogLevel::info;
  if (needed > level_) {
    return;
  }
  thread_local std::string line;
  line.clear();
  format_note(line, format_, level, text);
  emit(line, true);
}

void DecisionLog::reopen() {
  if (path_.empty()) {
    return;
  }
  flush();  // what was logged before the move belongs to the moved file
  const int fresh = open_log_file(path_);
  if (fresh < 0) {
    note("error", "cannot reopen log file " + path_ + ": " + std::strerror(errno));
    return;
  }
  // dup2 replaces the file behind fd_ atomically: writers in other threads never see a closed
  // or reused descriptor.
  ::dup2(fresh, fd_);
  ::close(fresh);
}

}  // namespace sandgate::log
