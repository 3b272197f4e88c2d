// The in-memory hosts file (contract: hosts_file.hpp).
#include "proxy/dns/hosts_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace sandgate::dns {
namespace {

namespace asio = boost::asio;

// Hosts files used as blocklists reach a few megabytes; anything past this is not read, so a
// runaway file cannot take the worker's memory.
constexpr std::size_t max_hosts_bytes = 64u << 20;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  if (!out.empty() && out.back() == '.') {
    out.pop_back();
  }
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// The next whitespace-separated field of `line`, advancing it; empty at the end.
std::string_view next_field(std::string_view& line) {
  std::size_t start = 0;
  while (start < line.size() && is_space(line[start])) {
    ++start;
  }
  std::size_t end = start;
  while (end < line.size() && !is_space(line[end])) {
    ++end;
  }
  const std::string_view field = line.substr(start, end - start);
  line.remove_prefix(end);
  return field;
}

bool is_localhost(std::string_view name) {
  return name == "localhost" || name.ends_with(".localhost");
}

std::string read_bounded(int fd) {
  std::string text;
  char buffer[65536];
  while (text.size() < max_hosts_bytes) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    text.append(buffer, std::min<std::size_t>(static_cast<std::size_t>(got),
                                              max_hosts_bytes - text.size()));
  }
  return text;
}

}  // namespace

std::unordered_map<std::string, std::vector<asio::ip::address>> parse_hosts(std::string_view text) {
  std::unordered_map<std::string, std::vector<asio::ip::address>> names;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    const std::string_view address_text = next_field(line);
    if (address_text.empty()) {
      continue;
    }
    boost::system::error_code ec;
    const asio::ip::address address = asio::ip::make_address(std::string(address_text), ec);
    if (ec) {
      continue;  // not an address line: skipped, as the C library does
    }
    for (std::string_view name = next_field(line); !name.empty(); name = next_field(line)) {
      std::vector<asio::ip::address>& list = names[lower(name)];
      if (std::find(list.begin(), list.end(), address) == list.end()) {
        list.push_back(address);
      }
    }
  }
  return names;
}

HostsFile::HostsFile(std::string path, std::chrono::milliseconds check_interval)
    : path_(std::move(path)), check_interval_(check_interval) {}

std::vector<asio::ip::address> HostsFile::lookup(std::string_view name, clock::time_point now) {
  refresh(now);
  const std::string key = lower(name);
  if (const auto found = names_.find(key); found != names_.end()) {
    return found->second;
  }
  if (is_localhost(key)) {
    return {asio::ip::address_v4::loopback(), asio::ip::address_v6::loopback()};
  }
  return {};
}

// One stat() per check interval; a read only when the file is new, replaced or edited.
void HostsFile::refresh(clock::time_point now) {
  if (path_.empty() || (loaded_ && now < next_check_)) {
    return;
  }
  next_check_ = now + check_interval_;
  Fingerprint seen;
  struct stat info {};
  if (::stat(path_.c_str(), &info) == 0) {
    seen.device = info.st_dev;
    seen.inode = info.st_ino;
    seen.size = info.st_size;
    seen.mtime_ns = static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 +
                    info.st_mtim.tv_nsec;
    seen.ctime_ns = static_cast<std::int64_t>(info.st_ctim.tv_sec) * 1'000'000'000 +
                    info.st_ctim.tv_nsec;
  }
  if (loaded_ && seen == fingerprint_) {
    return;
  }
  fingerprint_ = seen;
  loaded_ = true;
  load();
}

void HostsFile::load() {
  ++generation_;
  names_.clear();
  if (fingerprint_.size < 0) {
    return;  // missing: no names until it appears
  }
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  const std::string text = read_bounded(fd);
  ::close(fd);
  names_ = parse_hosts(text);
}

}  // namespace sandgate::dns
