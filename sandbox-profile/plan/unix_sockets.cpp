// Unix sockets to hide. See unix_sockets.hpp.
#include "sandbox-profile/plan/unix_sockets.hpp"

#include <algorithm>
#include <array>

namespace sandgate::sandbox {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::vector<std::string> bound_unix_sockets(std::string_view text) {
  // "Num RefCount Protocol Flags Type St Inode Path": the path is what follows the seventh
  // field and may itself contain spaces. Every type and state counts: a datagram socket is
  // reached with sendto(), and is never listening.
  std::vector<std::string> out;
  bool header = true;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (header) {
      header = false;
      continue;
    }
    std::array<std::string_view, 7> fields{};
    std::size_t position = 0;
    bool complete = true;
    for (auto& field : fields) {
      while (position < line.size() && line[position] == ' ') {
        ++position;
      }
      const auto space = line.find(' ', position);
      if (space == std::string_view::npos) {
        complete = false;
        break;
      }
      field = line.substr(position, space - position);
      position = space + 1;
    }
    if (!complete || position >= line.size()) {
      continue;  // no path: an unnamed socket
    }
    const std::string_view path = line.substr(position);
    if (path.empty() || path.front() != '/') {
      continue;
    }
    out.emplace_back(path);
  }
  return out;
}

bool is_system_socket(std::string_view path, std::string_view ssh_auth_sock) {
  if (!ssh_auth_sock.empty() && path == ssh_auth_sock) {
    return true;
  }
  return false;
}

std::vector<std::string> private_socket_folders(const std::string& runtime_dir) {
  std::vector<std::string> out = {"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm"};
  if (!runtime_dir.empty() && runtime_dir.front() == '/') {
    bool inside = false;
    for (const auto& folder : out) {
      inside = inside || runtime_dir == folder ||
               (runtime_dir.size() > folder.size() && starts_with(runtime_dir, folder) &&
                runtime_dir[folder.size()] == '/');
    }
    if (!inside) {
      out.push_back(runtime_dir);
    }
  }
  return out;
}

std::vector<std::string> well_known_container_sockets(const std::string& home, unsigned uid) {
  const std::string user_run = "/run/user/" + std::to_string(uid);
  return {
      "/run/docker.sock",
      "/var/run/docker.sock",
      "/run/containerd/containerd.sock",
      "/run/podman/podman.sock",
      "/run/crio/crio.sock",
      "/run/buildkit/buildkitd.sock",
      user_run + "/docker.sock",
      user_run + "/podman/podman.sock",
      user_run + "/containerd/containerd.sock",
      user_run + "/buildkit/buildkitd.sock",
      home + "/.docker/run/docker.sock",
      home + "/.docker/desktop/docker.sock",
      home + "/.colima/default/docker.sock",
      home + "/.rd/docker.sock",
      home + "/.orbstack/run/docker.sock",
  };
}

std::vector<std::string> sockets_to_hide(const MaskInputs& inputs) {
  std::vector<std::string> out;
  for (const auto& path : inputs.sockets) {
    if (std::find(inputs.allowed.begin(), inputs.allowed.end(), path) != inputs.allowed.end()) {
      continue;
    }
    bool in_private = false;
    for (const auto& folder : inputs.private_folders) {
      in_private = in_private || (path.size() > folder.size() && starts_with(path, folder) &&
                                  path[folder.size()] == '/');
    }
    if (!in_private && !is_system_socket(path, inputs.ssh_auth_sock)) {
      out.push_back(path);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace sandgate::sandbox
