// The decision log. See decision_log.hpp.
#include "proxy/log/decision_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace sandgate::log {
namespace {

// 2026-11-25T21:45:30.123Z
void append_timestamp(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  const int n = std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                              utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  out.append(text, static_cast<std::size_t>(n));
}

// Text fields must stay on one line and unambiguous: control characters become '?'.
void append_plain(std::string& out, std::string_view text) {
  for (char c : text) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
}

void format_text(std::string& out, const Record& r) {
  append_timestamp(out);
  out += " conn=";
  out += std::to_string(r.connection_id);
  out += ' ';
  if (r.event == Record::Event::decision) {
    out += r.verdict == "allow" ? "ALLOW " : r.verdict == "deny" ? "BLOCK " : "FAIL ";
  } else {
    out += "END ";
  }
  append_plain(out, r.method);
  out += ' ';
  append_plain(out, r.host);
  if (r.port != 0) {
    out += ':';
    out += std::to_string(r.port);
  }
  if (r.event == Record::Event::decision && r.verdict != "allow") {
    out += " (";
    append_plain(out, r.reason);
    out += ')';
  }
  out += " client=";
  append_plain(out, r.client);
  if (r.event == Record::Event::decision) {
    if (!r.rule.empty()) {
      out += " rule=";
      append_plain(out, r.rule);
    }
    if (!r.address.empty()) {
      out += " address=";
      append_plain(out, r.address);
    }
    if (r.verdict != "allow" && !r.detail.empty()) {
      out += " why=\"";
      append_plain(out, r.detail);
      out += '"';
    }
  } else {
    out += " outcome=";
    append_plain(out, r.outcome);
    if (!r.reason.empty() && r.reason != "allowed") {
      out += " reason=";
      append_plain(out, r.reason);
    }
    out += " up=" + std::to_string(r.bytes_up) + " down=" + std::to_string(r.bytes_down);
    char ms[32];
    std::snprintf(ms, sizeof ms, " ms=%.1f", r.duration_ms);
    out += ms;
  }
}

void add_json_field(std::string& out, std::string_view name, std::string_view value) {
  out += ",\"";
  out += name;
  out += "\":";
  append_json_string(out, value);
}

void add_json_number(std::string& out, std::string_view name, std::uint64_t value) {
  out += ",\"";
  out += name;
  out += "\":";
  out += std::to_string(value);
}

void format_json(std::string& out, const Record& r) {
  out += "{\"ts\":\"";
  append_timestamp(out);
  out += "\",\"event\":\"";
  out += r.event == Record::Event::decision ? "decision" : "end";
  out += '"';
  add_json_number(out, "conn", r.connection_id);
  add_json_field(out, "client", r.client);
  add_json_field(out, "method", r.method);
  add_json_field(out, "host", r.host);
  add_json_number(out, "port", r.port);
  add_json_field(out, "verdict", r.verdict);
  add_json_field(out, "reason", r.reason);
  if (!r.rule.empty()) {
    add_json_field(out, "rule", r.rule);
  }
  if (!r.address.empty()) {
    add_json_field(out, "address", r.address);
  }
  if (!r.detail.empty()) {
    add_json_field(out, "detail", r.detail);
  }
  if (r.event == Record::Event::end) {
    add_json_field(out, "outcome", r.outcome);
    add_json_number(out, "bytes_up", r.bytes_up);
    add_json_number(out, "bytes_down", r.bytes_down);
    char ms[48];
    std::snprintf(ms, sizeof ms, ",\"duration_ms\":%.3f", r.duration_ms);
    out += ms;
  }
  out += '}';
}

int open_log_file(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += c;  // UTF-8 passes through; names are punycode anyway
    }
  }
  out += '"';
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

DecisionLog::DecisionLog(settings::LogFormat format, std::string path, int fd,
                         settings::LogLevel level)
    : format_(format), level_(level), path_(std::move(path)), fd_(fd) {}

DecisionLog::~DecisionLog() {
  if (fd_ != STDERR_FILENO) {
    ::close(fd_);
  }
}

void DecisionLog::write_line(std::string& line) {
  line += '\n';
  const char* data = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // a full disk must not stop the gate; the line is lost
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

void DecisionLog::write(const Record& record) {
  // Denials are warnings, failures errors; allows and end lines are the detail of `info`.
  const settings::LogLevel needed =
      record.event == Record::Event::end || record.verdict == "allow" ? settings::LogLevel::info
      : record.verdict == "deny"                                       ? settings::LogLevel::warning
                                                                       : settings::LogLevel::error;
  if (needed > level_) {
    return;
  }
  thread_local std::string line;
  line.clear();
  if (format_ == settings::LogFormat::json) {
    format_json(line, record);
  } else {
    format_text(line, record);
  }
  write_line(line);
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
  if (format_ == settings::LogFormat::json) {
    line += "{\"ts\":\"";
    append_timestamp(line);
    line += "\",\"event\":\"log\"";
    add_json_field(line, "level", level);
    add_json_field(line, "message", text);
    line += '}';
  } else {
    append_timestamp(line);
    line += " sandgate ";
    line += level;
    line += ": ";
    append_plain(line, text);
  }
  write_line(line);
}

void DecisionLog::reopen() {
  if (path_.empty()) {
    return;
  }
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
