// Moving aside under a name drawn after the run. See move_aside.hpp.
#include "sandbox-profile/audit/move_aside.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <string>

#include "sandbox-profile/audit/no_follow.hpp"

namespace sandgate::sandbox {
namespace {

constexpr int kDraws = 16;  // names drawn before giving up (one exists by chance: 2^-64)

// 16 hex digits from the kernel's random source; "" if it cannot give them.
std::string random_suffix() {
  std::array<std::uint8_t, 8> bytes{};
  if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    return {};
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const auto byte : bytes) {
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

// A file another name shares: mode 0 on it would reach that name too (directories have no
// hard links; their link count is their subfolders').
bool shares_inode(const struct stat& info) { return !S_ISDIR(info.st_mode) && info.st_nlink > 1; }

// fchmodat2(2) (Linux 6.6), which takes AT_EMPTY_PATH: a mode set on the descriptor's inode.
// Not yet in every libc's headers; 452 in the system-call table the architectures share.
constexpr long kFchmodat2 = 452;

// Sets `mode` on the inode `entry` (an O_PATH descriptor) holds, never on what a name leads to
// now: fchmodat2 with AT_EMPTY_PATH, else (older kernels, or a seccomp filter that refuses it)
// chmod through /proc's link for the descriptor, which leads to that inode only.
bool chmod_held(int entry, mode_t mode) {
  if (::syscall(kFchmodat2, entry, "", mode, AT_EMPTY_PATH) == 0) {
    return true;
  }
  return ::chmod(("/proc/self/fd/" + std::to_string(entry)).c_str(), mode) == 0;
}

// Mode 0 on the entry itself, opened without following it and looked at before it is changed:
// a symbolic link has no mode of its own to take away, and a file with other names is left as
// it is (`out.names` says how many it has).
Fallback lock(const std::string& path, MovedAside& out) {
  const auto slash = path.rfind('/');
  const UniqueFd folder =
      open_no_follow(slash == 0 ? "/" : path.substr(0, slash), O_PATH | O_DIRECTORY);
  const UniqueFd entry(folder ? ::openat(folder.get(), path.substr(slash + 1).c_str(),
                                         O_PATH | O_NOFOLLOW | O_CLOEXEC)
                              : -1);
  struct stat held {};
  if (!entry || ::fstat(entry.get(), &held) != 0 || S_ISLNK(held.st_mode)) {
    return Fallback::failed;
  }
  if (shares_inode(held)) {
    out.names = held.st_nlink;
    return Fallback::hard_link;
  }
  if (!chmod_held(entry.get(), 0)) {
    return Fallback::failed;
  }
  // A name made for the file between the look and the change (nothing of the command runs by
  // now, so this is a belt to the braces above): its mode is given back.
  struct stat now {};
  if (::fstat(entry.get(), &now) == 0 && shares_inode(now)) {
    chmod_held(entry.get(), held.st_mode & 07777);
    out.names = now.st_nlink;
    return Fallback::hard_link;
  }
  return Fallback::locked;
}

}  // namespace

MovedAside move_aside(const std::string& path) {
  MovedAside out;
  for (int draw = 0; draw < kDraws; ++draw) {
    const std::string suffix = random_suffix();
    if (suffix.empty()) {
      out.error = errno;
      break;
    }
    const std::string target = path + ".sandgate-quarantine-" + suffix;
    if (rename_no_follow(path, target) == 0) {
      out.target = target;
      return out;
    }
    out.error = errno;
    if (errno != EEXIST) {
      break;
    }
  }
  if (out.error != ENOENT) {
    out.fallback = lock(path, out);
  }
  return out;
}

}  // namespace sandgate::sandbox
