// Where runs' private admin sockets live. See run_sockets.hpp.
#include "proxy/commands/run_sockets.hpp"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

namespace sandgate::commands {
namespace {

// Makes `path` 0700 when missing, then checks it: a folder, not a link, this user's, closed to
// everyone else (a folder another user made first in /tmp must not be used).
std::optional<std::string> private_folder(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return "cannot make " + path + ": " + std::strerror(errno);
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    return "cannot read " + path + ": " + std::strerror(errno);
  }
  if (!S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) {
    return path + " is not a folder of this user's";
  }
  if ((info.st_mode & 077) != 0) {
    return path + " is open to other users (mode " + std::to_string(info.st_mode & 0777) + ")";
  }
  return std::nullopt;
}

// $XDG_RUNTIME_DIR when it is an absolute path; else nothing.
std::optional<std::string> runtime_folder() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') {
    return std::string(runtime);
  }
  return std::nullopt;
}

}  // namespace

std::string run_sockets_folder() {
  if (auto runtime = runtime_folder()) {
    return *runtime + "/sandgate/runs";
  }
  return "/tmp/sandgate-" + std::to_string(::geteuid()) + "/runs";
}

Expected<std::string, std::string> make_run_sockets_folder() {
  const std::string folder = run_sockets_folder();
  const std::string parent = std::filesystem::path(folder).parent_path().string();
  for (const std::string& level : {parent, folder}) {
    if (auto error = private_folder(level)) {
      return Unexpected{*error};
    }
  }
  return folder;
}

std::string run_socket_path(const std::string& folder, pid_t pid) {
  std::string path = folder + "/" + std::to_string(pid) + ".sock";
  return path.size() < sizeof(sockaddr_un::sun_path) ? path : std::string();
}

std::vector<RunSocket> list_run_sockets() {
  std::vector<RunSocket> runs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(run_sockets_folder(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".sock") || !entry.is_socket(ec)) {
      continue;
    }
    const std::string digits = name.substr(0, name.size() - 5);
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (::kill(pid, 0) == 0 || errno == EPERM) {
      runs.push_back({pid, entry.path().string()});
    }
  }
  std::sort(runs.begin(), runs.end(),
            [](const RunSocket& a, const RunSocket& b) { return a.pid < b.pid; });
  return runs;
}

}  // namespace sandgate::commands
