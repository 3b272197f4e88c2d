// The hosts file (/etc/hosts format), read once and kept in memory, re-read only when its stat
// fingerprint (device, inode, size, modification and change times) differs, and stat()ed at most
// once per check interval. A name found here is answered without any other system call: no
// open/fstat/read per lookup as c-ares does, and no address-sorting socket.
//
// The parsed table is shared by every instance reading the same path in the process (each worker
// has its own resolver): a large file (blocklist-style hosts files run to megabytes, and up to
// 64 MiB is read) is parsed and held once, not once per worker, and when it changes only the
// first worker to notice parses it; the others keep answering from the table they hold until the
// new one is published (at their next check), instead of stalling their sessions on a parse.
//
// An instance is not thread-safe: one per resolver, used on its worker's thread only. The
// sharing between instances is synchronised inside.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sandgate::dns {

class HostsFile {
 public:
  using clock = std::chrono::steady_clock;

  // `path` empty: no hosts file (every lookup finds nothing). Nothing is read until lookup().
  explicit HostsFile(std::string path,
                     std::chrono::milliseconds check_interval = std::chrono::seconds(1));

  // The addresses `name` has in the file, in the file's order (each once), or an empty vector.
  // `name` is matched case-insensitively and without a trailing dot. Re-reads the file first if
  // the last check is older than the check interval and the fingerprint changed. `localhost`
  // and `*.localhost` (RFC 6761) answer 127.0.0.1 and ::1 when the file does not list them, so
  // they never reach a name server.
  std::vector<boost::asio::ip::address> lookup(std::string_view name, clock::time_point now);

  // How many times this instance took a new table (its own parse or one another instance
  // published), and how many names it holds; for tests and `check`.
  std::uint64_t generation() const { return generation_; }
  std::size_t size() const { return names_ ? names_->size() : 0; }
  const std::string& path() const { return path_; }

  // How many times any instance in the process parsed a hosts file; for tests.
  static std::uint64_t parses();

  using Names = std::unordered_map<std::string, std::vector<boost::asio::ip::address>>;

  struct Fingerprint {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::int64_t size = -1;  // -1: the file is missing or unreadable
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    bool operator==(const Fingerprint&) const = default;
  };

 private:
  void refresh(clock::time_point now);

  std::string path_;
  std::chrono::milliseconds check_interval_;
  clock::time_point next_check_{};
  Fingerprint fingerprint_{};
  bool loaded_ = false;
  std::uint64_t generation_ = 0;
  std::shared_ptr<const Names> names_;
};

// Parses hosts-file text into name -> addresses (file order, duplicates dropped). Lines that do
// not start with an IP address are skipped; names are lower-cased. Exposed for tests.
std::unordered_map<std::string, std::vector<boost::asio::ip::address>> parse_hosts(
    std::string_view text);

}  // namespace sandgate::dns
