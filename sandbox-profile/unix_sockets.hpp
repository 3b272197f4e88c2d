// Which unix sockets a confined command on Linux must not reach. The network namespace of
// `sandgate run` cuts off every TCP/UDP route and every abstract unix socket, but sockets bound to
// a path stay reachable through the file system. Some of them are ways out: a container daemon
// (docker, podman, containerd, ... : `docker run --network host`) or, in strict mode, any socket
// that is not the system's own. `run` hides each one by mounting /dev/null over it in its own
// mount namespace, so connecting is refused.
//
// Pure functions on values (the caller reads /proc/net/unix and the file system); thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandgate::sandbox {

// The paths of the listening path-bound sockets in the text of /proc/net/unix (a header line,
// then one socket a line; abstract sockets, shown with a leading '@', are left out).
std::vector<std::string> listening_unix_sockets(std::string_view proc_net_unix);

// True for the socket of a container or VM daemon: a file named docker*.sock, podman*.sock,
// containerd*.sock, crio*.sock, cri-dockerd*.sock or buildkitd*.sock, or any socket in a folder
// named docker, podman, containerd, crio, buildkit, .docker, .colima, .lima, .rd or .orbstack.
bool is_container_socket(std::string_view path);

// True for the system's own sockets that strict mode keeps: logging (/dev/log, journald),
// name resolution (systemd-resolved, nscd) and the SSH agent (`ssh_auth_sock`, may be empty).
bool is_system_socket(std::string_view path, std::string_view ssh_auth_sock);

// Well-known container daemon socket paths (system and per-user) worth checking even when
// /proc/net/unix does not list them (rootless daemons bind in a namespace of their own).
std::vector<std::string> well_known_container_sockets(const std::string& home, unsigned uid);

struct MaskInputs {
  std::vector<std::string> sockets;  // candidates: listening ones and existing well-known ones
  std::vector<std::string> allowed;  // --allow-unix-socket, resolved: never hidden
  std::string ssh_auth_sock;
  bool strict = false;  // hide everything but the system's own and `allowed`
};

// The sockets to hide, sorted, without duplicates.
std::vector<std::string> sockets_to_hide(const MaskInputs& inputs);

}  // namespace sandgate::sandbox
