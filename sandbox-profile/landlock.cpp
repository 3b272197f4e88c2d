// Landlock write protection. See landlock.hpp.
#include "sandbox-profile/landlock.hpp"

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

#include "sandbox-profile/protected_paths.hpp"

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
struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

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
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string join(const std::string& folder, const char* name) {
  return folder == "/" ? "/" + std::string(name) : folder + "/" + name;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

int landlock_abi() {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

Expected<LandlockReport, std::string> deny_writes(const std::vector<ProtectedPath>& paths) {
  LandlockReport report;
  report.abi = landlock_abi();
  if (report.abi == 0) {
    return Unexpected{std::string("Landlock is not available in this kernel")};
  }
  std::uint64_t handled = kWriteRights;
  if (report.abi >= 2) {
    handled |= LANDLOCK_ACCESS_FS_REFER;  // ABI 1 denies every cross-folder rename instead
  }
  if (report.abi >= 3) {
    handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
  }

  // The protected set: each path, and where it really is when a symbolic link leads there
  // (~/.bashrc -> dotfiles/bashrc must protect dotfiles/bashrc). Paths below another protected
  // path are redundant: nothing below a protected path is granted anyway.
  std::set<std::string> wanted;
  for (const auto& p : paths) {
    wanted.insert(p.path);
    std::error_code ec;
    auto real = std::filesystem::canonical(p.path, ec);
    if (!ec) {
      wanted.insert(real.string());
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
  report.paths = protect.size();
  std::set<std::string> on_the_way;  // folders that lead to a protected path
  for (const auto& path : protect) {
    on_the_way.insert("/");
    for (auto slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      on_the_way.insert(path.substr(0, slash));
    }
  }

  RulesetAttr attr{handled};
  Fd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (ruleset.get() < 0) {
    return Unexpected{errno_text("landlock_create_ruleset")};
  }
  // Grant every write right on each entry beside the way; nothing on the way itself.
  for (const auto& folder : on_the_way) {
    DIR* dir = ::opendir(folder.c_str());
    if (dir == nullptr) {
      continue;  // unreadable (or absent): nothing in it is granted, so nothing is writable
    }
    while (const dirent* entry = ::readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) {
        continue;
      }
      const std::string path = join(folder, entry->d_name);
      if (protect.count(path) != 0 || on_the_way.count(path) != 0) {
        continue;
      }
      Fd fd(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      struct stat info {};
      if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0 || S_ISLNK(info.st_mode)) {
        continue;  // a symbolic link is governed by where it leads
      }
      PathBeneathAttr rule{S_ISDIR(info.st_mode) ? handled : (handled & kFileRights), fd.get()};
      if (::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) !=
          0) {
        const std::string error = errno_text("landlock_add_rule " + path);
        ::closedir(dir);
        return Unexpected{error};
      }
      ++report.rules;
    }
    ::closedir(dir);
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Unexpected{errno_text("prctl(PR_SET_NO_NEW_PRIVS)")};
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return Unexpected{errno_text("landlock_restrict_self")};
  }
  return report;
}

}  // namespace sandgate::sandbox
