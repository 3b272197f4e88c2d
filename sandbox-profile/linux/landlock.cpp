// Landlock write protection. See landlock.hpp.
#include "sandbox-profile/linux/landlock.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "sandbox-profile/plan/protected_paths.hpp"
#include "sandbox-profile/process/run_support.hpp"

// Debian 12's kernel headers stop at ABI 2; the running kernel may be newer.
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace sandgate::sandbox {
namespace {

// Our own copies of the kernel's structures: the kernel accepts the sizes of older ABIs.
struct RulesetAttr {
  std::uint64_t handled_access_fs;
};
struct RulesetAttrScoped {  // ABI 6: handled_access_net (unused here) and scoped
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};
struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0;  // LANDLOCK_SCOPE_*, ABI 6
constexpr std::uint64_t kScopeSignal = 1ULL << 1;

constexpr std::uint64_t kWriteRights =
    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
    LANDLOCK_ACCESS_FS_MAKE_SYM;
// The rights that make sense on a file that is not a folder.
constexpr std::uint64_t kFileRights = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string join(const std::string& folder, const char* name) {
  return folder == "/" ? "/" + std::string(name) : folder + "/" + name;
}

}  // namespace

std::vector<std::string> links_on_the_way(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> links;
  // Components still to walk, and the resolved folder walked so far.
  std::vector<std::string> pending;
  const auto push_front = [&pending](const std::string& text) {
    std::vector<std::string> parts;
    std::size_t at = 0;
    while (at <= text.size()) {
      const auto slash = text.find('/', at);
      const auto end = slash == std::string::npos ? text.size() : slash;
      if (end > at) {
        parts.push_back(text.substr(at, end - at));
      }
      at = end + 1;
    }
    pending.insert(pending.begin(), parts.begin(), parts.end());
  };
  push_front(path);
  std::string current = "/";
  int hops = 0;
  while (!pending.empty()) {
    const std::string part = pending.front();
    pending.erase(pending.begin());
    if (part == ".") {
      continue;
    }
    if (part == "..") {
      current = fs::path(current).parent_path().string();
      continue;
    }
    const std::string next = join(current, part.c_str());
    struct stat info {};
    if (::lstat(next.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) {
      current = next;  // a missing entry ends nothing: the rest is walked lexically
      continue;
    }
    if (++hops > 40) {
      break;
    }
    links.push_back(next);
    std::error_code ec;
    const std::string target = fs::read_symlink(next, ec).string();
    if (ec) {
      break;
    }
    if (!target.empty() && target.front() == '/') {
      current = "/";
    }
    push_front(target);
  }
  return links;
}

int landlock_abi() {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

namespace {

// The paths Landlock carves out of `policy.carved`: each path, where it really is when a
// symbolic link leads there (~/.bashrc -> dotfiles/bashrc must protect dotfiles/bashrc), and
// each link met on the way (so that none can be re-pointed). Paths below another carved path are
// redundant: nothing below a carved path is granted anyway. The error: / itself was asked for.
Expected<std::set<std::string>, std::string> carved_paths(const WritePolicy& policy) {
  std::set<std::string> wanted;
  for (const auto& path : policy.carved) {
    wanted.insert(path);
    std::error_code ec;
    auto real = std::filesystem::canonical(path, ec);
    if (!ec) {
      wanted.insert(real.string());
    }
    for (auto& link : links_on_the_way(path)) {
      wanted.insert(std::move(link));
    }
  }
  std::set<std::string> protect;
  for (const auto& path : wanted) {
    if (path == "/") {
      return Unexpected{std::string("refusing to protect / itself")};
    }
    bool covered = false;
    for (const auto& other : wanted) {
      covered = covered || (other != path && is_within(path, other));
    }
    if (!covered) {
      protect.insert(path);
    }
  }
  return protect;
}

// A Landlock ruleset being filled: what it handles, and the grants made in it (counted in the
// report).
class Ruleset {
 public:
  // Creates the ruleset for the kernel's ABI (report.abi): every write right it knows, and on
  // ABI 6 the abstract unix socket and signal scopes too.
  static Expected<Ruleset, std::string> create(LandlockReport& report) {
    std::uint64_t handled = kWriteRights;
    if (report.abi >= 2) {
      handled |= LANDLOCK_ACCESS_FS_REFER;  // ABI 1 denies every cross-folder rename instead
    }
    if (report.abi >= 3) {
      handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
    }
    int fd = -1;
    if (report.abi >= 6) {
      RulesetAttrScoped attr{handled, 0, kScopeAbstractUnixSocket | kScopeSignal};
      fd = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
      report.scoped = true;
    } else {
      RulesetAttr attr{handled};
      fd = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
    }
    if (fd < 0) {
      return Unexpected{errno_text("landlock_create_ruleset")};
    }
    return Ruleset(fd, handled, report);
  }

  // The rights granted on writable roots: binding a unix socket is granted apart.
  std::uint64_t root_rights() const {
    return handled_ & ~static_cast<std::uint64_t>(LANDLOCK_ACCESS_FS_MAKE_SOCK);
  }

  // One grant: `rights` on the file or folder at `path` (symbolic links are skipped: they are
  // governed by where they lead; with `devices_only`, so is what is not a device or a folder).
  // Missing paths grant nothing.
  Expected<bool, std::string> grant(const std::string& path, std::uint64_t rights,
                                    bool devices_only) {
    Fd fd(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0 || S_ISLNK(info.st_mode)) {
      return false;
    }
    const bool folder = S_ISDIR(info.st_mode);
    if (devices_only && !folder && !S_ISCHR(info.st_mode) && !S_ISBLK(info.st_mode)) {
      return false;
    }
    PathBeneathAttr rule{folder ? rights : (rights & kFileRights), fd.get()};
    if (rule.allowed_access == 0) {
      return false;
    }
    if (::syscall(SYS_landlock_add_rule, fd_.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
      return Unexpected{errno_text("landlock_add_rule " + path)};
    }
    ++report_.rules;
    return true;
  }

  // `rights` on and beneath the root `given`: on the root itself, or, when `excluded` paths lie
  // below it, on every entry beside the way to them and nothing on the way itself. A root that
  // does not exist, or lies in an excluded path, grants nothing.
  Expected<bool, std::string> grant_root(const std::string& given, std::uint64_t rights,
                                         const std::set<std::string>& excluded) {
    std::error_code ec;
    const auto real = std::filesystem::canonical(given, ec);
    if (ec) {
      return false;
    }
    const std::string root = real.string();
    bool inside_excluded = false;
    std::vector<std::string> below;  // excluded paths strictly below the root
    for (const auto& path : excluded) {
      inside_excluded = inside_excluded || is_within(root, path);
      if (path != root && is_within(path, root)) {
        below.push_back(path);
      }
    }
    if (inside_excluded) {
      return false;
    }
    if (below.empty()) {
      return grant(root, rights, false);
    }
    std::set<std::string> on_the_way;  // folders from the root down that lead to an excluded path
    for (const auto& path : below) {
      on_the_way.insert(root);
      for (auto slash = path.find('/', root.size() + 1); slash != std::string::npos;
           slash = path.find('/', slash + 1)) {
        on_the_way.insert(path.substr(0, slash));
      }
    }
    for (const auto& folder : on_the_way) {
      if (auto granted = grant_beside(folder, rights, excluded, on_the_way); !granted) {
        return granted;
      }
    }
    return true;
  }

  // Confines this thread (and what it starts) to the ruleset, with no new privileges.
  Expected<bool, std::string> restrict_self() {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      return Unexpected{errno_text("prctl(PR_SET_NO_NEW_PRIVS)")};
    }
    if (::syscall(SYS_landlock_restrict_self, fd_.get(), 0) != 0) {
      return Unexpected{errno_text("landlock_restrict_self")};
    }
    return true;
  }

 private:
  Ruleset(int fd, std::uint64_t handled, LandlockReport& report)
      : fd_(fd), handled_(handled), report_(report) {}

  // `rights` on each entry of `folder` but the excluded ones and those on the way to them. An
  // unreadable (or absent) folder grants nothing, so nothing in it is writable.
  Expected<bool, std::string> grant_beside(const std::string& folder, std::uint64_t rights,
                                           const std::set<std::string>& excluded,
                                           const std::set<std::string>& on_the_way) {
    DIR* dir = ::opendir(folder.c_str());
    if (dir == nullptr) {
      return true;
    }
    while (const dirent* entry = ::readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) {
        continue;
      }
      const std::string path = join(folder, entry->d_name);
      if (excluded.count(path) != 0 || on_the_way.count(path) != 0) {
        continue;
      }
      if (auto added = grant(path, rights, false); !added) {
        ::closedir(dir);
        return Unexpected{added.error()};
      }
    }
    ::closedir(dir);
    return true;
  }

  Fd fd_;
  std::uint64_t handled_;
  LandlockReport& report_;
};

// The grants of `policy` in `ruleset`, less the carved paths `protect`: the writable roots;
// binding unix sockets beneath the socket roots only, never in a carved path (a socket in place
// of a missing protected file) nor in a host folder bound back inside one; opening the devices
// for writing (/dev/null, /dev/tty, the terminal's pty, ...).
Expected<bool, std::string> grant_policy(Ruleset& ruleset, const WritePolicy& policy,
                                         const std::set<std::string>& protect) {
  for (const auto& given : policy.writable) {
    if (auto added = ruleset.grant_root(given, ruleset.root_rights(), protect); !added) {
      return added;
    }
  }
  std::set<std::string> no_sockets = protect;
  for (const auto& path : policy.not_sockets) {
    std::error_code ec;
    const auto real = std::filesystem::canonical(path, ec);
    no_sockets.insert(ec ? path : real.string());
  }
  for (const auto& given : policy.sockets) {
    if (auto added = ruleset.grant_root(given, LANDLOCK_ACCESS_FS_MAKE_SOCK, no_sockets); !added) {
      return added;
    }
  }
  for (const auto& device : policy.devices) {
    bool carved = false;
    for (const auto& path : protect) {
      carved = carved || is_within(device, path);
    }
    if (carved) {
      continue;
    }
    if (auto added = ruleset.grant(device, LANDLOCK_ACCESS_FS_WRITE_FILE, true); !added) {
      return added;
    }
  }
  return true;
}

}  // namespace

Expected<LandlockReport, std::string> restrict_writes(const WritePolicy& policy) {
  LandlockReport report;
  report.abi = landlock_abi();
  if (report.abi == 0) {
    return Unexpected{std::string("Landlock is not available in this kernel")};
  }
  auto protect = carved_paths(policy);
  if (!protect) {
    return Unexpected{protect.error()};
  }
  report.paths = protect->size();
  auto ruleset = Ruleset::create(report);
  if (!ruleset) {
    return Unexpected{ruleset.error()};
  }
  if (auto granted = grant_policy(*ruleset, policy, *protect); !granted) {
    return Unexpected{granted.error()};
  }
  if (auto restricted = ruleset->restrict_self(); !restricted) {
    return Unexpected{restricted.error()};
  }
  return report;
}

}  // namespace sandgate::sandbox
