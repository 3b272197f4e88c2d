// The in-memory hosts file (contract: hosts_file.hpp).
#include "proxy/dns/hosts_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <mutex>

#include "rules/ascii.hpp"

namespace sandgate::dns {
namespace {

namespace asio = boost::asio;

// Hosts files used as blocklists reach a few megabytes; anything past this is not read, so a
// runaway file cannot take the worker's memory.
constexpr std::size_t max_hosts_bytes = 64u << 20;

// A name as the file and the lookups compare it: lower case, without a final dot ("Example.COM."
// is "example.com").
std::string comparable_name(std::string_view text) {
  std::string out = rules::ascii_lower(text);
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
      std::vector<asio::ip::address>& list = names[comparable_name(name)];
      if (std::find(list.begin(), list.end(), address) == list.end()) {
        list.push_back(address);
      }
    }
  }
  return names;
}

namespace {

// The tables the instances in this process share, one per path: the newest parse and the
// fingerprint it was read under. Held weakly, so a table lives only while some instance uses it.
struct SharedTables {
  struct Entry {
    HostsFile::Fingerprint fingerprint;
    std::weak_ptr<const HostsFile::Names> names;
    bool loading = false;  // an instance is parsing this path now
  };
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
  std::atomic<std::uint64_t> parses{0};
};

SharedTables& shared_tables() {
  static SharedTables tables;  // never destroyed before the resolvers: function-local static
  return tables;
}

std::shared_ptr<const HostsFile::Names> parse_file(const std::string& path,
                                                   const HostsFile::Fingerprint& fingerprint) {
  shared_tables().parses.fetch_add(1, std::memory_order_relaxed);
  if (fingerprint.size < 0) {
    return std::make_shared<const HostsFile::Names>();  // missing: no names until it appears
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::make_shared<const HostsFile::Names>();
  }
  const std::string text = read_bounded(fd);
  ::close(fd);
  return std::make_shared<const HostsFile::Names>(parse_hosts(text));
}

}  // namespace

std::uint64_t HostsFile::parses() { return shared_tables().parses.load(std::memory_order_relaxed); }

HostsFile::HostsFile(std::string path, std::chrono::milliseconds check_interval)
    : path_(std::move(path)), check_interval_(check_interval) {}

std::vector<asio::ip::address> HostsFile::lookup(std::string_view name, clock::time_point now) {
  refresh(now);
  const std::string key = comparable_name(name);
  if (names_) {
    if (const auto found = names_->find(key); found != names_->end()) {
      return found->second;
    }
  }
  if (is_localhost(key)) {
    return {asio::ip::address_v4::loopback(), asio::ip::address_v6::loopback()};
  }
  return {};
}

// One stat() per check interval; a new table only when the file is new, replaced or edited, and
// then the one another instance already parsed under that fingerprint if there is one.
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
    seen.mtime_ns =
        static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
    seen.ctime_ns =
        static_cast<std::int64_t>(info.st_ctim.tv_sec) * 1'000'000'000 + info.st_ctim.tv_nsec;
  }
  if (loaded_ && seen == fingerprint_) {
    return;
  }

  SharedTables& tables = shared_tables();
  {
    std::lock_guard lock(tables.mutex);
    SharedTables::Entry& entry = tables.entries[path_];
    if (auto published = entry.names.lock(); published && entry.fingerprint == seen) {
      names_ = std::move(published);
      fingerprint_ = seen;
      loaded_ = true;
      ++generation_;
      return;
    }
    if (entry.loading && loaded_) {
      // Another worker is parsing it: keep answering from the table held, and look again at
      // the next check (fingerprint_ is left as it was, so the change is still seen then).
      return;
    }
    entry.loading = true;
  }
  // Parsed outside the lock: the other instances keep answering meanwhile. The fingerprint is
  // the one seen before the read, so a change during the read is seen at the next check.
  std::shared_ptr<const Names> parsed;
  try {
    parsed = parse_file(path_, seen);
  } catch (...) {
    std::lock_guard lock(tables.mutex);
    tables.entries[path_].loading = false;
    throw;
  }
  {
    std::lock_guard lock(tables.mutex);
    SharedTables::Entry& entry = tables.entries[path_];
    entry.loading = false;
    entry.fingerprint = seen;
    entry.names = parsed;
  }
  names_ = std::move(parsed);
  fingerprint_ = seen;
  loaded_ = true;
  ++generation_;
}

}  // namespace sandgate::dns
