// Moving aside under a name drawn after the run. See move_aside.hpp.
#include "sandbox-profile/audit/move_aside.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstdint>

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

// Mode 0 on the entry itself (a link has no mode of its own to take away: fchmodat refuses).
bool lock(const std::string& path) {
  const auto slash = path.rfind('/');
  const UniqueFd folder =
      open_no_follow(slash == 0 ? "/" : path.substr(0, slash), O_PATH | O_DIRECTORY);
  return folder &&
         ::fchmodat(folder.get(), path.substr(slash + 1).c_str(), 0, AT_SYMLINK_NOFOLLOW) == 0;
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
    out.locked = lock(path);
  }
  return out;
}

}  // namespace sandgate::sandbox
