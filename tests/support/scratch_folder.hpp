// Where an end-to-end test makes the folders that a command under `sandgate run` must see (its
// working folder, its home, the test's CA and lists): the build tree, unless the build tree lies
// in a folder that `run` makes private (/tmp, /var/tmp, /dev/shm, /run: an empty tmpfs inside,
// with only the working folder, the home and sandgate's own executables bound back), as it does
// when the checkout is under /tmp. Then a folder in the user's cache
// (${XDG_CACHE_HOME:-~/.cache}/sandgate-tests), which `run` leaves visible. Run as root, a test
// also runs `run` as nobody (RunTest.RunsAsAnUnprivilegedUser), who must be able to reach the
// folder: when a folder on the way is closed to others (a checkout in /root, mode 0700), the
// base is /var/cache/sandgate-tests instead.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sandgate::testing {

inline bool in_a_private_folder(const std::string& path) {
  for (const std::string root : {"/tmp", "/var/tmp", "/dev/shm", "/run"}) {
    if (path == root || path.starts_with(root + "/")) {
      return true;
    }
  }
  return false;
}

// Whether every folder from / to `path` lets others through (o+x).
inline bool open_to_others(const std::filesystem::path& path) {
  for (std::filesystem::path at = path; !at.empty(); at = at.parent_path()) {
    struct stat info {};
    if (::stat(at.c_str(), &info) != 0 || (info.st_mode & S_IXOTH) == 0) {
      return false;
    }
    if (at == at.root_path()) {
      break;
    }
  }
  return true;
}

inline std::string visible_scratch_base() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string build = fs::weakly_canonical(SANDGATE_BINARY_DIR, ec).string();
  if (::geteuid() == 0 && (in_a_private_folder(build) || !open_to_others(build))) {
    const std::string folder = "/var/cache/sandgate-tests";
    fs::create_directories(folder, ec);
    ::chmod(folder.c_str(), 0755);
    return folder;
  }
  if (!in_a_private_folder(build)) {
    return build;
  }
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = (cache != nullptr && cache[0] == '/') ? std::string(cache)
                           : (home != nullptr && home[0] == '/') ? std::string(home) + "/.cache"
                                                                 : std::string("/var/cache");
  const std::string folder = base + "/sandgate-tests";
  fs::create_directories(folder, ec);
  return folder;
}

}  // namespace sandgate::testing
