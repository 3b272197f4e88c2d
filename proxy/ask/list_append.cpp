// Atomic append to a list file. See list_append.hpp.
#include "proxy/ask/list_append.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace sandgate::ask {
namespace {

constexpr std::size_t kMaxListFile = 64u << 20;

std::string errno_text() { return std::strerror(errno); }

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Who answered and how, as one comment-safe line: printable ASCII, at most 160 characters.
std::string clean_who(std::string_view who) {
  std::string out;
  for (char c : who.substr(0, 160)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out.empty() ? std::string("someone") : out;
}

}  // namespace

std::string list_entry(std::string_view host, std::uint16_t port) {
  return std::string(host) + ":" + std::to_string(port);
}

std::optional<std::string> append_entry(const std::string& given_path, std::string_view entry,
                                        std::string_view who) {
  if (given_path.empty()) {
    return std::string("no list file is configured");
  }
  // One read-modify-rename at a time: two at once would each keep only their own entry.
  static std::mutex appending;
  std::lock_guard lock(appending);
  // 0. The file itself, not a link to it: renaming over a link would replace the link with a
  // copy, and the file it named would never see the entry.
  char resolved[PATH_MAX];
  if (::realpath(given_path.c_str(), resolved) == nullptr) {
    return "cannot read " + given_path + ": " + errno_text();
  }
  const std::string path = resolved;
  // 1. The file as it is now (it must exist: the gate loaded it).
  Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY)};
  if (in.fd < 0) {
    return "cannot read " + path + ": " + errno_text();
  }
  struct stat st {};
  if (::fstat(in.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return path + " is not a regular file";
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxListFile) {
    return path + " is larger than 64 MiB";
  }
  std::string text;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(in.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return "cannot read " + path + ": " + errno_text();
    }
    if (n == 0) {
      break;
    }
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > kMaxListFile) {
      return path + " is larger than 64 MiB";
    }
  }

  // 2. The new text: the old, byte for byte, then the comment and the entry.
  char date[32];
  const std::time_t now = std::time(nullptr);
  struct tm utc {};
  ::gmtime_r(&now, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &utc);
  if (!text.empty() && text.back() != '\n') {
    text += '\n';
  }
  text += "# added " + std::string(date) + " by " + clean_who(who) + "\n";
  text += std::string(entry) + "\n";

  // 3. A temporary file next to it, with its mode; flushed, renamed over it, folder flushed.
  const auto slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string temp = path + ".sandgate-XXXXXX";
  Fd out{::mkostemp(temp.data(), O_CLOEXEC)};
  if (out.fd < 0) {
    return "cannot write next to " + path + ": " + errno_text();
  }
  auto fail = [&temp](std::string message) {
    ::unlink(temp.c_str());
    return message;
  };
  // The owner first (fchown may clear set-id bits), then the mode. A gate run as root must not
  // hand a user's list file to root, which the user could then no longer edit.
  if ((st.st_uid != ::geteuid() || st.st_gid != ::getegid()) &&
      ::fchown(out.fd, st.st_uid, st.st_gid) != 0) {
    return fail("cannot keep the owner of " + path + " (" + errno_text() +
                "); the entry was not written");
  }
  if (::fchmod(out.fd, st.st_mode & 07777) != 0 || !write_all(out.fd, text) ||
      ::fsync(out.fd) != 0) {
    return fail("cannot write " + temp + ": " + errno_text());
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return fail("cannot replace " + path + ": " + errno_text());
  }
  Fd dir{::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd >= 0) {
    ::fsync(dir.fd);  // the rename itself on disk; a failure here loses nothing already read
  }
  return std::nullopt;
}

}  // namespace sandgate::ask
