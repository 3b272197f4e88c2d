// Where an end-to-end test makes the folders that a command under `sandgate run` must see (its
// working folder, its home, the test's CA and lists): the build tree, unless the build tree lies
// in a folder that `run` makes private (/tmp, /var/tmp, /dev/shm, /run: an empty tmpfs inside,
// with only the working folder, the home and sandgate's own executables bound back), as it does
// when the checkout is under /tmp. Then a folder in the user's cache
// (${XDG_CACHE_HOME:-~/.cache}/sandgate-tests), which `run` leaves visible.
#pragma once

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

inline std::string visible_scratch_base() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string build = fs::weakly_canonical(SANDGATE_BINARY_DIR, ec).string();
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
