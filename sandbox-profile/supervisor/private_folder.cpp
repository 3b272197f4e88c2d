// The run's private folder. See private_folder.hpp.
#include "sandbox-profile/supervisor/private_folder.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "sandbox-profile/plan/resolved_path.hpp"

namespace sandgate::sandbox {

Expected<PrivateFolder, std::string> PrivateFolder::make(const std::string& parent) {
  std::string base = parent.empty() ? std::string("/tmp") : parent;
  while (base.size() > 1 && base.back() == '/') {
    base.pop_back();
  }
  std::string pattern = base + "/sandgate-run.XXXXXX";
  // mkdtemp makes the folder with mode 0700, under a name nobody else chose.
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Unexpected{"cannot make the run's private folder in " + base + ": " +
                      std::strerror(errno)};
  }
  return PrivateFolder(resolved_path(pattern));
}

PrivateFolder& PrivateFolder::operator=(PrivateFolder&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

void PrivateFolder::remove() noexcept {
  if (path_.empty()) {
    return;
  }
  // remove_all removes links themselves, never what they point to.
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace sandgate::sandbox
