// The checks before a confined run starts. See start_checks.hpp.
#include "sandbox-profile/run/start_checks.hpp"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sandbox-profile/plan/protected_paths.hpp"
#include "sandbox-profile/plan/resolved_path.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {

namespace fs = std::filesystem;

Expected<bool, std::string> refuse_socket_streams() {
  constexpr const char* kNames[] = {"standard input", "standard output", "standard error"};
  for (int fd = 0; fd <= 2; ++fd) {
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) {
      continue;
    }
    int family = 0;
    int type = 0;
    socklen_t size = sizeof family;
    ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &size);
    size = sizeof type;
    ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size);
    sockaddr_storage peer{};
    socklen_t peer_size = sizeof peer;
    const bool connected = ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) == 0;
    if (family == AF_UNIX && (type != SOCK_DGRAM || connected)) {
      continue;
    }
    return Unexpected{std::string("refusing to confine a command whose ") + kNames[fd] +
                      " is a socket that can reach beyond the confinement (" +
                      (family == AF_UNIX ? "an unconnected unix datagram socket"
                                         : "a network socket of this machine") +
                      "): the command could send through it. Give it a pipe or a file instead "
                      "(for example `| cat`)"};
  }
  return true;
}

Expected<bool, std::string> refuse_home_as_working_folder(
    const std::string& working_folder, const std::string& home,
    const std::vector<std::string>& allow_writes) {
  if (working_folder.empty() || working_folder == "/") {
    return true;
  }
  std::vector<std::string> homes = {home};
  if (const passwd* account = ::getpwuid(::geteuid());
      account != nullptr && account->pw_dir != nullptr && account->pw_dir[0] == '/') {
    homes.push_back(resolved_path(account->pw_dir));
  }
  for (const auto& one : homes) {
    if (one.empty() || one == "/" || !is_within(one, working_folder)) {
      continue;
    }
    if (std::find(allow_writes.begin(), allow_writes.end(), working_folder) != allow_writes.end()) {
      say("warning: the working folder " + working_folder + " holds the home folder " + one +
          " and was given with --allow-write: the command may write everything in it that is not "
          "protected, including places that run code later (a Python .pth, editor and package "
          "manager configuration)");
      return true;
    }
    return Unexpected{"refusing to confine a command in " + working_folder +
                      ": it is the home folder " + (one == working_folder ? "" : "or above it ") +
                      "(" + one +
                      "), and the working folder is writable inside, so the command could plant "
                      "code for programs you run later (a Python .pth, .vimrc, .npmrc). Run it "
                      "from a project folder, or give --allow-write " +
                      working_folder + " to accept that"};
  }
  return true;
}

Expected<std::vector<std::string>, std::string> make_missing_write_folders(
    const std::vector<std::string>& paths, const std::string& home,
    const std::string& working_folder) {
  std::vector<std::string> made;
  const auto strictly_inside = [](const fs::path& path, const std::string& folder) {
    std::error_code ignored;
    for (const std::string& form : {folder, fs::weakly_canonical(folder, ignored).string()}) {
      if (!form.empty() && form != "/" && path.string().size() > form.size() &&
          within_any(path.string(), {form})) {
        return true;
      }
    }
    return false;
  };
  for (const auto& given : paths) {
    if (given.empty()) {
      continue;
    }
    std::error_code ec;
    const fs::path path = fs::absolute(given, ec).lexically_normal();
    const fs::file_status status = fs::symlink_status(path, ec);
    if (fs::is_symlink(status) && !fs::exists(fs::status(path, ec))) {
      return Unexpected{"--allow-write " + given + ": it is a symbolic link to " +
                        fs::read_symlink(path, ec).string() +
                        ", which does not exist; give a folder that does, or its real path"};
    }
    if (fs::exists(status)) {
      continue;
    }
    // Each folder on the way: a link inside the home or the working folder is not gone
    // through; a missing one is made, private (create_directories would use the umask).
    fs::path so_far;
    for (const auto& part : path) {
      so_far /= part;
      const fs::file_status on_way = fs::symlink_status(so_far, ec);
      if (fs::is_symlink(on_way)) {
        if (strictly_inside(so_far, home) || strictly_inside(so_far, working_folder)) {
          return Unexpected{"--allow-write " + given + ": it does not exist, and " +
                            so_far.string() + " on the way is a symbolic link to " +
                            fs::read_symlink(so_far, ec).string() +
                            "; nothing is made through it: give the real path if you mean it"};
        }
        continue;
      }
      if (fs::exists(on_way)) {
        continue;
      }
      if (::mkdir(so_far.c_str(), 0700) != 0 && errno != EEXIST) {
        return Unexpected{"--allow-write " + given + ": cannot make " + so_far.string() + ": " +
                          std::strerror(errno)};
      }
    }
    made.push_back(given);
  }
  return made;
}

}  // namespace sandgate::sandbox
