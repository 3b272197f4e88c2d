// File access that never follows a link. See no_follow.hpp.
#include "sandbox-profile/audit/no_follow.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace sandgate::sandbox {

// "/" first, then each component with O_NOFOLLOW, folders as O_PATH descriptors, the last one
// with the caller's flags.
UniqueFd open_no_follow_walking(const std::string& path, int flags, mode_t mode) {
  UniqueFd at(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::size_t start = 1;
  while (at) {
    std::size_t end = path.find('/', start);
    const bool last = end == std::string::npos;
    const std::string part = path.substr(start, last ? std::string::npos : end - start);
    if (part == "..") {
      errno = EXDEV;  // never above a folder reached: the callers' paths are normal
      return {};
    }
    if (part.empty() || part == ".") {
      if (last) {
        return UniqueFd(::openat(at.get(), ".", flags | O_CLOEXEC, mode));
      }
      start = end + 1;
      continue;
    }
    if (last) {
      return UniqueFd(::openat(at.get(), part.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
    }
    UniqueFd next(::openat(at.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat info {};
    if (!next && errno == ENOTDIR &&
        ::fstatat(at.get(), part.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(info.st_mode)) {
      errno = ELOOP;  // a link on the way, as openat2 says it
    }
    at = std::move(next);
    start = end + 1;
  }
  return {};
}

namespace {

// The folder holding `path`, reached without links, and the last component's name.
struct Parent {
  UniqueFd folder;
  std::string name;
};

std::optional<Parent> parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == std::string::npos ||
      slash + 1 == path.size()) {
    errno = EINVAL;
    return std::nullopt;
  }
  UniqueFd folder = open_no_follow(slash == 0 ? "/" : path.substr(0, slash), O_PATH | O_DIRECTORY);
  if (!folder) {
    return std::nullopt;
  }
  return Parent{std::move(folder), path.substr(slash + 1)};
}

}  // namespace

UniqueFd open_no_follow(const std::string& path, int flags, mode_t mode) {
  if (path.empty() || path.front() != '/') {
    errno = EINVAL;
    return {};
  }
  open_how how{};
  how.flags = static_cast<unsigned long long>(flags | O_NOFOLLOW | O_CLOEXEC);
  how.mode = (flags & O_CREAT) != 0 ? mode : 0;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how);
  if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) {
    return UniqueFd(static_cast<int>(fd));  // EPERM: a seccomp filter that refuses openat2
  }
  return open_no_follow_walking(path, flags, mode);
}

std::optional<struct stat> stat_no_follow(const std::string& path) {
  if (path == "/") {
    struct stat info {};
    return ::lstat("/", &info) == 0 ? std::optional(info) : std::nullopt;
  }
  const auto parent = parent_of(path);
  struct stat info {};
  if (!parent || ::fstatat(parent->folder.get(), parent->name.c_str(), &info,
                           AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0) {
    return std::nullopt;
  }
  return info;
}

std::optional<std::string> link_target(const std::string& path) {
  const auto parent = parent_of(path);
  if (!parent) {
    return std::nullopt;
  }
  char buffer[4096];
  const ssize_t length =
      ::readlinkat(parent->folder.get(), parent->name.c_str(), buffer, sizeof buffer);
  if (length < 0) {
    return std::nullopt;
  }
  return std::string(buffer, static_cast<std::size_t>(length));
}

std::string read_no_follow(const std::string& path, std::size_t limit) {
  const UniqueFd fd = open_no_follow(path, O_RDONLY | O_NONBLOCK);
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return "?";
  }
  std::string text;
  char buffer[65536];
  ssize_t got = 0;
  while (text.size() <= limit && (got = ::read(fd.get(), buffer, sizeof buffer)) > 0) {
    text.append(buffer, static_cast<std::size_t>(got));
  }
  text.resize(std::min(text.size(), limit + 1));
  return text;
}

int rename_no_follow(const std::string& from, const std::string& to) {
  const auto source = parent_of(from);
  const auto target = parent_of(to);
  if (!source || !target) {
    return -1;
  }
  // RENAME_NOREPLACE: a name the command makes meanwhile is never overwritten.
  return ::renameat2(source->folder.get(), source->name.c_str(), target->folder.get(),
                     target->name.c_str(), RENAME_NOREPLACE);
}

bool create_no_follow(const std::string& path, const std::string& content) {
  const UniqueFd fd = open_no_follow(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  return fd &&
         ::write(fd.get(), content.data(), content.size()) == static_cast<ssize_t>(content.size());
}

}  // namespace sandgate::sandbox
